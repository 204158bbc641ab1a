/**
 * The Python environment on a real host (the test sshd, this machine): SGLang from a source
 * checkout on PYTHONPATH (no dist-info) is found and launched, its version read from
 * `version.py`; a `--python` without SGLang is refused naming the environment that has it.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import * as Stop from "@mlops/serve/Stop"
import { Context, Effect, Layer, Stream } from "effect"
import type * as Sshd from "../../../core/test/support/Sshd.js"
import * as Serving from "../support/serving.js"
import type * as Standin from "./standin/install.js"
import { alias, fixedStory, freePort, liveLayer, removeDeployment, standinEnv, startHost } from "./support.js"

class Host extends Context.Tag("test/PythonEnvHost")<
  Host,
  {
    readonly standin: Standin.Standin
    readonly sshd: Sshd.Sshd
    /** A venv with no SGLang in it. */
    readonly bare: string
    /** A source checkout's `python/` directory: `sglang/` without any dist-info. */
    readonly checkout: string
  }
>() {}

const standinSource = path.join(path.dirname(fileURLToPath(import.meta.url)), "standin", "sglang")

const HostLayer = Layer.scoped(
  Host,
  Effect.gen(function* () {
    const host = yield* startHost
    const bare = path.join(host.standin.dir, "bare-venv")
    execFileSync("python3", ["-m", "venv", "--without-pip", bare])
    const checkout = path.join(host.standin.dir, "src", "sglang", "python")
    fs.cpSync(standinSource, path.join(checkout, "sglang"), { recursive: true })
    return { ...host, bare, checkout }
  })
)

const TestLayer = Layer.unwrapEffect(Effect.map(Host, liveLayer)).pipe(Layer.provideMerge(HostLayer))

describe("Python environments on a real host", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.scoped("a source checkout on PYTHONPATH: found, version from version.py, and it launches", () =>
      Effect.gen(function* () {
        const { standin, bare, checkout } = yield* Host
        const name = `pyenv-src-${process.pid}`
        yield* Effect.addFinalizer(() =>
          Stop.stop(alias, name).pipe(
            Effect.ignore,
            Effect.zipRight(Effect.sync(() => removeDeployment(standin, name)))
          )
        )
        const port = yield* freePort
        const events = yield* Serving.launch({
          host: alias,
          name,
          runtime: PythonEnvRuntime.spec(bare),
          argv: fixedStory(standin.modelPath, port),
          env: { ...standinEnv(standin), PYTHONPATH: checkout }
        }).pipe(Stream.runCollect)
        const all = [...events]
        const python = all.find((e) => e._tag === "Python")
        assert.strictEqual(python?._tag, "Python")
        if (python?._tag !== "Python") return
        assert.strictEqual(python.python.source, "--python")
        assert.strictEqual(python.python.engineVersion, "0.5.11")
        assert.strictEqual(python.python.versionSource, "version.py")
        assert.strictEqual(python.python.location, path.join(checkout, "sglang"))
        assert.strictEqual(all.at(-1)?._tag, "Launched")
      })
    )

    it.scoped("--python without SGLang: refused, naming where SGLang is and both ways to set it", () =>
      Effect.gen(function* () {
        const { standin, bare } = yield* Host
        const port = yield* freePort
        const error = yield* Effect.flip(
          Serving.launchDeployment({
            host: alias,
            name: `pyenv-bare-${process.pid}`,
            runtime: PythonEnvRuntime.spec(bare),
            argv: fixedStory(standin.modelPath, port),
            env: standinEnv(standin)
          })
        )
        assert.strictEqual(error._tag, "PythonEnvUnusable")
        if (error._tag !== "PythonEnvUnusable") return
        assert.include(error.reason, "SGLang is not installed in this environment (set by --python)")
        // the stand-in's venv is first on the test host's PATH: its python3 has SGLang
        assert.include(error.reason, `is in ${standin.venv}/bin/python3`)
        assert.include(error.fix, `--python ${standin.venv}/bin/python3`)
        assert.include(error.fix, "hosts.json")
      })
    )
  })
})
