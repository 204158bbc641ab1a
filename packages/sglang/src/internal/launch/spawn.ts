/**
 * Starting one attempt's server: the deployment files, a clean slate for the files the
 * watchers read (`exit`, `pid`, `pgid`), then core's detached spawn. A spawn whose outcome
 * is unknown (the connection dropped or went silent while it ran) is settled from the run
 * directory once the host answers again: pid files that appeared belong to this spawn (they
 * were emptied just before it), so the server is tracked; none within a few seconds means it
 * never started, and it is started once more. A server is never left running untracked.
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import type { RemoteCommand } from "@mlops/core/RemoteCommand"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import * as RemoteProcess from "@mlops/core/RemoteProcess"
import { Clock, Duration, Effect } from "effect"
import * as Deployment from "../../Deployment.js"
import type { Session } from "./session.js"

const UNKNOWN_OUTCOME = new Set(["ConnectionLost", "CommandTimeout", "ConnectionRefused", "ConnectTimeout"])

/** How long pid files may take to appear after a spawn whose answer was lost. */
const SETTLE_WITHIN = Duration.seconds(10)
const SETTLE_POLL = "250 millis"

const readPositive = (conn: Connection, path: string) =>
  Effect.map(RemoteFiles.readTextIfExists(conn, path), (text) => {
    const n = Number((text ?? "").trim())
    return Number.isInteger(n) && n > 0 ? n : undefined
  })

/** The process this spawn started, read from the run directory; undefined when none (yet). */
const recorded = (conn: Connection, runDir: string, logPath: string) =>
  Effect.map(
    Effect.all([readPositive(conn, `${runDir}/pid`), readPositive(conn, `${runDir}/pgid`)], {
      concurrency: 2
    }),
    ([pid, pgid]): RemoteProcess.DetachedProcess | undefined =>
      pid === undefined || pgid === undefined
        ? undefined
        : { host: conn.host.alias, pid, pgid, runDir, logPath }
  )

export const start = Effect.fn("Launch.spawn")(function* (
  session: Session,
  o: {
    readonly name: string
    readonly files: Parameters<typeof Deployment.writeLaunchFiles>[2]
    readonly command: RemoteCommand
  }
) {
  const runDir = yield* session.run((conn) => Deployment.writeLaunchFiles(conn, o.name, o.files), {
    retry: "write"
  })
  const logPath = `${runDir}/log`
  // the watchers read these: a previous attempt's must not count (an empty file reads as none)
  const [logStat] = yield* session.run(
    (conn) =>
      Effect.all(
        [
          conn.files.stat(logPath),
          conn.files.write(`${runDir}/exit`, ""),
          conn.files.write(`${runDir}/pid`, ""),
          conn.files.write(`${runDir}/pgid`, "")
        ],
        { concurrency: "unbounded" }
      ),
    { retry: "write" }
  )
  const fromOffset = logStat?.size ?? 0

  const spawnOnce = session.run((conn) => RemoteProcess.spawnDetached(conn, o.command, { runDir, logPath }), {
    retry: "never"
  })
  const settle = Effect.gen(function* () {
    const until = (yield* Clock.currentTimeMillis) + Duration.toMillis(SETTLE_WITHIN)
    for (;;) {
      const found = yield* session.run((conn) => recorded(conn, runDir, logPath))
      if (found !== undefined || (yield* Clock.currentTimeMillis) >= until) return found
      yield* Effect.sleep(SETTLE_POLL)
    }
  })
  const proc = yield* spawnOnce.pipe(
    Effect.catchIf(
      (error) => UNKNOWN_OUTCOME.has(error._tag),
      (error) =>
        Effect.flatMap(settle, (found) =>
          found !== undefined
            ? Effect.succeed(found)
            : Effect.logWarning(
                `spawn of ${o.name} got no answer (${error._tag}) and started nothing; starting again`
              ).pipe(Effect.zipRight(spawnOnce))
        )
    )
  )
  return { proc, fromOffset }
})

/** Stop an attempt's server (TERM, then KILL after `grace`). */
export const stop = (conn: Connection, proc: RemoteProcess.DetachedProcess, grace?: Duration.DurationInput) =>
  RemoteProcess.stop(conn, proc, grace === undefined ? {} : { grace })
