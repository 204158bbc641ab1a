/**
 * Secrets end to end, over a real sshd with the stand-in SGLang: a launch with a secret
 * environment value and a secret SGLang flag, then a search of everything mlops printed
 * (human and --json, launch, status, logs, a failure with its fixed command, stop), of every
 * file under the host's state directory, and of `ps` taken while the server runs. Zero hits,
 * while the server did get both values (it answers only with the key, and has the token in its
 * environment).
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import type * as Sshd from "../../../core/test/support/Sshd.js"
import type * as Standin from "../../../sglang/test/integration/standin/install.js"
import {
  alias,
  deploymentDir,
  fixedStory,
  freePort,
  startHost,
  story
} from "../../../sglang/test/integration/support.js"
import { ExitCode } from "../../src/ExitCodes.js"
import { mlopsOn, type Ran } from "../support/run.js"

class Host extends Context.Tag("test/SecretsHost")<
  Host,
  { readonly standin: Standin.Standin; readonly sshd: Sshd.Sshd }
>() {}

const HostLayer = Layer.scoped(Host, startHost)

const random = () => Math.random().toString(36).slice(2, 14)

/** Every file under `dir`, with its text. */
const filesUnder = (dir: string): Array<{ readonly path: string; readonly text: string }> =>
  fs.existsSync(dir)
    ? fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).flatMap((entry) => {
        const file = path.join(dir, entry)
        return fs.statSync(file).isFile() ? [{ path: file, text: fs.readFileSync(file, "latin1") }] : []
      })
    : []

describe("secrets end to end (real sshd, stand-in SGLang)", () => {
  layer(HostLayer, { excludeTestServices: true, timeout: "180 seconds" })((it) => {
    it.scoped(
      "no secret in output, JSON, the host's files or ps; SGLang still gets both",
      () =>
        Effect.gen(function* () {
          const { standin, sshd } = yield* Host
          const token = `hf_${random()}${random()}`
          const apiKey = `sk-${random()}${random()}`
          const name = `secret-e2e-${process.pid}`
          const port = yield* freePort
          const run = mlopsOn(sshd.sshConfigPath, standin.mlopsHome)
          const runs: Array<Ran> = []
          const record = (ran: Ran) => {
            runs.push(ran)
            return ran
          }
          const prefix = [
            "launch",
            "--host",
            alias,
            "--name",
            name,
            "--env",
            `HF_TOKEN=${token}`,
            "--env",
            "STANDIN_PHASE_SECONDS=0.02"
          ]
          const flags = [...fixedStory(standin.modelPath, port), "--api-key", apiKey]
          // a finalizer runs uninterruptibly, where timeouts cannot fire: run it in its own fiber
          yield* Effect.addFinalizer(() =>
            run("stop", "--host", alias, "--name", name).pipe(
              Effect.interruptible,
              Effect.forkDaemon,
              Effect.flatMap(Fiber.join),
              Effect.zipRight(
                Effect.sync(() => fs.rmSync(deploymentDir(standin, name), { recursive: true, force: true }))
              )
            )
          )

          const launched = record(yield* run(...prefix, "--", ...flags))
          assert.strictEqual(launched.code, ExitCode.Ok, launched.text)
          assert.include(launched.text, `${name} is ready`)

          // while it runs: ps, the server's own environment, every mlops view of it
          const ps = [
            execFileSync("ps", ["-eo", "pid,ppid,args"], { encoding: "utf8" }),
            execFileSync("ps", ["auxww"], { encoding: "utf8" })
          ].join("\n")
          const pid = Number(fs.readFileSync(path.join(deploymentDir(standin, name), "pid"), "utf8").trim())
          const environ = fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")
          assert.include(environ, `HF_TOKEN=${token}`, "the server got the token in its environment")
          assert.include(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"), "sglang.launch_server")

          const again = record(yield* run(...prefix, "--json", "--", ...flags))
          assert.strictEqual(again.code, ExitCode.Ok, again.text)
          assert.isTrue(
            again.stdout.some((l) => l.includes('"AlreadyRunning"')),
            again.text
          )
          const status = record(yield* run("status", "--host", alias, "--json"))
          assert.strictEqual(status.code, ExitCode.Ok, status.text)
          assert.include(status.text, '"--api-key","***"')
          record(yield* run("status", "--host", alias))
          record(yield* run("logs", "--host", alias, "--name", name, "-n", "500"))
          record(yield* run("logs", "--host", alias, "--name", name, "-n", "500", "--json"))
          // a failure with a fixed command: the secrets show as ***
          // the first launch holds both GPUs: allowed, so the flags' problems come next
          const brokenArgs = (...extra: ReadonlyArray<string>) => [
            ...prefix.slice(0, 3),
            "--allow-busy-gpus",
            ...extra,
            "--env",
            `HF_TOKEN=${token}`,
            "--",
            ...story(standin.modelPath),
            "--api-key",
            apiKey
          ]
          const broken = record(yield* run(...brokenArgs()))
          assert.strictEqual(broken.code, ExitCode.RulesViolated, broken.text)
          assert.include(broken.text, "--env 'HF_TOKEN=***'")
          assert.include(broken.text, "--api-key '***'")
          record(yield* run(...brokenArgs("--json")))
          const files = filesUnder(standin.stateDir)
          const meta = JSON.parse(
            fs.readFileSync(path.join(deploymentDir(standin, name), "meta.json"), "utf8")
          )
          assert.deepStrictEqual(meta.envNames, ["HF_TOKEN", "STANDIN_PHASE_SECONDS"])
          const stopped = record(yield* run("stop", "--host", alias, "--name", name, "--json"))
          assert.strictEqual(stopped.code, ExitCode.Ok, stopped.text)

          const printed = runs.map((r) => r.text).join("\n")
          for (const secret of [token, apiKey]) {
            assert.notInclude(printed, secret, "mlops printed a secret")
            assert.notInclude(ps, secret, "ps shows a secret")
            for (const file of files) assert.notInclude(file.text, secret, `${file.path} holds a secret`)
          }
          assert.isAbove(files.length, 5)
          assert.isTrue(files.some((f) => f.path.endsWith("/log") && f.text.includes("api_key='***'")))
        }),
      180_000
    )
  })
})
