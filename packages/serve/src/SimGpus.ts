/**
 * The sim host's GPUs and the GPU memory its simulated servers hold. The state lives in the
 * fake host's file system (`/run/mlops-sim/gpu/<pid>.json`), so `nvidia-smi` (another
 * process) sees what a running server allocated, and a server that dies takes its file with it.
 *
 * @since 0.1.0
 */
import { FakeHost } from "@mlops/core/testing"
import { Effect } from "effect"
import type { Gpus } from "./Engine.js"

/** RTX A6000: 48 GB (49140 MiB), compute capability 8.6. */
export const gpus: ReadonlyArray<FakeHost.FakeGpu> = [0, 1].map((index) => ({
  index,
  name: "NVIDIA RTX A6000",
  memoryTotalMiB: 49140,
  memoryUsedMiB: 0,
  uuid: `GPU-5a1e0000-0000-4000-8000-00000000000${index}`,
  computeCapability: "8.6"
}))

/** The same GPUs as the rules see them (what preflight would learn from nvidia-smi). */
export const forRules: Gpus = {
  count: gpus.length,
  computeCapability: gpus[0]!.computeCapability ?? "8.6",
  memoryMiB: gpus[0]!.memoryTotalMiB
}

/** What a fresh GPU shows as used (driver/context), MiB. */
const idleUsedMiB = 4

const stateDir = "/run/mlops-sim/gpu"

/** Per GPU index, MiB held by one process. */
export type Usage = Readonly<Record<number, number>>

export const usagePath = (pid: number): string => `${stateDir}/${pid}.json`

/** Record (replace) what `pid` holds. */
export const hold = (fs: FakeHost.FakeFs, pid: number, usage: Usage): Effect.Effect<void> =>
  fs.write(usagePath(pid), JSON.stringify(usage))

/** Forget what `pid` held (it exited). */
export const release = (fs: FakeHost.FakeFs, pid: number): Effect.Effect<void> =>
  Effect.asVoid(fs.remove(usagePath(pid)))

const holders = (fs: FakeHost.FakeFs) =>
  Effect.gen(function* () {
    const files = (yield* fs.listFiles).filter(
      (path) => path.startsWith(`${stateDir}/`) && path.endsWith(".json")
    )
    const out: Array<{ readonly pid: number; readonly usage: Usage }> = []
    for (const path of files) {
      const text = yield* fs.readText(path)
      const pid = Number(path.slice(stateDir.length + 1, -".json".length))
      if (text !== undefined && Number.isInteger(pid)) out.push({ pid, usage: JSON.parse(text) as Usage })
    }
    return out
  })

/** MiB per GPU index held by every process but `pid` (what a new server finds taken). */
export const heldByOthers = (fs: FakeHost.FakeFs, pid: number): Effect.Effect<Usage> =>
  Effect.map(holders(fs), (held) => {
    const out: Record<number, number> = {}
    for (const h of held) {
      if (h.pid === pid) continue
      for (const [index, mib] of Object.entries(h.usage)) out[Number(index)] = (out[Number(index)] ?? 0) + mib
    }
    return out
  })

/** `nvidia-smi` reflecting the memory held by running sim servers. */
export const nvidiaSmi: FakeHost.Program = {
  match: "nvidia-smi",
  run: (ctx) =>
    Effect.gen(function* () {
      const held = yield* holders(ctx.fs)
      const list = gpus.map((gpu) => ({
        ...gpu,
        memoryUsedMiB: idleUsedMiB + held.reduce((sum, h) => sum + (h.usage[gpu.index] ?? 0), 0)
      }))
      const apps = held.flatMap((h) =>
        Object.entries(h.usage)
          .filter(([, mib]) => mib > 0)
          .map(([index, mib]) => ({
            pid: h.pid,
            gpuUuid: gpus[Number(index)]!.uuid,
            usedMemoryMiB: Math.round(mib)
          }))
      )
      return yield* FakeHost.nvidiaSmi(list, apps).run(ctx)
    })
}
