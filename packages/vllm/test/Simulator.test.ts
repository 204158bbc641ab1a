/**
 * The simulated vLLM on a fake host: its environment is found by the discovery script, `vllm serve`
 * refuses like vLLM's parser and first check, and a good command prints vLLM's start-up lines
 * (read back by the vLLM classifier up to ready) and serves the OpenAI routes.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool, RemoteCommand, RemoteProcess } from "@mlops/core"
import { FakeHost } from "@mlops/core/testing"
import { classifyText } from "@mlops/serve/Classifier"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import * as SimDecoding from "@mlops/serve/SimDecoding"
import { Effect, Ref, TestClock } from "effect"
import { VllmEngine } from "../src/Engine.js"
import { handler } from "../src/internal/sim/http.js"
import { logs } from "../src/Logs.js"
import { qwen25_7b } from "./fixtures/models.js"

const modelDir = "/root/models/Qwen2.5-7B-Instruct"
const vllm = `${VllmEngine.sim.prefix}/bin/vllm`
const spec: FakeHost.FakeHostSpec = {
  alias: "sim",
  hostname: "sim.local",
  user: "root",
  home: "/root",
  python: VllmEngine.sim.prefix,
  files: { ...VllmEngine.sim.files(), [`${modelDir}/config.json`]: JSON.stringify(qwen25_7b) },
  programs: [...VllmEngine.sim.programs, FakeHost.ss]
}
const connect = Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get("sim"))
const serve = (argv: ReadonlyArray<string>) => RemoteCommand.make([vllm, "serve", ...argv])
const turn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

describe("simulated vLLM", () => {
  it.effect("its environment is found with vLLM's version, as on a real host (the discovery script)", () =>
    Effect.gen(function* () {
      const located = yield* PythonEnvRuntime.choose(yield* connect, {
        engine: VllmEngine,
        explicit: undefined,
        env: {}
      })
      assert.deepStrictEqual(
        [located.interpreter, located.engineVersion, located.versionSource, located.source],
        [`${VllmEngine.sim.prefix}/bin/python`, VllmEngine.sim.defaultVersion, "metadata", "hosts.json"]
      )
    }).pipe(Effect.provide(FakeHost.layer([spec])))
  )

  it.effect("refuses an unknown flag like argparse (exit 2) and a bad TP like vLLM's check (exit 1)", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const typo = yield* conn.exec(serve([modelDir, "--tensor-paralel-size", "2"]))
      assert.strictEqual(typo.exitCode, 2)
      assert.include(typo.stderr, "vllm serve: error: unrecognized arguments: --tensor-paralel-size")
      const heads = yield* conn.exec(serve([modelDir, "-tp", "8"]))
      assert.strictEqual(heads.exitCode, 1)
      assert.include(
        heads.stderr,
        "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8)."
      )
    }).pipe(Effect.provide(FakeHost.layer([spec])))
  )

  it.effect("starts: vLLM's lines in order, read by the classifier to ready", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      yield* RemoteProcess.spawnDetached(conn, serve([modelDir, "--max-model-len", "8192"]), {
        runDir: "/root/runs/a"
      })
      for (let i = 0; i < 200; i++) {
        yield* turn
        yield* TestClock.adjust(100)
      }
      const text = (yield* (yield* FakeHost.host("sim")).fs.readText("/root/runs/a/log")) ?? ""
      assert.include(text, "vLLM API server version 0.13.0")
      assert.include(text, "INFO:     Application startup complete.")
      const { events, failure } = classifyText(text, undefined, [logs])
      assert.isUndefined(failure)
      assert.isTrue(events.some((e) => e._tag === "Ready"))
      assert.deepInclude(
        events.find((e) => e._tag === "Listening"),
        { url: "http://0.0.0.0:8000" }
      )
    }).pipe(Effect.provide(FakeHost.layer([spec])))
  )

  it.effect("fails at the KV-cache step when one sequence of max_model_len does not fit", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      yield* RemoteProcess.spawnDetached(conn, serve([modelDir, "--gpu-memory-utilization", "0.35"]), {
        runDir: "/root/runs/b"
      })
      for (let i = 0; i < 200; i++) {
        yield* turn
        yield* TestClock.adjust(100)
      }
      const text = (yield* (yield* FakeHost.host("sim")).fs.readText("/root/runs/b/log")) ?? ""
      const { failure } = classifyText(text, { exitCode: 1 }, [logs])
      assert.strictEqual(failure?._tag, "OOM")
      assert.isNumber(failure?.fix?.flags?.["--max-model-len"])
    }).pipe(Effect.provide(FakeHost.layer([spec])))
  )

  it.effect("serves /health once up, /v1/models with the served name and root, and completions", () =>
    Effect.gen(function* () {
      const ready = yield* Ref.make(false)
      const h = handler({
        served: "qwen",
        root: modelDir,
        version: "0.13.0",
        ready,
        apiKey: "k",
        maxModelLen: 32768,
        decoder: yield* SimDecoding.make(SimDecoding.defaults, undefined)
      })
      const get = (path: string, headers: Record<string, string> = {}) =>
        h({ method: "GET", path, headers, body: "" })
      assert.strictEqual((yield* get("/health")).status, 503)
      yield* Ref.set(ready, true)
      assert.strictEqual((yield* get("/health")).status, 200)
      assert.strictEqual((yield* get("/v1/models")).status, 401)
      const models = yield* get("/v1/models", { authorization: "Bearer k" })
      assert.deepInclude(JSON.parse(models.body as string).data[0], { id: "qwen", root: modelDir })
      const done = yield* h({
        method: "POST",
        path: "/v1/completions",
        headers: { authorization: "Bearer k" },
        body: JSON.stringify({ model: "qwen", prompt: "Hello", max_tokens: 1 })
      })
      assert.strictEqual(done.status, 200)
    })
  )
})
