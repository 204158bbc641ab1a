/**
 * One way to find the engine: a host whose SGLang is a source checkout (importable through a
 * `.pth` file of its venv, no package metadata: the version is only in `sglang/version.py`),
 * run through `launch`, `check --host`, `flags --host` and `check --target-version --host`
 * over the real test sshd. All four name the same interpreter and version.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type * as Sshd from "../../../core/test/support/Sshd.js"
import type * as Standin from "../../../sglang/test/integration/standin/install.js"
import { alias, fixedStory, freePort, startHost } from "../../../sglang/test/integration/support.js"
import { ExitCode } from "../../src/ExitCodes.js"
import { mlopsOn } from "../support/run.js"

const standinSource = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../sglang/test/integration/standin/sglang"
)

class Host extends Context.Tag("test/SourceCheckoutHost")<
  Host,
  {
    readonly standin: Standin.Standin
    readonly sshd: Sshd.Sshd
    /** A venv whose SGLang is a source checkout through a `.pth` file. */
    readonly venv: string
  }
>() {}

const HostLayer = Layer.scoped(
  Host,
  Effect.gen(function* () {
    const { standin, sshd } = yield* startHost
    const venv = path.join(standin.dir, "src-venv")
    execFileSync("python3", ["-m", "venv", "--without-pip", venv])
    const checkout = path.join(standin.dir, "src", "sglang", "python")
    fs.cpSync(standinSource, path.join(checkout, "sglang"), { recursive: true })
    const lib = path.join(venv, "lib")
    const site = path.join(lib, fs.readdirSync(lib).find((d) => d.startsWith("python"))!, "site-packages")
    fs.writeFileSync(path.join(site, "sglang-checkout.pth"), `${checkout}\n`)
    // the host's hosts.json entry names that venv
    fs.writeFileSync(
      path.join(standin.mlopsHome, "hosts.json"),
      JSON.stringify({ hosts: { [alias]: { python: venv, stateDir: standin.stateDir } } })
    )
    return { standin, sshd, venv }
  })
)

const lastJson = (lines: ReadonlyArray<string>) =>
  JSON.parse(lines.filter((l) => l.trim() !== "").at(-1)!) as Record<string, unknown>

describe("one discovery path", () => {
  layer(HostLayer, { excludeTestServices: true, timeout: "180 seconds" })((it) => {
    it.scoped(
      "a source checkout (no metadata): launch, check --host, flags --host and check --target-version --host agree on interpreter and version",
      () =>
        Effect.gen(function* () {
          const { standin, sshd, venv } = yield* Host
          const run = mlopsOn(sshd.sshConfigPath, standin.mlopsHome)
          const interpreter = path.join(venv, "bin", "python")
          const flags = fixedStory(standin.modelPath, yield* freePort)

          const check = yield* run("check", "--host", alias, "--json", "--", ...flags)
          assert.strictEqual(check.code, ExitCode.Ok, check.text)
          const checked = lastJson(check.stdout) as {
            version: string
            python: { interpreter: string; versionSource: string }
          }

          const listed = yield* run("flags", "--host", alias, "--json", "speculative-num-steps")
          assert.strictEqual(listed.code, ExitCode.Ok, listed.text)
          const flagsOf = lastJson(listed.stdout) as {
            version: string
            python: { interpreter: string; engineVersion: string; versionSource: string }
          }

          const upgrade = yield* run(
            "check",
            "--host",
            alias,
            "--target-version",
            "0.5.15",
            "--json",
            "--",
            ...flags
          )
          assert.include([ExitCode.Ok, ExitCode.RulesViolated], upgrade.code, upgrade.text)
          const upgraded = lastJson(upgrade.stdout) as {
            from: string
            installed: { interpreter: string; versionSource: string }
          }

          // whatever the assertions say, nothing is left running
          yield* Effect.addFinalizer(() =>
            Effect.ignore(run("stop", "--host", alias, "--name", "from-source"))
          )
          const launch = yield* run(
            "launch",
            "--host",
            alias,
            "--name",
            "from-source",
            "--json",
            "--env",
            "STANDIN_PHASE_SECONDS=0.02",
            "--",
            ...flags
          )
          assert.strictEqual(launch.code, ExitCode.Ok, launch.text)
          const python = launch.stdout
            .filter((l) => l.includes('"_tag":"Python"'))
            .map(
              (l) =>
                JSON.parse(l) as {
                  python: { interpreter: string; engineVersion: string; versionSource: string }
                }
            )[0]

          const seen = [
            ["check --host", checked.python.interpreter, checked.version, checked.python.versionSource],
            [
              "flags --host",
              flagsOf.python.interpreter,
              flagsOf.python.engineVersion,
              flagsOf.python.versionSource
            ],
            [
              "check --target-version --host",
              upgraded.installed.interpreter,
              upgraded.from,
              upgraded.installed.versionSource
            ],
            ["launch", python?.python.interpreter, python?.python.engineVersion, python?.python.versionSource]
          ]
          assert.deepStrictEqual(
            seen,
            seen.map(([command]) => [command, interpreter, "0.5.11", "version.py"])
          )
        })
    )
  })
})
