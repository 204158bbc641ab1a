/**
 * vLLM versions, two figures:
 *
 * (a) the host flag dump over the test sshd (a stand-in vLLM 0.26.0 whose `vllm serve` parser is
 *     built from the newest real parser dump, with one flag added): the round trip of a fresh dump
 *     (probe already done, cache empty) and of the cached path, with the remote commands each
 *     adds; baseline: one environment probe (one remote command). A real vLLM's import of torch
 *     adds seconds to the fresh dump, not to the cached path.
 * (b) a typical command checked offline in-process against the three shipped snapshots (0.11,
 *     0.13, 0.21): median of 200 each, target <= 50 ms; ratios against 0.21 (written in full).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import * as ServeCheck from "@mlops/serve/Check"
import * as Preflight from "@mlops/serve/Preflight"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import { Effect, Layer } from "effect"
import * as Sshd from "../packages/core/test/support/Sshd.js"
import { VllmEngine } from "../packages/vllm/src/Engine.js"
import * as HostFlags from "../packages/vllm/src/HostFlags.js"
import { qwen25_7b } from "../packages/vllm/test/fixtures/models.js"
import * as Standin from "../packages/vllm/test/integration/standin/install.js"
import { median } from "./support/stats.js"

const ms = (x: number) => `${x.toFixed(1)} ms`
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const t0 = performance.now()
    const value = yield* effect
    return { value, ms: performance.now() - t0 }
  })

const alias = "testhost"

const hostDump = Effect.scoped(
  Effect.gen(function* () {
    const flags = Standin.laterReleaseFlags()
    const standin = yield* Standin.install(alias, { version: "0.26.0", flags })
    const sshd = yield* Sshd.start({ extraConfig: standin.sshdConfig })
    const commands = { count: 0 }
    const live = ConnectionPool.layer().pipe(
      Layer.provideMerge(Hosts.layer({ sshConfig: sshd.sshConfigPath, mlopsHome: standin.mlopsHome }))
    )
    return yield* Effect.gen(function* () {
      const pool = yield* ConnectionPool.ConnectionPool
      const raw = yield* pool.get(alias)
      const conn = {
        ...raw,
        exec: (...args: Parameters<typeof raw.exec>) => {
          commands.count++
          return raw.exec(...args)
        }
      }
      const locate = PythonEnvRuntime.choose(conn, { engine: VllmEngine, explicit: standin.venv, env: {} })
      const located = yield* locate
      const runtime = yield* PythonEnvRuntime.kind.make(PythonEnvRuntime.spec(standin.venv), conn.host)
      const request = Preflight.flagsRequest(conn, { runtime, located, env: {}, flagsFromHost: false })
      const probes: Array<number> = []
      for (let i = 0; i < 10; i++) probes.push((yield* timed(locate)).ms)
      const fresh: Array<number> = []
      const freshCommands: Array<number> = []
      for (let i = 0; i < 10; i++) {
        const before = commands.count
        const run = yield* timed(HostFlags.forHost(request))
        if (run.value.source !== "dumped") throw new Error(`expected a dump, got ${run.value.source}`)
        fresh.push(run.ms)
        freshCommands.push(commands.count - before)
      }
      const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-bench-vllm-flags-"))
      const cache = HostFlags.layerDirectory(cacheDir)
      yield* HostFlags.forHost(request).pipe(Effect.provide(cache))
      const cached: Array<number> = []
      const cachedCommands: Array<number> = []
      for (let i = 0; i < 50; i++) {
        const before = commands.count
        const run = yield* timed(HostFlags.forHost(request).pipe(Effect.provide(cache)))
        if (run.value.source !== "cached") throw new Error(`expected the cache, got ${run.value.source}`)
        cached.push(run.ms)
        cachedCommands.push(commands.count - before)
      }
      fs.rmSync(cacheDir, { recursive: true, force: true })
      return {
        flags: flags.length,
        probe: median(probes),
        fresh: median(fresh),
        freshCommands: Math.max(...freshCommands),
        cached: median(cached),
        cachedCommands: Math.max(...cachedCommands)
      }
    }).pipe(Effect.provide(live))
  })
)

const l4x2 = { count: 2, computeCapability: "8.9", memoryGiB: 24 }
const argv = [
  "/models/Qwen2.5-7B-Instruct",
  "--tensor-parallel-size",
  "2",
  "--max-model-len",
  "32768",
  "--gpu-memory-utilization",
  "0.9"
]

const offlineChecks = Effect.gen(function* () {
  const rows: Array<{ version: string; cold: number; median: number }> = []
  for (const version of ["0.21.0", "0.11.0", "0.13.0"]) {
    const check = ServeCheck.offline(VllmEngine, { argv, modelConfig: qwen25_7b, gpus: l4x2, version }).pipe(
      Effect.exit
    )
    const cold = (yield* timed(check)).ms
    const runs: Array<number> = []
    for (let i = 0; i < 200; i++) runs.push((yield* timed(check)).ms)
    rows.push({ version, cold, median: median(runs) })
  }
  return rows
})

const main = Effect.gen(function* () {
  const checks = yield* offlineChecks
  const dump = yield* hostDump
  console.log(`(a) host flag dump, stand-in vLLM 0.26.0 (${dump.flags} flags) over the test sshd`)
  console.log(`    baseline: one environment probe (1 remote command): median ${ms(dump.probe)}`)
  console.log(
    `    fresh dump: median ${ms(dump.fresh)} over 10 (${dump.freshCommands} remote command added; ${(dump.fresh / dump.probe).toFixed(1)}x the probe)`
  )
  console.log(
    `    cached path: median ${ms(dump.cached)} over 50 (${dump.cachedCommands} remote commands added; ${(dump.cached / dump.probe).toFixed(2)}x the probe)`
  )
  console.log("(b) a typical command checked offline, in-process, per snapshot (target <= 50 ms)")
  const base = checks.find((c) => c.version === "0.21.0")!.median
  for (const c of checks)
    console.log(
      `    ${c.version.padEnd(7)} median ${ms(c.median)} over 200 (${(c.median / base).toFixed(2)}x 0.21); first ${ms(c.cold)}`
    )
})

Effect.runPromise(main).catch((error) => {
  console.error(error)
  process.exit(1)
})
