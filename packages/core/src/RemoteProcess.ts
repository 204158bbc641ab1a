/**
 * Long-lived remote processes that outlive the connection (an inference server): start
 * detached, check, wait, stop by process group, and find again from the run directory on
 * any machine (`attach`). The run directory holds `pid` (the program's own pid), `pgid` (its
 * supervisor's group), `start` (the group leader's start time), `token` (which spawn made
 * it), `exit` (`code N` or `signal NAME`), `log` (this run's output; the previous run's is
 * `log.1`) and, after `stop`, `stopped` (how it ended).
 *
 * A start is atomic per run directory (`SpawnLocked`, `AlreadyRunning`) and never left
 * untracked: a start whose answer is lost is settled by reading the run directory. Signals go
 * to a group only while it is still ours: its leader's start time is the recorded one (a
 * reused pgid belongs to someone else). `watch` follows a process across dropped connections.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Schedule, type Stream } from "effect"
import type { Connection, DetachedInfo, DetachedOptions, ExitStatus } from "./Connection.js"
import type { ConnectionPool, GetError } from "./ConnectionPool.js"
import {
  type CommandError,
  type ConnectError,
  ProcessError,
  type RemoteFileError,
  type SpawnError
} from "./Errors.js"
import * as Liveness from "./internal/groupLiveness.js"
import * as Spawn from "./internal/processSpawn.js"
import * as Watch from "./internal/processWatch.js"
import { parseStartTime, parseState } from "./internal/procStat.js"
import * as RemoteCommand from "./RemoteCommand.js"
import * as RemoteFiles from "./RemoteFiles.js"

/** @category models */
export interface DetachedProcess extends DetachedInfo {
  /** The host alias it runs on. */
  readonly host: string
}

/** What identifies a process group as ours: its id and, when recorded, its leader's start time. @category models */
export interface GroupRef {
  readonly pgid: number
  readonly startTime?: string
}

/** How `stop` ended the process. @category models */
export type StopOutcome = "exited-before" | "terminated" | "killed"

/** @category models */
export type ProcessStepError = CommandError | ProcessError | RemoteFileError | ConnectError

const SIGNAL_TIMEOUT = "10 seconds"

/**
 * Start `command` detached on `conn` (see `Connection.spawnDetached`). A timeout is settled on
 * the same connection from the run directory: the process that did start is returned, and
 * when none did the CommandTimeout stands (nothing runs; trying again is safe). A dropped
 * connection cannot be settled here: use `spawn`, which re-acquires one from the pool.
 *
 * @category constructors
 */
export const spawnDetached: (
  conn: Connection,
  command: RemoteCommand.RemoteCommand,
  options: DetachedOptions
) => Effect.Effect<DetachedProcess, SpawnError | RemoteFileError> = Spawn.spawnDetached

/**
 * Start `command` detached on host `alias` through the pool, surviving a dropped connection:
 * after a drop (or a timeout) the connection is re-acquired (`reconnect`, default
 * `ConnectionPool.defaultReconnect`) and the start settled from the run directory; a start
 * that did not happen is made again. So the result is the one process that runs, or a typed
 * error, never an untracked server.
 *
 * @category constructors
 */
export const spawn: (
  alias: string,
  command: RemoteCommand.RemoteCommand,
  options: DetachedOptions & { readonly reconnect?: Schedule.Schedule<unknown, unknown> }
) => Effect.Effect<DetachedProcess, SpawnError | RemoteFileError | GetError, ConnectionPool> = Spawn.spawn

// `kill -s SIG -- -PGID` is the one spelling that dash's builtin, bash's builtin and procps
// kill all accept (dash rejects `kill -0 -- -PGID`; procps needs the `--`).
const sendSignal = (conn: Connection, pgid: number, signal: string) =>
  conn.exec(RemoteCommand.make(["kill", "-s", signal, "--", `-${pgid}`]), { timeout: SIGNAL_TIMEOUT })

/**
 * Whether the group is still the one that was started: true when its leader's start time
 * (`/proc/<pgid>/stat`) is the recorded one, or when the leader is gone (what remains are its
 * own orphans: Linux does not reuse a pgid while any member lives), or when nothing was
 * recorded (older run directories, hosts without /proc). False for a reused pgid.
 *
 * @category inspecting
 */
export const isOurs = (
  conn: Connection,
  group: GroupRef
): Effect.Effect<boolean, RemoteFileError | ConnectError> =>
  group.startTime === undefined
    ? Effect.succeed(true)
    : Effect.map(
        // procfs files report size 0: read a fixed length to EOF
        Effect.either(conn.files.read(`/proc/${group.pgid}/stat`, { offset: 0, length: 4096 })),
        (read) => {
          if (read._tag === "Left") return true
          const start = parseStartTime(new TextDecoder().decode(read.right))
          return start === undefined || start === group.startTime
        }
      )

/**
 * Whether the group's leader (the supervisor that records the exit) is gone, a zombie, or
 * another process now: one file read (`/proc/<pgid>/stat`). A group killed whole ends this way
 * without an `exit` file; the rest of the group may still run (`isAlive` tells). False when the
 * host has no such file to read for other reasons.
 *
 * @category inspecting
 */
export const leaderGone = (conn: Connection, group: GroupRef): Effect.Effect<boolean, ConnectError> =>
  Effect.map(
    Effect.either(conn.files.read(`/proc/${group.pgid}/stat`, { offset: 0, length: 4096 })),
    (read) => {
      if (read._tag === "Left") return read.left._tag === "RemoteFileError" && read.left.notFound
      const stat = new TextDecoder().decode(read.right)
      if (parseState(stat) === "Z") return true
      const start = parseStartTime(stat)
      return group.startTime !== undefined && start !== undefined && start !== group.startTime
    }
  )

/**
 * True while some process of the group runs and the group is ours (`isOurs`). Zombies do not
 * count: they hold no memory, GPU or port, and hosts whose init reaps slowly (or never: Docker
 * without `--init`) keep them. One exec of `ps -A -o pgid= -o stat=` (plus one file read when
 * a start time is recorded); where `ps` is unusable, `kill -s 0 -- -PGID` (which counts zombies).
 *
 * @category inspecting
 */
export const isAlive = (
  conn: Connection,
  proc: GroupRef
): Effect.Effect<boolean, CommandError | RemoteFileError> =>
  conn.exec(RemoteCommand.make(Liveness.psArgv), { timeout: SIGNAL_TIMEOUT }).pipe(
    Effect.flatMap((table) => {
      const runs = table.exitCode === 0 ? Liveness.groupRuns(table.stdout, proc.pgid) : undefined
      return runs !== undefined
        ? Effect.succeed(runs)
        : Effect.map(sendSignal(conn, proc.pgid, "0"), (result) => result.exitCode === 0)
    }),
    Effect.flatMap((runs) => (runs ? isOurs(conn, proc) : Effect.succeed(false)))
  )

/** Poll `isAlive` until the group is gone (true) or `within` has passed (false). */
const goneWithin = (
  conn: Connection,
  proc: GroupRef,
  within: Duration.Duration,
  poll: Duration.DurationInput
) =>
  isAlive(conn, proc).pipe(
    Effect.repeat({ schedule: Schedule.spaced(poll), until: (alive) => !alive }),
    Effect.as(true),
    Effect.timeoutTo({ duration: within, onSuccess: (gone) => gone, onTimeout: () => false })
  )

/** How `kill` left the group. @category models */
export type KillOutcome = "gone" | "still-running"

const KILL_POLL = Duration.millis(50)

/**
 * SIGKILL the whole group at once (no grace: for what is left of something already failed)
 * and wait up to `within` (default 5 s) until none of it runs, zombies aside (see `isAlive`).
 * A group that is no longer ours (`isOurs`) is not signalled: ours is gone. One round trip
 * (two with a recorded start time). Fails only with the connection's errors.
 *
 * @category stopping
 */
export const kill = Effect.fn("RemoteProcess.kill")(function* (
  conn: Connection,
  proc: GroupRef,
  options: { readonly within?: Duration.DurationInput } = {}
): Effect.fn.Return<KillOutcome, CommandError | RemoteFileError> {
  yield* Effect.annotateCurrentSpan({ host: conn.host.alias, pgid: proc.pgid })
  if (!(yield* isOurs(conn, proc))) return "gone" satisfies KillOutcome
  const within = Duration.decode(options.within ?? "5 seconds")
  const polls = Math.max(1, Math.ceil(Duration.toMillis(within) / Duration.toMillis(KILL_POLL)))
  const result = yield* conn.exec(
    RemoteCommand.make([
      "sh",
      "-c",
      Liveness.killAndConfirmScript,
      "mlops-kill",
      String(proc.pgid),
      String(polls)
    ]),
    { timeout: Duration.sum(within, Duration.decode(SIGNAL_TIMEOUT)) }
  )
  return (result.exitCode === 0 ? "gone" : "still-running") satisfies KillOutcome
})

/** `code 3` / `signal TERM` (a bare number is read as an exit code). */
export const parseExitFile = (text: string): ExitStatus | undefined => {
  const trimmed = text.trim()
  const code = /^(?:code\s+)?(\d+)$/.exec(trimmed)
  if (code !== null) return { exitCode: Number(code[1]), signal: null }
  const signal = /^signal\s+(?:SIG)?([A-Z0-9]+)$/i.exec(trimmed)
  if (signal !== null) return { exitCode: null, signal: signal[1]!.toUpperCase() }
  return undefined
}

/** The recorded exit status; `undefined` while running or when none was recorded (killed with its supervisor). @category inspecting */
export const exitStatus = (
  conn: Connection,
  proc: { readonly runDir: string }
): Effect.Effect<ExitStatus | undefined, RemoteFileError | ConnectError> =>
  Effect.map(RemoteFiles.readTextIfExists(conn, `${proc.runDir}/exit`), (text) =>
    text === undefined ? undefined : parseExitFile(text)
  )

/** @category models */
export interface WaitOptions {
  /** Between checks; default 1 s. */
  readonly poll?: Duration.DurationInput
  /** Give up (ProcessError) after this; default: wait forever. */
  readonly timeout?: Duration.DurationInput
}

/**
 * Wait until every process of the group is gone; returns the recorded exit status (or
 * `undefined` when none was written, e.g. the group was SIGKILLed).
 *
 * @category inspecting
 */
export const wait = (
  conn: Connection,
  proc: DetachedProcess,
  options: WaitOptions = {}
): Effect.Effect<ExitStatus | undefined, ProcessStepError> => {
  // The group, not just the main process: the supervisor writes `exit` and then leaves, and
  // children the command left behind still hold resources (GPU memory, the port).
  const check = Effect.gen(function* () {
    if (yield* isAlive(conn, proc)) return { done: false, status: undefined }
    return { done: true, status: yield* exitStatus(conn, proc) }
  })
  const polled = check.pipe(
    Effect.repeat(
      Schedule.identity<{ readonly done: boolean; readonly status: ExitStatus | undefined }>().pipe(
        Schedule.zipLeft(Schedule.spaced(options.poll ?? "1 second")),
        Schedule.whileInput((r) => !r.done)
      )
    ),
    Effect.map((r) => r.status)
  )
  if (options.timeout === undefined) return polled
  const timeout = Duration.decode(options.timeout)
  return Effect.timeoutFail(polled, {
    duration: timeout,
    onTimeout: () =>
      new ProcessError({
        host: proc.host,
        runDir: proc.runDir,
        reason: `still running after ${Duration.format(timeout)} (pgid ${proc.pgid})`
      })
  })
}

/** @category models */
export interface StopOptions {
  /** How long SIGTERM gets before SIGKILL; default 10 s. */
  readonly grace?: Duration.DurationInput
  /** Between liveness checks; default 250 ms. */
  readonly poll?: Duration.DurationInput
}

/**
 * SIGTERM to the whole group, up to `grace` to exit, then SIGKILL, then confirm it is gone.
 * A group that is not running, or no longer ours (`isOurs`: its pgid was reused), is not
 * signalled (`exited-before`). Writes the outcome to `<runDir>/stopped`.
 *
 * @category stopping
 */
export const stop = Effect.fn("RemoteProcess.stop")(function* (
  conn: Connection,
  proc: DetachedProcess,
  options: StopOptions = {}
): Effect.fn.Return<StopOutcome, ProcessStepError> {
  yield* Effect.annotateCurrentSpan({ host: proc.host, pgid: proc.pgid })
  const poll = options.poll ?? "250 millis"
  const record = (outcome: StopOutcome) =>
    Effect.as(conn.files.write(`${proc.runDir}/stopped`, `${outcome}\n`), outcome)
  if (!(yield* isAlive(conn, proc))) return yield* record("exited-before")
  // Exit 1 here means the group died in between: the liveness checks below decide.
  yield* sendSignal(conn, proc.pgid, "TERM")
  if (yield* goneWithin(conn, proc, Duration.decode(options.grace ?? "10 seconds"), poll)) {
    return yield* record("terminated")
  }
  yield* sendSignal(conn, proc.pgid, "KILL")
  if (yield* goneWithin(conn, proc, Duration.seconds(10), poll)) return yield* record("killed")
  return yield* new ProcessError({
    host: proc.host,
    runDir: proc.runDir,
    reason: `process group ${proc.pgid} still alive 10 s after SIGKILL`
  })
})

/**
 * Read a run directory back into a `DetachedProcess` (for status/stop from another machine),
 * with its token and start time when they were recorded.
 *
 * @category constructors
 */
export const attach: (
  conn: Connection,
  runDir: string,
  options?: { readonly logPath?: string }
) => Effect.Effect<DetachedProcess, ProcessError | RemoteFileError | ConnectError> = Spawn.attach

/** What `watch` reports. @category models */
export type WatchEvent = Watch.WatchEvent

/** @category models */
export type WatchOptions = Watch.WatchOptions

/**
 * Follow a detached process on host `alias` until it ends, across dropped connections: the
 * `exit` file is polled (`exitPoll`, default 50 ms: a crash is seen within one poll) and
 * `isAlive` as the fallback for a supervisor killed with its group (`alivePoll`, default 2 s).
 * When the connection drops the stream emits `Disconnected`, re-acquires one from the pool
 * (`reconnect`, default `ConnectionPool.defaultReconnect`), emits `Reconnected` and goes on; a
 * death that happened meanwhile is seen by the first poll after it. The last element is
 * `Exited` with the recorded status (undefined when none was written: the whole group was
 * SIGKILLed). Fails when reconnecting gives up, or with a non-transient error.
 *
 * @category inspecting
 */
export const watch: (
  alias: string,
  proc: Pick<DetachedProcess, "runDir" | "pgid" | "startTime">,
  options?: WatchOptions
) => Stream.Stream<WatchEvent, ProcessStepError | GetError, ConnectionPool> = (alias, proc, options = {}) =>
  Watch.watch(alias, proc, options, { exitStatus, isAlive, mayHaveEnded: leaderGone })

/**
 * `watch` down to its result: the recorded exit status once the process has ended.
 *
 * @category inspecting
 */
export const awaitExit = (
  alias: string,
  proc: Pick<DetachedProcess, "runDir" | "pgid" | "startTime">,
  options: WatchOptions = {}
): Effect.Effect<ExitStatus | undefined, ProcessStepError | GetError, ConnectionPool> =>
  Watch.lastExit(watch(alias, proc, options))
