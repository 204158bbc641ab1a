/**
 * Starting one attempt's server: the deployment files, then core's `RemoteProcess.spawn`,
 * which takes the deployment's lock (two launches of one name cannot both start), gives each
 * start a fresh log (the previous one kept beside it) and settles a start whose answer was
 * lost from the run directory, re-acquiring the connection, so a server is never left running
 * untracked. Retries stop at the launch's deadline.
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import type { RemoteCommand } from "@mlops/core/RemoteCommand"
import * as RemoteProcess from "@mlops/core/RemoteProcess"
import { type Duration, Effect } from "effect"
import * as Deployment from "../../Deployment.js"
import type { Session } from "./session.js"

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
  const proc = yield* RemoteProcess.spawn(session.alias, o.command, {
    runDir,
    logPath: `${runDir}/log`,
    reconnect: session.reconnect
  })
  // a fresh log per start: the watchers read it from its first byte
  return { proc, fromOffset: 0 }
})

/** Stop an attempt's server (TERM, then KILL after `grace`), only while its group is still ours. */
export const stop = (conn: Connection, proc: RemoteProcess.DetachedProcess, grace?: Duration.DurationInput) =>
  RemoteProcess.stop(conn, proc, grace === undefined ? {} : { grace })
