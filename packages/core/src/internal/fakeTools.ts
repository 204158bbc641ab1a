/**
 * Canned `nvidia-smi` and `ss` for fake hosts: the output formats the probes parse, produced
 * from a GPU list and the host's listening-ports table.
 *
 * @internal
 */
import { Effect } from "effect"
import type { FakeGpu, FakeGpuProcess, Live } from "../FakeHost.js"
import type { Program } from "../FakeProgram.js"

const read = <A>(value: Live<A>): Effect.Effect<A> => (Effect.isEffect(value) ? value : Effect.succeed(value))

const GPU_FIELDS: Record<string, (gpu: FakeGpu) => string | undefined> = {
  index: (g) => String(g.index),
  name: (g) => g.name,
  "memory.total": (g) => String(g.memoryTotalMiB),
  "memory.used": (g) => String(g.memoryUsedMiB),
  "memory.free": (g) => String(g.memoryTotalMiB - g.memoryUsedMiB),
  uuid: (g) => g.uuid,
  compute_cap: (g) => g.computeCapability
}

const APP_FIELDS: Record<string, (p: FakeGpuProcess) => string> = {
  pid: (p) => String(p.pid),
  gpu_uuid: (p) => p.gpuUuid,
  used_memory: (p) => String(p.usedMemoryMiB)
}

const UNITS: Record<string, string> = {
  "memory.total": " [MiB]",
  "memory.used": " [MiB]",
  "memory.free": " [MiB]",
  used_memory: " [MiB]"
}

export const nvidiaSmi = (
  gpus: Live<ReadonlyArray<FakeGpu>>,
  processes: Live<ReadonlyArray<FakeGpuProcess>>
): Program => ({
  match: "nvidia-smi",
  run: (ctx) =>
    Effect.gen(function* () {
      const option = (name: string) => ctx.argv.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1)
      const format = (option("--format") ?? "").split(",")
      const noHeader = format.includes("noheader")
      const noUnits = format.includes("nounits")
      const table = <A>(
        fields: ReadonlyArray<string>,
        rows: ReadonlyArray<A>,
        get: (row: A, f: string) => string
      ) =>
        Effect.gen(function* () {
          if (!noHeader)
            yield* ctx.stdout.line(fields.map((f) => f + (noUnits ? "" : (UNITS[f] ?? ""))).join(", "))
          for (const row of rows) yield* ctx.stdout.line(fields.map((f) => get(row, f)).join(", "))
        })
      const gpuList = yield* read(gpus)
      const gpuQuery = option("--query-gpu")
      if (gpuQuery !== undefined) {
        const fields = gpuQuery.split(",")
        for (const field of fields) {
          const known = GPU_FIELDS[field]
          if (known === undefined || gpuList.some((g) => known(g) === undefined)) {
            yield* ctx.stdout.line(`Field "${field}" is not a valid field to query.`)
            return 2
          }
        }
        yield* table(fields, gpuList, (g, f) => GPU_FIELDS[f]!(g)!)
        return 0
      }
      const appQuery = option("--query-compute-apps")
      if (appQuery !== undefined) {
        const fields = appQuery.split(",")
        const unknown = fields.find((f) => APP_FIELDS[f] === undefined)
        if (unknown !== undefined) {
          yield* ctx.stdout.line(`Field "${unknown}" is not a valid field to query.`)
          return 2
        }
        yield* table(fields, yield* read(processes), (p, f) => APP_FIELDS[f]!(p))
        return 0
      }
      for (const g of gpuList) yield* ctx.stdout.line(`GPU ${g.index}: ${g.name} (UUID: ${g.uuid})`)
      return 0
    })
})

const pad = (text: string, width: number) => text.padEnd(width)

/** `ss -ltnp[H] ['sport = :PORT']`: only listening TCP sockets exist on a fake host. */
export const ss: Program = {
  match: "ss",
  run: (ctx) =>
    Effect.gen(function* () {
      const flags = ctx.argv.filter((a) => /^-[a-zA-Z]+$/.test(a)).join("")
      const filter = ctx.argv
        .slice(1)
        .join(" ")
        .match(/sport\s*=\s*:(\d+)/)
      const wanted = filter === null ? undefined : Number(filter[1])
      const ports = (yield* ctx.ports).filter((p) => wanted === undefined || p.port === wanted)
      if (!flags.includes("H")) {
        yield* ctx.stdout.line(
          `${pad("State", 7)}${pad("Recv-Q", 7)}${pad("Send-Q", 7)}${pad("Local Address:Port", 22)}${pad("Peer Address:Port", 18)}Process`
        )
      }
      for (const p of [...ports].sort((a, b) => a.port - b.port)) {
        const users = flags.includes("p") ? `users:(("${p.command}",pid=${p.pid},fd=3))` : ""
        yield* ctx.stdout.line(
          `${pad("LISTEN", 7)}${pad("0", 7)}${pad("2048", 7)}${pad(`127.0.0.1:${p.port}`, 22)}${pad("0.0.0.0:*", 18)}${users}`
        )
      }
      return 0
    })
}
