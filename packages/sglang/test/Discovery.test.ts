/**
 * One way to find the engine, on the fake host: its SGLang a source checkout (importable, no
 * package metadata: the version only in `sglang/version.py`), found by the same discovery script
 * a real host runs, through `launch`, `check --host`, `flags --host` (`Installed.onHost`) and
 * the upgrade check from the host: all four name the same interpreter and version.
 */
import { assert, describe, it } from "@effect/vitest"
import { FakeHost } from "@mlops/core/testing"
import { pythonJson } from "@mlops/serve/SimHost"
import { Effect, Stream } from "effect"
import * as Check from "../src/Check.js"
import * as Installed from "../src/Installed.js"
import * as Python from "../src/internal/sim/python.js"
import * as Simulator from "../src/Simulator.js"
import * as Upgrade from "../src/Upgrade.js"
import * as Serving from "./support/serving.js"
import { drive, fixedArgv } from "./support/sim.js"

const prefix = "/opt/src-env"
const interpreter = `${prefix}/bin/python`
const checkout = "/opt/src/sglang/python/sglang"

/**
 * The checkout's interpreter: the discovery probe reads what Python would (the package where
 * the `.pth` puts it, no distribution, its `version.py`); everything else runs as the sim's
 * Python does.
 */
const sourcePython: FakeHost.Program = {
  match: (argv) => argv[0] === interpreter,
  run: (ctx) =>
    Effect.gen(function* () {
      const [, option, code] = ctx.argv
      if (option === "-c" && code?.includes("importlib") && ctx.argv[3] === "sglang") {
        const text = (yield* ctx.fs.readText(`${checkout}/version.py`)) ?? ""
        const version = /__version__\s*=\s*"([^"]+)"/.exec(text)?.[1] ?? null
        yield* ctx.stdout.line(
          pythonJson({
            executable: interpreter,
            version: "3.12.3",
            found: true,
            packageVersion: version,
            versionSource: version === null ? null : "version.py",
            location: checkout,
            fileHashes: {}
          })
        )
        return 0
      }
      return yield* Python.program.run(ctx)
    })
}

const sim = Simulator.makeHostSpec()
const host = FakeHost.layer([
  {
    ...sim,
    python: prefix,
    files: {
      ...sim.files,
      [interpreter]: "#!python\n",
      [`${checkout}/__init__.py`]: "",
      [`${checkout}/version.py`]: '__version__ = "0.5.11"\n'
    },
    programs: [...(sim.programs ?? []), sourcePython]
  }
])

describe("one discovery path (fake host)", () => {
  it.effect(
    "a source checkout (no metadata): launch, check --host, flags --host and the upgrade check agree on interpreter and version",
    () =>
      Effect.gen(function* () {
        const checked = yield* Check.host({ host: "sim", argv: fixedArgv })
        const listed = yield* Installed.onHost({ host: "sim" })
        const upgraded = yield* Upgrade.fromHost({ host: "sim", argv: fixedArgv, to: "0.5.15" })
        const events = yield* drive(Serving.launch({ host: "sim", argv: fixedArgv }).pipe(Stream.runCollect))
        const python = [...events].find((e) => e._tag === "Python")
        const launched = python?._tag === "Python" ? python.python : undefined
        const seen = [
          ["check --host", checked.python?.interpreter, checked.version, checked.python?.versionSource],
          ["flags --host", listed.located.interpreter, listed.version, listed.located.versionSource],
          ["upgrade", upgraded.installed?.interpreter, upgraded.from, upgraded.installed?.versionSource],
          ["launch", launched?.interpreter, launched?.engineVersion, launched?.versionSource]
        ]
        assert.deepStrictEqual(
          seen,
          seen.map(([command]) => [command, interpreter, "0.5.11", "version.py"])
        )
        assert.strictEqual([...events].at(-1)?._tag, "Launched")
      }).pipe(Effect.provide(host))
  )
})
