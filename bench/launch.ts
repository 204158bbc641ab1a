/**
 * Launch benches over the test sshd (127.0.0.1) with the stand-in SGLang
 * (packages/sglang/test/integration/standin/), each against a baseline measured in this run:
 *
 * (a) failure detection: from the moment a rank writes its crash traceback on the host (the
 *     stand-in stamps the wall clock right after) to the typed `OOM` in the caller; median of
 *     BENCH_RUNS (10) runs, vs the usual `nohup ... & while sleep 30; do kill -0 $pid || break; done`
 *     poll (BENCH_BASELINE_RUNS, default 1: each takes ~30 s);
 * (b) launch overhead: the whole launch (connect, preflight, spawn, follow, health checks) minus
 *     the stand-in server's own start→ready time, median of 5; target < 1.5 s;
 * (c) argument check: the story's command checked offline in-process (decode + resolve),
 *     median of 200; target < 50 ms.
 *
 *   npx tsx bench/launch.ts      (or `npm run bench`, which runs every bench)
 */

import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Launch from "@mlops/serve/Launch"
import { qwen36_27b } from "@mlops/serve/SampleModels"
import * as Stop from "@mlops/serve/Stop"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
import { Effect, Exit, Stream } from "effect"
import * as Sshd from "../packages/core/test/support/Sshd.js"
import * as Check from "../packages/sglang/src/Check.js"
import type * as Standin from "../packages/sglang/test/integration/standin/install.js"
import {
  alias,
  fixedStory,
  freePort,
  liveLayer,
  standinEnv,
  startHost,
  story
} from "../packages/sglang/test/integration/support.js"
import { median } from "./support/stats.js"

const RUNS = Number(process.env.BENCH_RUNS ?? 10)
const BASELINE_RUNS = Number(process.env.BENCH_BASELINE_RUNS ?? 1)

const ms = (x: number) => `${x.toFixed(x < 10 ? 2 : 0)} ms`

const names: Array<string> = []
const newName = (label: string) => {
  const name = `bench-${label}-${process.pid}-${names.length}`
  names.push(name)
  return name
}

const stampsSince = (standin: Standin.Standin, event: string, sinceMs: number) =>
  standin.stamps().filter((s) => s.event === event && s.ms >= sinceMs)

/** (a) our detection latency, one run. */
const detectOnce = (standin: Standin.Standin) =>
  Effect.gen(function* () {
    const port = yield* freePort
    const started = Date.now()
    let firstTyped: number | undefined
    const exit = yield* Launch.launch({
      engine: SglangEngine.engine,
      host: alias,
      name: newName("oom"),
      argv: [...fixedStory(standin.modelPath, port), "--mem-fraction-static", "0.99"],
      env: standinEnv(standin),
      preflight: false
    }).pipe(
      Stream.tap((event) =>
        Effect.sync(() => {
          const typed =
            (event._tag === "Log" && event.event._tag === "Failed") || event._tag === "AttemptFailed"
          if (typed && firstTyped === undefined) firstTyped = Date.now()
        })
      ),
      Stream.runDrain,
      Effect.exit
    )
    const detected = Date.now()
    if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail" || exit.cause.error._tag !== "OOM") {
      return yield* Effect.dieMessage(
        `expected an OOM, got ${Exit.isSuccess(exit) ? "a ready server" : String(exit.cause)}`
      )
    }
    const crash = stampsSince(standin, "crash", started)[0]
    if (crash === undefined) return yield* Effect.dieMessage("the stand-in wrote no crash stamp")
    return { event: (firstTyped ?? detected) - crash.ms, error: detected - crash.ms }
  })

/** (a) baseline: a shell script that starts the server with nohup and polls it every 30 s. */
const pollOnce = (standin: Standin.Standin, sshd: Sshd.Sshd) =>
  Effect.gen(function* () {
    const port = yield* freePort
    const dir = fs.mkdtempSync(path.join(standin.dir, "poll-"))
    const started = Date.now()
    const argv = [...fixedStory(standin.modelPath, port), "--mem-fraction-static", "0.99"]
    const script = [
      `export STANDIN_PHASE_SECONDS=0.02 STANDIN_STAMP_FILE=${standin.stampFile}`,
      `nohup ${standin.venv}/bin/python -m sglang.launch_server ${argv.join(" ")} > ${dir}/log 2>&1 < /dev/null &`,
      "pid=$!",
      "while sleep 30; do kill -0 $pid 2>/dev/null || break; done",
      "date +%s%3N"
    ].join("\n")
    // one baseline poll lasts 30 s: run ssh with a longer timeout of its own
    const stdout = yield* Effect.async<string>((resume) => {
      execFile("ssh", Sshd.sshArgs(sshd, script), { timeout: 120_000 }, (_error, out) =>
        resume(Effect.succeed(out))
      )
    })
    const detected = Number(stdout.trim().split("\n").at(-1))
    const crash = stampsSince(standin, "crash", started)[0]
    if (crash === undefined || !Number.isFinite(detected)) {
      return yield* Effect.dieMessage(`baseline run failed: ${stdout}`)
    }
    return detected - crash.ms
  })

/** (b) one launch to ready: total minus the server's own start→ready; then stopped. */
const overheadOnce = (standin: Standin.Standin) =>
  Effect.gen(function* () {
    const port = yield* freePort
    const name = newName("ok")
    const started = Date.now()
    yield* Launch.launchDeployment({
      engine: SglangEngine.engine,
      host: alias,
      name,
      argv: fixedStory(standin.modelPath, port),
      env: standinEnv(standin, "0.05")
    })
    const total = Date.now() - started
    const start = stampsSince(standin, "start", started)[0]
    const ready = stampsSince(standin, "ready", started)[0]
    yield* Stop.stop(alias, name)
    if (start === undefined || ready === undefined) return yield* Effect.dieMessage("no start/ready stamps")
    return { total, server: ready.ms - start.ms, overhead: total - (ready.ms - start.ms) }
  })

/** (c) baseline: learning the story's two problems at runtime, one failed launch each (preflight off). */
const runtimeDiscoveryOnce = (standin: Standin.Standin) =>
  Effect.gen(function* () {
    const port = yield* freePort
    const started = Date.now()
    const env = { STANDIN_PHASE_SECONDS: "0.02" }
    const argv = [...story(standin.modelPath), "--port", String(port)]
    const first = yield* Launch.launchDeployment({
      engine: SglangEngine.engine,
      host: alias,
      name: newName("story1"),
      argv,
      env,
      preflight: false
    }).pipe(Effect.flip)
    const second = yield* Launch.launchDeployment({
      engine: SglangEngine.engine,
      host: alias,
      name: newName("story2"),
      argv: [...argv, "--mamba-scheduler-strategy", "extra_buffer"],
      env,
      preflight: false
    }).pipe(Effect.flip)
    if (first._tag !== "MissingSchedulerStrategy" || second._tag !== "AssertionFailure") {
      return yield* Effect.dieMessage(
        `expected the story's two runtime failures, got ${first._tag}, ${second._tag}`
      )
    }
    return Date.now() - started
  })

/** (c) the story's command checked offline, in-process. */
const checkOnce = Effect.gen(function* () {
  const started = performance.now()
  const exit = yield* Check.offline({
    argv: story("/root/models/Qwen3.6-27B"),
    modelConfig: qwen36_27b,
    gpus: { count: 2, computeCapability: "8.6", memoryGiB: 48 }
  }).pipe(Effect.exit)
  const took = performance.now() - started
  if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail" || exit.cause.error._tag !== "LaunchRulesViolated") {
    return yield* Effect.dieMessage("expected LaunchRulesViolated for the story's command")
  }
  return took
})

const program = Effect.gen(function* () {
  // (c) first: needs no sshd
  for (let i = 0; i < 20; i++) yield* checkOnce // warm up the JIT and the catalogue
  const checks: Array<number> = []
  for (let i = 0; i < 200; i++) checks.push(yield* checkOnce)
  const checkMedian = median(checks)

  const host = yield* startHost
  const { standin, sshd } = host
  const live = liveLayer(host)

  const { detections, overheads, discoveries } = yield* Effect.gen(function* () {
    const detections: Array<{ event: number; error: number }> = []
    for (let i = 0; i < RUNS; i++) detections.push(yield* detectOnce(standin))
    const overheads: Array<{ total: number; server: number; overhead: number }> = []
    for (let i = 0; i < 5; i++) overheads.push(yield* overheadOnce(standin))
    const discoveries: Array<number> = []
    for (let i = 0; i < 3; i++) discoveries.push(yield* runtimeDiscoveryOnce(standin))
    return { detections, overheads, discoveries }
  }).pipe(Effect.provide(live))

  const polls: Array<number> = []
  for (let i = 0; i < BASELINE_RUNS; i++) polls.push(yield* pollOnce(standin, sshd))

  const detectMedian = median(detections.map((d) => d.error))
  const eventMedian = median(detections.map((d) => d.event))
  const pollMedian = median(polls)
  const overheadMedian = median(overheads.map((o) => o.overhead))
  console.log("(a) failure detection: crash line written on the host -> typed error in the caller")
  console.log(
    `    mlops, first typed failure event in the stream: median ${ms(eventMedian)} over ${detections.length} runs`
  )
  console.log(
    `    mlops, the launch's typed error (group stopped):  median ${ms(detectMedian)} over ${detections.length} runs`
  )
  console.log(
    `    baseline nohup + 'sleep 30' poll:                median ${ms(pollMedian)} over ${polls.length} run(s)`
  )
  console.log(
    `    ratio baseline/mlops: ${(pollMedian / eventMedian).toFixed(0)}x (event), ${(pollMedian / detectMedian).toFixed(0)}x (error); a poll at a random phase would average 15 s`
  )
  console.log("(b) launch overhead: total launch time minus the server's own start->ready time")
  console.log(
    `    median total ${ms(median(overheads.map((o) => o.total)))}, server ${ms(median(overheads.map((o) => o.server)))}, overhead ${ms(overheadMedian)} (target < 1500 ms: ${overheadMedian < 1500 ? "met" : "MISSED"})`
  )
  console.log("(c) argument check: the story's command, offline, in-process")
  console.log(
    `    median ${ms(checkMedian)} over ${checks.length} runs (target < 50 ms: ${checkMedian < 50 ? "met" : "MISSED"})`
  )
  const discoveryMedian = median(discoveries)
  console.log(
    `    baseline: both problems met at runtime (two failed launches of the stand-in, mlops detection): median ${ms(discoveryMedian)}; ratio ${(discoveryMedian / checkMedian).toFixed(0)}x`
  )
  // deployments live in the stand-in's state directory (hosts.json `stateDir`), removed with
  // its temp dir when the scope closes
}).pipe(Effect.scoped)

Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
