/**
 * Ending what is left of a launch that already failed. Its launcher is dead or dying, so
 * there is no grace period: SIGKILL to the whole process group, then confirm that nothing of
 * it still runs, in ONE round trip where the host has a POSIX shell (every exec costs a shell
 * start on the host, which is most of a failed launch's latency).
 *
 * Zombies do not count as running: they hold no memory, GPU or port, and an init that reaps
 * orphans slowly (some containers and VMs) keeps them for seconds, which `kill -0` cannot tell
 * from live processes. Hosts without `sh` (fake hosts) get `kill`, then `kill -0` polls.
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as RemoteProcess from "@mlops/core/RemoteProcess"
import { Duration, Effect, Schedule } from "effect"

const POLL_MS = 50

/**
 * `$1` pgid, `$2` how many 50 ms polls to allow. Exit 0: nothing of the group runs (at once
 * when the group is already empty); 3: some member still runs. A member is a process whose pgid is `$1` and whose state is not Z; without
 * a usable `ps`, any member (zombies included) counts.
 */
const KILL_AND_CONFIRM = `kill -s KILL -- -"$1" 2>/dev/null || exit 0
i=0
while :; do
  if t=$(ps -A -o pgid= -o stat= 2>/dev/null); then
    printf '%s\\n' "$t" | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { n++ } END { exit n == 0 }' || exit 0
  else
    kill -s 0 -- -"$1" 2>/dev/null || exit 0
  fi
  i=$((i + 1))
  [ "$i" -lt "$2" ] || exit 3
  sleep 0.05
done`

/** How `killGroup` left the group. */
export type Outcome = "gone" | "still-running"

/**
 * SIGKILL the group of a failed launch and wait up to `within` (default 5 s) until none of it
 * runs. Fails only with the connection's errors.
 */
export const killGroup = Effect.fn("Launch.killGroup")(function* (
  conn: Connection,
  proc: RemoteProcess.DetachedProcess,
  options: { readonly within?: Duration.DurationInput } = {}
) {
  const within = Duration.decode(options.within ?? "5 seconds")
  const polls = Math.max(1, Math.ceil(Duration.toMillis(within) / POLL_MS))
  const pgid = String(proc.pgid)
  const result = yield* conn.exec(
    RemoteCommand.make(["sh", "-c", KILL_AND_CONFIRM, "mlops-kill", pgid, String(polls)]),
    {
      timeout: Duration.sum(within, Duration.seconds(10))
    }
  )
  if (result.exitCode === 0) return "gone" satisfies Outcome
  if (result.exitCode !== 127) return "still-running" satisfies Outcome
  // no shell: the same steps one exec each
  yield* conn.exec(RemoteCommand.make(["kill", "-s", "KILL", "--", `-${pgid}`]), { timeout: "10 seconds" })
  return yield* RemoteProcess.isAlive(conn, proc).pipe(
    Effect.repeat({ schedule: Schedule.spaced(Duration.millis(POLL_MS)), until: (alive) => !alive }),
    Effect.as<Outcome>("gone"),
    Effect.timeoutTo({ duration: within, onSuccess: (o) => o, onTimeout: (): Outcome => "still-running" })
  )
})
