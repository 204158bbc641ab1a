/**
 * Which of our deployments a process belongs to, so a port or GPU holder that is one of ours
 * is named (`our deployment qwen3.6-27b`) with the `mlops stop` that frees it. A process is
 * ours when it is the recorded pid of a deployment that has not ended, or in its process group.
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import { Effect } from "effect"
import * as Deployment from "../../Deployment.js"

/** The deployment `pid` belongs to; undefined when none does (or the host cannot tell). */
export const deploymentOf = (conn: Connection, pid: number): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    const live = (yield* Deployment.list(conn)).filter((d) => d.exit === undefined && d.stopped === undefined)
    const byPid = live.find((d) => d.pid === pid)
    if (byPid !== undefined) return byPid.name
    const ps = yield* conn.exec(RemoteCommand.make(["ps", "-o", "pgid=", "-p", String(pid)]), {
      timeout: "10 seconds"
    })
    const pgid = Number(ps.stdout.trim())
    if (ps.exitCode !== 0 || !Number.isInteger(pgid) || pgid <= 0) return undefined
    return live.find((d) => d.pgid === pgid)?.name
  }).pipe(Effect.orElseSucceed(() => undefined))
