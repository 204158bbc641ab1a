/**
 * GPUs a launch would use whose memory other processes already hold. Engines size their memory
 * from what is free when it starts, so a second server "fits" on paper and then runs out of
 * memory (or starts with a tiny KV cache). Preflight refuses such a launch with the holders
 * (pid, command, memory, and the deployment name when it is one of ours) unless the user
 * allows it.
 *
 * Which GPUs: the engine's plan gives rank r of a node GPU `first + r × step` among those
 * visible to it (`CUDA_VISIBLE_DEVICES`, indices or UUIDs, when the launch sets it).
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import type * as Probes from "@mlops/core/Probes"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import { Effect } from "effect"
import type { GpuPlan } from "../../Engine.js"
import * as Placements from "../../Placements.js"
import * as Secrets from "../../Secrets.js"
import { type BusyGpu, type GpuHolder, GpusBusy } from "./types.js"

/** Memory a GPU shows in use with nothing on it is a few hundred MiB at most (driver, display). */
const UNSEEN_HOLDER_MIB = 2048

/** The GPUs (from `gpus`) the ranks of this node would use. */
export const gpusUsed = (
  gpus: ReadonlyArray<Probes.Gpu>,
  plan: GpuPlan,
  env: Readonly<Record<string, string>>
): ReadonlyArray<Probes.Gpu> => {
  const visible = env.CUDA_VISIBLE_DEVICES
  const order =
    visible === undefined
      ? gpus
      : visible
          .split(",")
          .map((id) => id.trim())
          .filter((id) => id !== "")
          .flatMap((id) => {
            const gpu = /^\d+$/.test(id)
              ? gpus.find((g) => g.index === Number(id))
              : gpus.find((g) => g.uuid === id || g.uuid.startsWith(id))
            return gpu === undefined ? [] : [gpu]
          })
  const used: Array<Probes.Gpu> = []
  for (let rank = 0; rank < Math.max(1, plan.perNode); rank++) {
    const gpu = order[plan.first + rank * Math.max(1, plan.step)]
    if (gpu !== undefined && !used.includes(gpu)) used.push(gpu)
  }
  return used
}

const COMMAND_WIDTH = 160

/** `pid → {pgid, command}` from one `ps`; commands shown without secret values. */
const processTable = (conn: Connection) =>
  Effect.map(
    conn.exec(RemoteCommand.make(["ps", "-A", "-o", "pid=", "-o", "pgid=", "-o", "args="]), {
      timeout: "15 seconds"
    }),
    (result) => {
      const table = new Map<number, { readonly pgid: number; readonly command: string }>()
      if (result.exitCode !== 0) return table
      for (const line of result.stdout.split("\n")) {
        const match = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line)
        if (match === null) continue
        const command = Secrets.redactArgv(match[3]!.trim().split(/\s+/)).join(" ")
        table.set(Number(match[1]), {
          pgid: Number(match[2]),
          command: command.length > COMMAND_WIDTH ? `${command.slice(0, COMMAND_WIDTH - 3)}...` : command
        })
      }
      return table
    }
  )

/**
 * What holds memory on `used`; `undefined` when nothing does. `apps` is nvidia-smi's process
 * list (already probed alongside the GPUs).
 */
export const find = Effect.fn("Launch.gpuHolders")(function* (
  conn: Connection,
  used: ReadonlyArray<Probes.Gpu>,
  apps: ReadonlyArray<Probes.GpuProcess>
) {
  const mine = apps.filter((app) => used.some((g) => g.uuid === app.gpuUuid))
  const busy = used.filter(
    (g) => mine.some((app) => app.gpuUuid === g.uuid) || g.memoryUsedMiB >= UNSEEN_HOLDER_MIB
  )
  if (busy.length === 0) return undefined
  const [table, live] = yield* Effect.all(
    [processTable(conn), mine.length > 0 ? Placements.liveServers(conn) : Effect.succeed([])],
    { concurrency: 2 }
  )
  const holders: Array<GpuHolder> = mine.map((app) => {
    const row = table.get(app.pid)
    const process = { pid: app.pid, pgid: row?.pgid ?? -1 }
    const deployment = live.find((server) => server.placed.holds(process))?.name
    return {
      pid: app.pid,
      gpu: used.find((g) => g.uuid === app.gpuUuid)!.index,
      ...(app.usedMemoryMiB === undefined ? {} : { usedMiB: app.usedMemoryMiB }),
      ...(row === undefined ? {} : { command: row.command }),
      ...(deployment === undefined ? {} : { deployment })
    }
  })
  const gpus: Array<BusyGpu> = busy.map((g) => ({
    index: g.index,
    name: g.name,
    usedMiB: g.memoryUsedMiB,
    totalMiB: g.memoryTotalMiB
  }))
  return { gpus, holders }
})

/** The refusal for busy GPUs, with the ways out. */
export const refusal = (
  host: string,
  busy: { readonly gpus: ReadonlyArray<BusyGpu>; readonly holders: ReadonlyArray<GpuHolder> },
  totalGpus: number,
  usedGpus: number,
  engine: string,
  plan: GpuPlan
): GpusBusy => {
  const ours = [...new Set(busy.holders.flatMap((h) => (h.deployment === undefined ? [] : [h.deployment])))]
  const ways = [
    ...ours.map((name) => `stop ${name} (mlops stop --host ${host} --name ${name})`),
    ...(busy.holders.some((h) => h.deployment === undefined) ? ["stop the other processes"] : []),
    ...(totalGpus > usedGpus ? [`use other GPUs (${plan.elsewhere})`] : []),
    `or pass --allow-busy-gpus to start anyway (${engine} then sizes its memory from what is left)`
  ]
  return new GpusBusy({ host, gpus: busy.gpus, holders: busy.holders, fix: ways.join(", ") })
}
