/**
 * SGLang versions, two figures:
 *
 * (a) the host flag dump over the test sshd (a stand-in SGLang 0.6.0 generated from the 0.5.15
 *     release data, so mlops ships no catalogue for it): the round trip of a fresh dump (probe
 *     already done, cache empty) and of the cached path (a dump of this install on disk), with
 *     the remote commands each adds; baseline: one environment probe (one remote command).
 *     The stand-in's server_args.py imports nothing heavy; a real SGLang's import of torch adds
 *     seconds to the fresh dump, not to the cached path.
 * (b) the story's command checked offline in-process for three releases (0.5.4, 0.5.11, 0.5.15):
 *     median of 200 each, target <= 50 ms; the first (cold) check of each includes building its
 *     catalogue from the differences. Ratios against 0.5.11 (the catalogue written in full).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import * as Preflight from "@mlops/serve/Preflight"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import { qwen36_27b } from "@mlops/serve/SampleModels"
import { Effect, Layer } from "effect"
import * as Sshd from "../packages/core/test/support/Sshd.js"
import * as Check from "../packages/sglang/src/Check.js"
import * as HostFlags from "../packages/sglang/src/HostFlags.js"
import { engine } from "../packages/sglang/src/SglangEngine.js"
import * as Standins from "../packages/sglang/test/integration/releases/standins.js"
import { readFixture } from "../packages/sglang/test/support/releaseData.js"
import { storyArgv } from "../packages/sglang/test/support/story.js"

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}
const ms = (x: number) => `${x.toFixed(1)} ms`
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const t0 = performance.now()
    const value = yield* effect
    return { value, ms: performance.now() - t0 }
  })

const alias = "sgl-0-6-0"

const hostDump = Effect.gen(function* () {
  const installed = yield* Standins.install([
    {
      alias,
      version: "0.6.0",
      flags: readFixture("args-0.5.15.json"),
      extra: [{ option_strings: ["--standin-future-flag"], dest: "standin_future_flag", type_fn: "int" }]
    }
  ])
  const sshd = yield* Sshd.start()
  const sshConfig = Standins.sshConfigFor(sshd.sshConfigPath, [alias], installed.dir)
  const commands = { count: 0 }
  const live = ConnectionPool.layer().pipe(
    Layer.provideMerge(Hosts.layer({ sshConfig, mlopsHome: installed.mlopsHome }))
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
    const prefix = installed.prefixes.get(alias)!
    // the install found as a launch finds it (the discovery script, one command)
    const locate = PythonEnvRuntime.choose(conn, { engine, explicit: prefix, env: {} })
    const located = yield* locate
    const runtime = yield* PythonEnvRuntime.kind.make(PythonEnvRuntime.spec(prefix), conn.host)
    const request = Preflight.flagsRequest(conn, { runtime, located, env: {}, flagsFromHost: false })
    const probes: Array<number> = []
    for (let i = 0; i < 10; i++) probes.push((yield* timed(locate)).ms)
    const fresh: Array<number> = []
    const freshCommands: Array<number> = []
    for (let i = 0; i < 10; i++) {
      const before = commands.count
      const run = yield* timed(HostFlags.forHost(request).pipe(Effect.provide(HostFlags.layerMemory)))
      if (run.value.source !== "dumped") throw new Error(`expected a dump, got ${run.value.source}`)
      fresh.push(run.ms)
      freshCommands.push(commands.count - before)
    }
    const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-bench-flags-"))
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
      probe: median(probes),
      fresh: median(fresh),
      freshCommands: Math.max(...freshCommands),
      cached: median(cached),
      cachedCommands: Math.max(...cachedCommands)
    }
  }).pipe(Effect.provide(live))
})

const a6000x2 = { count: 2, computeCapability: "8.6", memoryGiB: 48 }

const offlineChecks = Effect.gen(function* () {
  const rows: Array<{ version: string; cold: number; median: number }> = []
  for (const version of ["0.5.11", "0.5.4", "0.5.15"]) {
    const check = Check.offline({ argv: storyArgv, modelConfig: qwen36_27b, gpus: a6000x2, version }).pipe(
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
  console.log("(a) host flag dump, stand-in SGLang 0.6.0 (437 + 1 flags) over the test sshd")
  console.log(`    baseline: one environment probe (1 remote command): median ${ms(dump.probe)}`)
  console.log(
    `    fresh dump: median ${ms(dump.fresh)} over 10 (${dump.freshCommands} remote command added; ${(dump.fresh / dump.probe).toFixed(1)}x the probe)`
  )
  console.log(
    `    cached path: median ${ms(dump.cached)} over 50 (${dump.cachedCommands} remote commands added; ${(dump.cached / dump.probe).toFixed(2)}x the probe)`
  )
  console.log("(b) the story's command checked offline, in-process, per release")
  const base = checks.find((c) => c.version === "0.5.11")!.median
  for (const c of checks) {
    console.log(
      `    ${c.version.padEnd(7)} median ${ms(c.median)} over 200, first ${ms(c.cold)}; ${(c.median / base).toFixed(2)}x 0.5.11 (target <= 50 ms: ${c.median <= 50 ? "met" : "MISSED"})`
    )
  }
})

Effect.runPromise(Effect.scoped(main)).catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
