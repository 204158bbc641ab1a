/**
 * `mlops` with `--image` end to end: a real Docker Engine (core's test support, with the
 * stand-in GPU hook) behind a test sshd whose sessions reach it, an image of the stand-in SGLang,
 * and the host's hosts.json naming only its Python environment: the options choose the image for
 * one launch. launch (human and --json), status, logs, stop and rm as a user types them, a
 * small /dev/shm failing with its fix and exit code, and bad option values refused by name.
 * Needs root and `docker.io runc`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import * as Containers from "../../../core/test/support/Containers.js"
import { withSetEnv } from "../../../core/test/support/Slurm.js"
import * as Sshd from "../../../core/test/support/Sshd.js"
import { installInImage, seeContainers } from "../../../sglang/test/integration/standin/image.js"
import * as Standin from "../../../sglang/test/integration/standin/install.js"
import {
  alias,
  fixedStory,
  freePort,
  removeDeployment,
  story
} from "../../../sglang/test/integration/support.js"
import { ExitCode } from "../../src/ExitCodes.js"
import { mlopsOn } from "../support/run.js"

const IMAGE = "mlops-cli-test/sglang:v0.5.11"

class Host extends Context.Tag("test/ContainerCliHost")<
  Host,
  { readonly standin: Standin.Standin; readonly sshd: Sshd.Sshd; readonly docker: Containers.DockerDaemon }
>() {}

const HostLayer = Layer.scoped(
  Host,
  Effect.gen(function* () {
    const standin = yield* Standin.install
    standin.writeHostsFile(alias)
    const docker = yield* Containers.startDocker({ gpuHook: true })
    const contents = yield* installInImage()
    yield* Containers.buildImage(docker, {
      name: IMAGE,
      packages: contents.packages,
      env: contents.env,
      labels: contents.labels
    })
    seeContainers(standin.venv, [docker.dir])
    const sshd = yield* Sshd.start({
      extraConfig: withSetEnv(standin.sshdConfig, [`DOCKER_HOST=${docker.env.DOCKER_HOST}`])
    })
    return { standin, sshd, docker }
  })
)

const containersNamed = (docker: Containers.DockerDaemon, name: string) =>
  Effect.map(
    Containers.runOk(docker, [
      "ps",
      "-a",
      "--filter",
      `label=mlops.deployment=${name}`,
      "--format",
      "{{.Names}}"
    ]),
    (out) => out.split("\n").filter((line) => line.trim() !== "")
  )

describe("mlops --image (real Docker Engine, stand-in SGLang image)", () => {
  layer(HostLayer, { excludeTestServices: true, timeout: "240 seconds" })((it) => {
    it.scoped(
      "launch --image to ready, status names the container, logs, stop removes it, rm the record",
      () =>
        Effect.gen(function* () {
          const { standin, sshd, docker } = yield* Host
          const run = mlopsOn(sshd.sshConfigPath, standin.mlopsHome)
          const name = `cli-ct-${process.pid}`
          const port = yield* freePort
          yield* Effect.addFinalizer(() =>
            run("stop", "--host", alias, "--name", name).pipe(
              Effect.interruptible,
              Effect.forkDaemon,
              Effect.flatMap(Fiber.join),
              Effect.zipRight(Effect.sync(() => removeDeployment(standin, name)))
            )
          )
          const launched = yield* run(
            "launch",
            "--host",
            alias,
            "--name",
            name,
            "--image",
            IMAGE,
            "--runtime",
            "docker",
            "--env",
            "STANDIN_PHASE_SECONDS=0.02",
            "--",
            ...fixedStory(standin.modelPath, port)
          )
          assert.strictEqual(launched.code, ExitCode.Ok, launched.text)
          assert.include(launched.text, `${name} is ready`)
          assert.include(launched.text, `in image ${IMAGE}`)
          const [container] = yield* containersNamed(docker, name)
          assert.match(container ?? "", new RegExp(`^mlops-${name}-[0-9a-f]{8}$`))

          const again = yield* run(
            "launch",
            "--host",
            alias,
            "--name",
            name,
            "--image",
            IMAGE,
            "--env",
            "STANDIN_PHASE_SECONDS=0.02",
            "--json",
            "--",
            ...fixedStory(standin.modelPath, port)
          )
          assert.strictEqual(again.code, ExitCode.Ok, again.text)
          const events = again.stdout
            .filter((l) => l.startsWith("{"))
            .map((l) => JSON.parse(l) as { _tag: string })
          assert.isTrue(
            events.some((e) => e._tag === "AlreadyRunning"),
            again.text
          )

          const status = yield* run("status", "--host", alias)
          assert.strictEqual(status.code, ExitCode.Ok, status.text)
          assert.include(status.text, `container ${container}`)
          const statusJson = yield* run("status", "--host", alias, "--json")
          assert.include(statusJson.text, '"placement":"container"')

          const logs = yield* run("logs", "--host", alias, "--name", name, "-n", "200")
          assert.strictEqual(logs.code, ExitCode.Ok, logs.text)
          assert.include(logs.text, "The server is fired up and ready to roll!")

          const stopped = yield* run("stop", "--host", alias, "--name", name)
          assert.strictEqual(stopped.code, ExitCode.Ok, stopped.text)
          assert.deepStrictEqual(yield* containersNamed(docker, name), [])
          const removed = yield* run("rm", "--host", alias, "--name", name)
          assert.strictEqual(removed.code, ExitCode.Ok, removed.text)
        })
    )

    it.scoped("--shm-size 64m under two ranks: SharedMemoryTooSmall, exit 4, the fix names --shm-size", () =>
      Effect.gen(function* () {
        const { standin, sshd } = yield* Host
        const run = mlopsOn(sshd.sshConfigPath, standin.mlopsHome)
        const name = `cli-ct-shm-${process.pid}`
        const port = yield* freePort
        yield* Effect.addFinalizer(() =>
          run("rm", "--host", alias, "--name", name).pipe(
            Effect.interruptible,
            Effect.forkDaemon,
            Effect.flatMap(Fiber.join),
            Effect.zipRight(Effect.sync(() => removeDeployment(standin, name)))
          )
        )
        const failed = yield* run(
          "launch",
          "--host",
          alias,
          "--name",
          name,
          "--image",
          IMAGE,
          "--shm-size",
          "64m",
          "--env",
          "STANDIN_PHASE_SECONDS=0.02",
          "--json",
          "--",
          ...fixedStory(standin.modelPath, port)
        )
        assert.strictEqual(failed.code, ExitCode.Preflight, failed.text)
        assert.include(failed.text, '"_tag":"SharedMemoryTooSmall"')
        assert.include(failed.text, "--shm-size")
      })
    )

    it.scoped("check --host --image: the story refused for the release the image holds, with the fix", () =>
      Effect.gen(function* () {
        const { standin, sshd } = yield* Host
        const run = mlopsOn(sshd.sshConfigPath, standin.mlopsHome)
        const checked = yield* run(
          "check",
          "--host",
          alias,
          "--image",
          IMAGE,
          "--",
          ...story(standin.modelPath)
        )
        assert.strictEqual(checked.code, ExitCode.RulesViolated, checked.text)
        assert.include(checked.text, "0.5.11")
        assert.include(checked.text, "--mamba-scheduler-strategy extra_buffer")
        const json = yield* run(
          "check",
          "--host",
          alias,
          "--image",
          IMAGE,
          "--json",
          "--",
          ...story(standin.modelPath)
        )
        assert.strictEqual(json.code, ExitCode.RulesViolated, json.text)
        assert.include(json.text, '"_tag":"LaunchRulesViolated"')
      })
    )

    it.scoped(
      "bad values are refused by name before anything runs: --shm-size, --python with --image, --pull",
      () =>
        Effect.gen(function* () {
          const { standin, sshd } = yield* Host
          const run = mlopsOn(sshd.sshConfigPath, standin.mlopsHome)
          const flags = fixedStory(standin.modelPath, 30000)
          const shm = yield* run(
            "launch",
            "--host",
            alias,
            "--image",
            IMAGE,
            "--shm-size",
            "lots",
            "--",
            ...flags
          )
          assert.strictEqual(shm.code, ExitCode.Usage, shm.text)
          assert.include(shm.text, "--shm-size")
          const both = yield* run(
            "launch",
            "--host",
            alias,
            "--image",
            IMAGE,
            "--python",
            standin.venv,
            "--",
            ...flags
          )
          assert.strictEqual(both.code, ExitCode.Usage, both.text)
          assert.include(both.text, "--python")
          assert.include(both.text, "--image")
          const pull = yield* run(
            "launch",
            "--host",
            alias,
            "--image",
            IMAGE,
            "--pull",
            "sometimes",
            "--",
            ...flags
          )
          assert.strictEqual(pull.code, ExitCode.Usage, pull.text)
          assert.include(pull.text, "--pull")
          const absent = yield* run(
            "launch",
            "--host",
            alias,
            "--image",
            "mlops-cli-test/absent:1",
            "--pull",
            "never",
            "--",
            ...flags
          )
          assert.strictEqual(absent.code, ExitCode.Preflight, absent.text)
          assert.include(absent.text, "mlops-cli-test/absent:1")
        })
    )
  })
})
