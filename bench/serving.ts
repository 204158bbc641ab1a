/**
 * `mlops bench`'s own cost, measured in this run against the stand-in SGLang over the test sshd
 * (its streams paced at a configured rate: 20 ms steps, no speculative decoding, no batch
 * slowdown, so a request of N tokens takes N steps):
 *
 * (a) its output tokens/s vs the rate the stand-in was configured with, at concurrency 1 and 64
 *     (the rest is the stand-in's own scheduling, ssh's forward and the client);
 *     and a reference client's (Python threads on the host itself, no ssh) at the same load, so
 *     what the stand-in loses on its own is told from what mlops' client and ssh cost;
 * (b) time to first token as `Bench` reports it (p50, through the connection's forward) vs as
 *     `curl -N` sees it on the host itself (the first `data:` chunk with text, median of the same
 *     number of requests, one at a time);
 * (c) a launcher killed (SIGKILL, as the OOM killer would) while a benchmark runs at
 *     concurrency 8 → the run's `ServerDiedDuringBench` in the caller, over BENCH_RUNS (5) kills
 *     (goal: within 1 s).
 *
 *   npx tsx bench/serving.ts      (or `npm run bench`, which runs every bench)
 */
import { execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Bench from "@mlops/serve/Bench"
import * as Stop from "@mlops/serve/Stop"
import { Effect, Fiber } from "effect"
import * as Sshd from "../packages/core/test/support/Sshd.js"
import * as Standin from "../packages/sglang/test/integration/standin/install.js"
import {
  alias,
  deploymentDir,
  freePort,
  liveLayer,
  standinEnv
} from "../packages/sglang/test/integration/support.js"
import * as Serving from "../packages/sglang/test/support/serving.js"
import { median } from "./support/stats.js"

const STEP_MS = 20
const OUTPUT = 64
const REQUESTS = 20
const RUNS = Number(process.env.BENCH_RUNS ?? 5)

/** One streamed completion with curl on this machine (the test host): ms to its first text chunk. */
const curlFirstToken = (port: number, model: string) =>
  Effect.async<number, Error>((resume) => {
    const body = JSON.stringify({
      model,
      prompt: "The capital city of France is",
      max_tokens: 8,
      stream: true
    })
    const started = performance.now()
    const curl = spawn("curl", [
      "-sN",
      "--max-time",
      "30",
      "-H",
      "content-type: application/json",
      "-d",
      body,
      `http://127.0.0.1:${port}/v1/completions`
    ])
    let done = false
    curl.stdout.on("data", (chunk: Buffer) => {
      if (!done && /"text": ?"[^"]/.test(chunk.toString("utf8"))) {
        done = true
        resume(Effect.succeed(performance.now() - started))
      }
    })
    curl.on("close", () => {
      if (!done) resume(Effect.fail(new Error("curl saw no token")))
    })
  })

/** `requests` streamed completions, `concurrency` at a time, by Python threads on this machine: tokens/s. */
const referenceClient = (port: number, model: string, concurrency: number, requests: number) =>
  Effect.async<number, Error>((resume) => {
    const code = `
import json, sys, threading, time, http.client
port, c, n, model, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
lock = threading.Lock(); left = [n]; tokens = [0]
def worker():
    while True:
        with lock:
            if left[0] == 0: return
            left[0] -= 1
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("POST", "/v1/completions", json.dumps({"model": model, "prompt": "hi", "max_tokens": out, "ignore_eos": True, "stream": True}), {"content-type": "application/json"})
        r = conn.getresponse()
        while r.read(4096): pass
        conn.close()
        with lock: tokens[0] += out
t = time.time()
ts = [threading.Thread(target=worker) for _ in range(c)]
[x.start() for x in ts]; [x.join() for x in ts]
print(tokens[0] / (time.time() - t))
`
    execFile(
      "python3",
      ["-c", code, String(port), String(concurrency), String(requests), model, String(OUTPUT)],
      (error, stdout) =>
        error === null ? resume(Effect.succeed(Number(stdout.trim()))) : resume(Effect.fail(error))
    )
  })

const program = Effect.gen(function* () {
  const standin = yield* Standin.install
  standin.writeHostsFile(alias)
  const sshd = yield* Sshd.start({ extraConfig: standin.sshdConfig })
  // the deployment's stop runs in this scope, while the connection layer is still up
  return yield* Effect.scoped(
    Effect.gen(function* () {
      const port = yield* freePort
      const name = `bench-serving-${process.pid}`
      yield* Serving.launchDeployment({
        host: alias,
        name,
        argv: ["--model-path", standin.modelPath, "--tp", "2", "--port", String(port), "--enable-metrics"],
        env: { ...standinEnv(standin), STANDIN_STEP_MS: String(STEP_MS), STANDIN_BATCH_SLOWDOWN: "0" }
      })
      yield* Effect.addFinalizer(() => Stop.stop(alias, name).pipe(Effect.ignore))
      const result = yield* Bench.run(alias, name, Serving.engines, {
        concurrency: [1, 64],
        requests: 64,
        outputTokens: OUTPUT,
        inputTokens: 32
      })
      console.log(`stand-in pace: ${STEP_MS} ms a token per request, ${OUTPUT} tokens a request`)
      for (const level of result.levels) {
        // each request takes OUTPUT steps; `requests` of them, `concurrency` at a time, in waves
        const waves = Math.ceil(level.requests / level.concurrency)
        const configured = (level.requests * OUTPUT) / ((waves * OUTPUT * STEP_MS) / 1000)
        const reference = yield* referenceClient(port, standin.modelPath, level.concurrency, level.requests)
        console.log(
          `(a) concurrency ${String(level.concurrency).padStart(2)}: mlops ${level.outputTokensPerS.toFixed(0)} tokens/s vs configured ${configured.toFixed(0)}: ratio ${(level.outputTokensPerS / configured).toFixed(3)} (errors ${level.errors}); reference client on the host ${reference.toFixed(0)} tokens/s: ratio ${(reference / configured).toFixed(3)}`
        )
      }
      const mlopsTtft = yield* Bench.run(alias, name, Serving.engines, {
        concurrency: [1],
        requests: REQUESTS,
        outputTokens: 8,
        inputTokens: 6
      })
      const curl: Array<number> = []
      for (let i = 0; i < REQUESTS; i++) curl.push(yield* curlFirstToken(port, standin.modelPath))
      const ours = mlopsTtft.levels[0]!.ttftMs.p50!
      console.log(
        `(b) TTFT p50: mlops ${ours.toFixed(1)} ms (through ssh) vs curl ${median(curl).toFixed(1)} ms (on the host): +${(ours - median(curl)).toFixed(1)} ms, ratio ${(ours / median(curl)).toFixed(2)}; one step is ${STEP_MS} ms`
      )
      // its GPUs for the next ones
      yield* Stop.stop(alias, name)
      const deaths: Array<number> = []
      for (let run = 0; run < RUNS; run++) {
        const doomed = `bench-serving-kill-${process.pid}-${run}`
        yield* Serving.launchDeployment({
          host: alias,
          name: doomed,
          argv: ["--model-path", standin.modelPath, "--tp", "2", "--port", String(yield* freePort)],
          env: { ...standinEnv(standin), STANDIN_STEP_MS: String(STEP_MS) }
        })
        const running = yield* Effect.fork(
          Effect.flip(
            Bench.run(alias, doomed, Serving.engines, {
              concurrency: [8],
              requests: 10_000,
              outputTokens: 256
            })
          )
        )
        yield* Effect.sleep("1 second")
        const pid = Number(fs.readFileSync(path.join(deploymentDir(standin, doomed), "pid"), "utf8").trim())
        const killedAt = performance.now()
        process.kill(pid, "SIGKILL")
        const error = yield* Fiber.join(running)
        deaths.push(performance.now() - killedAt)
        if (error._tag !== "ServerDiedDuringBench")
          console.log(`    run ${run}: ${error._tag}, not ServerDiedDuringBench`)
        yield* Stop.stop(alias, doomed).pipe(Effect.ignore)
      }
      console.log(
        `(c) launcher killed mid-bench → ServerDiedDuringBench: median ${median(deaths).toFixed(0)} ms, max ${Math.max(...deaths).toFixed(0)} ms over ${RUNS} (goal < 1000 ms)`
      )
    })
  ).pipe(Effect.provide(liveLayer({ standin, sshd })))
})

Effect.runPromise(Effect.scoped(program)).catch((error) => {
  console.error(error)
  process.exit(1)
})
