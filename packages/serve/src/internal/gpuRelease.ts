/**
 * A stop's GPU confirmation for servers whose processes run on the host (a process group, a
 * container): the pids are taken before the stop, while they are the server's; afterwards none
 * of them may still hold GPU memory (drivers release it a moment after a process is gone, so it
 * is polled briefly before deciding).
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import type { CommandError, ProbeFailed } from "@mlops/core/Errors"
import * as Probes from "@mlops/core/Probes"
import { Clock, Duration, Effect } from "effect"
import type { GpuRelease } from "../Placement.js"

/** GPU memory (MiB) held by the given pids, and which of them hold some. */
export const gpuMemoryOf = (conn: Connection, pids: ReadonlyArray<number>) =>
  Effect.map(Probes.gpuProcesses(conn), (apps) => {
    const mine = apps.filter((app) => pids.includes(app.pid))
    return {
      pids: [...new Set(mine.map((app) => app.pid))],
      usedMiB: mine.reduce((sum, app) => sum + (app.usedMemoryMiB ?? 0), 0)
    }
  })

/** The confirmation that `pids` (taken before the stop) hold no GPU memory on `conn`'s host. */
export const confirmation = (
  conn: Connection,
  pids: ReadonlyArray<number>
): GpuRelease<CommandError | ProbeFailed> => ({
  confirm: (within) =>
    Effect.gen(function* () {
      if (pids.length === 0) return undefined
      const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(Duration.decode(within))
      for (;;) {
        const held = yield* gpuMemoryOf(conn, pids)
        if (held.pids.length === 0) return undefined
        if ((yield* Clock.currentTimeMillis) >= deadline)
          return {
            pids: held.pids,
            usedMiB: held.usedMiB,
            fix: `kill them (ssh ${conn.host.alias} kill -9 ${held.pids.join(" ")}) and check nvidia-smi`
          }
        yield* Effect.sleep("500 millis")
      }
    })
})
