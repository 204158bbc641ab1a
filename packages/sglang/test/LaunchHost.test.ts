/**
 * A launch against what the host really has, on the simulated host: the Python environment it
 * chooses (and says so), every host problem at once in a fixed order, secrets kept out of
 * everything it emits or stores, and idempotence on what SGLang would run rather than the text.
 */
import { assert, describe, it } from "@effect/vitest"
import { FakeHost } from "@mlops/core/testing"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import { Chunk, Effect, Stream } from "effect"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"
import { drive, fixedArgv, storyArgv } from "./support/sim.js"

const env = { SGLANG_ENABLE_SPEC_V2: "1" }

const events = (request: Serving.Request) =>
  drive(Stream.runCollect(Serving.launch(request)).pipe(Effect.map(Chunk.toReadonlyArray)))

/** A sim whose hosts.json has no `python` (a host mlops knows nothing about). */
const { python: _python, ...withoutPython } = Simulator.makeHostSpec()
const unconfigured = FakeHost.layer([withoutPython])

describe("Launch on the host it finds", () => {
  it.effect("no Python setting: the environment with SGLang is discovered, and the launch says which", () =>
    Effect.gen(function* () {
      const all = yield* events({ host: "sim", argv: fixedArgv, env })
      const python = all.find((e) => e._tag === "Python")
      assert.isDefined(python)
      if (python?._tag !== "Python") return
      assert.strictEqual(python.python.source, "discovered")
      assert.strictEqual(python.python.setting, "~/ml-env")
      assert.strictEqual(python.python.engineVersion, "0.5.11")
      // the discovery script found it (as on a real host): `$HOME/ml-env`
      assert.deepStrictEqual(
        [python.python.how, python.python.interpreter],
        ["home", "/root/ml-env/bin/python"]
      )
      const spawned = all.find((e) => e._tag === "Spawned")
      assert.include(
        spawned?._tag === "Spawned" ? spawned.commandLine : "",
        "/root/ml-env/bin/python -m sglang.launch_server"
      )
      assert.strictEqual(all.at(-1)?._tag, "Launched")
    }).pipe(Effect.provide(unconfigured))
  )

  it.effect(
    "--python without SGLang: refused naming the environment that has it, and both ways to set it",
    () =>
      Effect.gen(function* () {
        const handle = yield* FakeHost.host("sim")
        yield* handle.fs.write("/opt/empty/bin/python", "#!simulated python\n")
        const error = yield* Effect.flip(
          drive(
            Serving.launchDeployment({
              host: "sim",
              argv: fixedArgv,
              env,
              runtime: PythonEnvRuntime.spec("/opt/nothing")
            })
          )
        )
        assert.strictEqual(error._tag, "PythonEnvUnusable")
        if (error._tag !== "PythonEnvUnusable") return
        assert.include(error.reason, "set by --python")
        assert.include(error.fix, "--python ~/ml-env")
        assert.include(error.fix, '"python": "~/ml-env"')
        assert.include(error.fix, "hosts.json")
      }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("every host problem at once, always in the same order: Python env, GPUs, model", () =>
    Effect.gen(function* () {
      const argv = ["--model-path", "/root/models/missing", "--tp", "4"]
      const once = Effect.flip(
        drive(Serving.launchDeployment({ host: "sim", argv, runtime: PythonEnvRuntime.spec("/opt/nothing") }))
      )
      const first = yield* once
      const second = yield* once
      for (const error of [first, second]) {
        assert.strictEqual(error._tag, "HostNotReady")
        if (error._tag !== "HostNotReady") return
        assert.deepStrictEqual(
          error.problems.map((p) => p._tag),
          ["PythonEnvUnusable", "NotEnoughGpus", "ModelNotFound"]
        )
        assert.include(error.message, "3 problems")
      }
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "secrets: no --env value or --api-key value in any event or file; the server still gets them",
    () =>
      Effect.gen(function* () {
        const token = "hf_simSecretToken123"
        const key = "sk-simSecretKey456"
        const all = yield* events({
          host: "sim",
          name: "secret",
          argv: [...fixedArgv, "--api-key", key],
          env: { ...env, HF_TOKEN: token }
        })
        assert.strictEqual(all.at(-1)?._tag, "Launched")
        const handle = yield* FakeHost.host("sim")
        const files = yield* handle.exportFiles
        const texts = [
          JSON.stringify(all),
          ...files.map((f) => new TextDecoder().decode(f.data)),
          ...(yield* handle.processes).map((p) => p.argv.join(" "))
        ]
        for (const text of texts) {
          assert.notInclude(text, token)
          assert.notInclude(text, key)
        }
        const last = all.at(-1)
        if (last?._tag !== "Launched") return
        assert.deepStrictEqual(last.deployment.envNames, ["HF_TOKEN", "SGLANG_ENABLE_SPEC_V2"])
        assert.deepStrictEqual(last.deployment.argv.slice(-2), ["--api-key", "***"])
        assert.strictEqual(last.deployment.args?.api_key, "***")
        // the server process has the real values in its environment (its own business)
        const server = (yield* handle.processes).find((p) => p.pid === Serving.pidOf(last.deployment))
        assert.strictEqual(server?.env.HF_TOKEN, token)
      }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("the same launch in another spelling, order and with explicit defaults is already running", () =>
    Effect.gen(function* () {
      const first = yield* drive(Serving.launchDeployment({ host: "sim", name: "q", argv: fixedArgv, env }))
      // --tp-size for --tp, flags reordered, the default port spelled out
      const respelled = [
        "--speculative-eagle-topk",
        "1",
        "--tp-size",
        "2",
        "--model-path",
        Simulator.modelPath,
        "--speculative-num-steps",
        "1",
        "--speculative-algorithm",
        "NEXTN",
        "--speculative-num-draft-tokens",
        "1",
        "--port",
        "30000",
        "--mamba-scheduler-strategy",
        "extra_buffer"
      ]
      const again = yield* events({ host: "sim", name: "q", argv: respelled, env })
      assert.deepStrictEqual(
        again.map((e) => e._tag),
        ["Connected", "AlreadyRunning", "Launched"]
      )
      const last = again.at(-1)
      if (last?._tag === "Launched") assert.strictEqual(Serving.pidOf(last.deployment), Serving.pidOf(first))
      // other environment values (same names): not the same launch
      const changed = yield* Effect.flip(
        drive(
          Serving.launchDeployment({
            host: "sim",
            name: "q",
            argv: respelled,
            env: { SGLANG_ENABLE_SPEC_V2: "0" }
          })
        )
      )
      assert.strictEqual(changed._tag, "DeploymentExists")
      if (changed._tag === "DeploymentExists") assert.include(changed.reason, "environment values")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "after --auto-fix, the argv it ran with is already running (the command mlops prints to paste)",
    () =>
      Effect.gen(function* () {
        const fixed = yield* drive(
          Serving.launchDeployment({ host: "sim", name: "story", argv: storyArgv, env, autoFix: 3 })
        )
        assert.notDeepEqual([...fixed.argv], [...storyArgv])
        const pasted = yield* events({ host: "sim", name: "story", argv: fixed.argv, env })
        assert.deepStrictEqual(
          pasted.map((e) => e._tag),
          ["Connected", "AlreadyRunning", "Launched"]
        )
      }).pipe(Effect.provide(Simulator.layer))
  )
})
