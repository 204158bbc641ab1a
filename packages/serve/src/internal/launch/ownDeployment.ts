/**
 * Which of our deployments a process belongs to, so a port or GPU holder that is one of ours
 * is named (`our deployment qwen3.6-27b`) with the `mlops stop` that frees it. A process is
 * ours when the placed server of a deployment that has not ended holds it (`Placed.holds`).
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import { Effect } from "effect"
import * as Placements from "../../Placements.js"

/** The deployment `pid` belongs to; undefined when none does (or the host cannot tell). */
export const deploymentOf = (conn: Connection, pid: number): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    const live = yield* Placements.liveServers(conn)
    if (live.length === 0) return undefined
    const ps = yield* conn.exec(RemoteCommand.make(["ps", "-o", "pgid=", "-p", String(pid)]), {
      timeout: "10 seconds"
    })
    const pgid = Number(ps.stdout.trim())
    const process = { pid, pgid: ps.exitCode === 0 && Number.isInteger(pgid) && pgid > 0 ? pgid : -1 }
    return live.find((server) => server.placed.holds(process))?.name
  }).pipe(Effect.orElseSucceed(() => undefined))
