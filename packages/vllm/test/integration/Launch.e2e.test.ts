/**
 * vLLM end to end over a real sshd on 127.0.0.1 with the live ssh2 layer: the stand-in vLLM
 * (test/integration/standin/, written from the reference facts, not from mlops' code) in a
 * throwaway venv is launched through the serving layer with `VllmEngine`, classified, checked
 * ready (`/health`, `/v1/models`, one completion) and stopped, as a real one would be.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import * as Launch from "@mlops/serve/Launch"
import * as Stop from "@mlops/serve/Stop"
import { Effect, Exit, Stream } from "effect"
import { VllmEngine } from "../../src/Engine.js"
import type * as Standin from "./standin/install.js"

import { alias, E2E, freePort, TestLayer } from "./support.js"

/** What still runs in a deployment's process group (`pgrep -g`, zombies left out): the test host is this machine. */
const groupProcesses = (standin: Standin.VllmStandin, name: string): ReadonlyArray<string> => {
  const pgidFile = path.join(standin.stateDir, "deployments", name, "pgid")
  if (!fs.existsSync(pgidFile)) return []
  let pids: ReadonlyArray<string>
  try {
    pids = execFileSync("pgrep", ["-g", fs.readFileSync(pgidFile, "utf8").trim()], {
      encoding: "utf8"
    }).split(/\s+/)
  } catch {
    return [] // pgrep exits 1 when the group is empty
  }
  const live = (pid: string) => {
    const stat = fs.existsSync(`/proc/${pid}/stat`) ? fs.readFileSync(`/proc/${pid}/stat`, "utf8") : ""
    return stat !== "" && stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  }
  return pids
    .filter((pid) => pid !== "" && live(pid))
    .map((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim())
}

/** A fresh deployment name for this test; its deployment is stopped and its directory removed at the end. */
const freshName = (label: string) =>
  Effect.gen(function* () {
    const { standin } = yield* E2E
    const name = `vllm-${label}-${process.pid}-${Date.now().toString(36)}`
    const dir = path.join(standin.stateDir, "deployments", name)
    yield* Effect.addFinalizer(() =>
      Effect.ignore(Stop.stop(alias, name)).pipe(
        Effect.andThen(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
    )
    return name
  })

/** The stand-in, a free port and a fresh deployment name, for one test. */
const setup = (label: string) =>
  Effect.all({ standin: Effect.map(E2E, (e) => e.standin), port: freePort, name: freshName(label) })

/** `vllm serve`'s words for the stand-in: its model, on the host's loopback at `port`. */
const serveArgv = (modelPath: string, port: number, maxModelLen: number) => [
  modelPath,
  "--host",
  "127.0.0.1",
  "--port",
  String(port),
  "--max-model-len",
  String(maxModelLen)
]

describe("vLLM end to end (real sshd, stand-in vLLM)", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.scoped("launches to ready (/health, /v1/models, one completion); stop leaves nothing running", () =>
      Effect.gen(function* () {
        const { standin, port, name } = yield* setup("ok")
        const started = Date.now()
        const events = [
          ...(yield* Launch.launch({
            host: alias,
            engine: VllmEngine,
            name,
            argv: serveArgv(standin.modelPath, port, 8192),
            env: { STANDIN_PHASE_SECONDS: "0.02" }
          }).pipe(Stream.runCollect))
        ]
        const last = events.at(-1)
        assert.strictEqual(last?._tag, "Launched")
        if (last?._tag !== "Launched") return
        assert.strictEqual(last.deployment.port, port)
        const phases = last.deployment.phases.map((p) => p.phase)
        assert.deepStrictEqual(
          ["weights-loading", "kv-cache", "cuda-graph", "http-up", "ready"].filter((p) => phases.includes(p)),
          ["weights-loading", "kv-cache", "cuda-graph", "http-up", "ready"]
        )
        const checked = events.flatMap((e) =>
          e._tag === "HealthChecked" ? [`${e.endpoint} ${e.status}`] : []
        )
        // the engine's checks, then one streamed token of the model /v1/models listed
        assert.deepStrictEqual(checked, [
          "GET /health 200",
          "GET /v1/models 200",
          "POST /v1/completions 200",
          "POST /v1/completions (stream) 200"
        ])
        // the API server and its engine core run on the host
        assert.isAtLeast(groupProcesses(standin, name).filter((l) => l.includes("vllm")).length, 2)
        console.log(`vLLM e2e: ready in ${Date.now() - started} ms`)
        yield* Stop.stop(alias, name)
        assert.deepStrictEqual(groupProcesses(standin, name), [])
      })
    )

    it.scoped("a KV cache that cannot hold max_model_len is classified with the length that fits", () =>
      Effect.gen(function* () {
        const { standin, port, name } = yield* setup("kv")
        const exit = yield* Launch.launchDeployment({
          host: alias,
          engine: VllmEngine,
          name,
          argv: serveArgv(standin.modelPath, port, 131072),
          env: { STANDIN_PHASE_SECONDS: "0.02", VLLM_ALLOW_LONG_MAX_MODEL_LEN: "1" },
          preflight: false
        }).pipe(Effect.exit)
        assert.isTrue(Exit.isFailure(exit))
        const failure = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
        assert.strictEqual(failure?._tag, "OOM")
        if (failure?._tag !== "OOM") return
        // 2 × 28 layers × 4 KV heads × 128 × 2 bytes a token in 4 GiB
        assert.strictEqual(failure.fix?.flags?.["--max-model-len"], 74898)
        assert.isTrue(failure.evidence.some((e) => e.text.includes("KV cache is needed")))
        assert.deepStrictEqual(groupProcesses(standin, name), [])
      })
    )
  })
})
