/**
 * Starting one attempt's server: the deployment files, then the placement's spawn (a process
 * group's takes the deployment's lock, so two launches of one name cannot both start; every
 * placement gives each start a fresh log, the previous one kept beside it, and settles a start
 * whose answer was lost, re-acquiring the connection, so a server is never left running
 * untracked). Retries stop at the launch's deadline.
 *
 * @internal
 */
import { randomBytes } from "node:crypto"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import { Effect } from "effect"
import * as Deployment from "../../Deployment.js"
import type { GpuPlan } from "../../Engine.js"
import type * as Placement from "../../Placement.js"
import type { PlacementError } from "../../Placements.js"
import type { Runnable } from "../../Runtime.js"
import type { Session } from "./session.js"

export const start = Effect.fn("Launch.spawn")(function* (
  session: Session,
  o: {
    readonly name: string
    readonly files: Parameters<typeof Deployment.writeLaunchFiles>[2]
    /** One per node the placement spans, rank 0's first. */
    readonly runnables: readonly [Runnable, ...Array<Runnable>]
    readonly placement: Placement.Placement<PlacementError>
    readonly gpus: GpuPlan
    readonly paths: Placement.ServerPaths
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
    .spawn(session.alias, o.runnables, {
      runDir,
      logPath,
      token,
      name: o.name,
      gpus: o.gpus,
      paths: o.paths,
      reconnect: session.reconnect
    })
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
 * or was killed holding it): when the run directory carries this start's token and the
 * placement's record of a start, that is the one to follow. Otherwise the refusal stands
 * (another launch).
 */
const ownStart = <E>(
  session: Session,
  placement: Placement.Placement<PlacementError>,
  runDir: string,
  logPath: string,
  token: string,
  refusal: E
) =>
  session
    .run((conn) =>
      Effect.flatMap(RemoteFiles.readTextIfExists(conn, `${runDir}/token`), (text) =>
        text?.trim() === token ? placement.attach(conn, { runDir, logPath }) : Effect.succeed(undefined)
      )
    )
    .pipe(Effect.flatMap((proc) => (proc === undefined ? Effect.fail(refusal) : Effect.succeed(proc))))
