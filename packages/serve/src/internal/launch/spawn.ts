/**
 * Starting one attempt's server: the deployment files, then core's `RemoteProcess.spawn`,
 * which takes the deployment's lock (two launches of one name cannot both start), gives each
 * start a fresh log (the previous one kept beside it) and settles a start whose answer was
 * lost from the run directory, re-acquiring the connection, so a server is never left running
 * untracked. Retries stop at the launch's deadline.
 *
 * @internal
 */
import { randomBytes } from "node:crypto"
import type { Connection } from "@mlops/core/Connection"
import type { RemoteCommand } from "@mlops/core/RemoteCommand"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import { type Duration, Effect } from "effect"
import * as Deployment from "../../Deployment.js"
import type * as Placement from "../../Placement.js"
import type { Session } from "./session.js"

export const start = Effect.fn("Launch.spawn")(function* (
  session: Session,
  o: {
    readonly name: string
    readonly files: Parameters<typeof Deployment.writeLaunchFiles>[2]
    readonly command: RemoteCommand
    readonly placement: Placement.Placement
  }
) {
  const runDir = yield* session.run((conn) => Deployment.writeLaunchFiles(conn, o.name, o.files), {
    retry: "write"
  })
  const logPath = `${runDir}/log`
  // our own name for this start: after a cut, a lock or a running group that carries it is
  // this start, not another launch's
  const token = randomBytes(12).toString("hex")
  const proc = yield* o.placement
    .spawn(session.alias, o.command, { runDir, logPath, token, reconnect: session.reconnect })
    .pipe(
      Effect.catchTags({
        SpawnLocked: (error) => ownStart(session, o.placement, runDir, logPath, token, error),
        AlreadyRunning: (error) => ownStart(session, o.placement, runDir, logPath, token, error)
      })
    )
  // a fresh log per start: the watchers read it from its first byte
  return { proc, fromOffset: 0 }
})

/**
 * A start refused as locked or already running may be this launch's own first try, cut
 * before its answer came and retried too early (its shell had not even taken the lock yet,
 * or was killed holding it): when the run directory carries this start's token and its pid
 * files, that process is the one to follow. Otherwise the refusal stands (another launch).
 */
const ownStart = <E>(
  session: Session,
  placement: Placement.Placement,
  runDir: string,
  logPath: string,
  token: string,
  refusal: E
) =>
  session
    .run((conn) =>
      Effect.flatMap(RemoteFiles.readTextIfExists(conn, `${runDir}/token`), (text) =>
        text?.trim() === token
          ? Effect.map(placement.attach(conn, runDir, logPath), (proc): Placement.Placed | undefined => proc)
          : Effect.succeed(undefined)
      )
    )
    .pipe(Effect.flatMap((proc) => (proc === undefined ? Effect.fail(refusal) : Effect.succeed(proc))))

/** Stop an attempt's server (TERM, then KILL after `grace`), only while its group is still ours. */
export const stop = (
  conn: Connection,
  placement: Placement.Placement,
  proc: Placement.Placed,
  grace?: Duration.DurationInput
) => placement.stop(conn, proc, grace)
