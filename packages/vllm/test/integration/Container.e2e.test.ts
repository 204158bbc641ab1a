/**
 * vLLM from an image, end to end: a real Docker Engine (core's test support, the stand-in GPU
 * hook) behind a test sshd whose sessions reach it, an image of the stand-in vLLM with its
 * `vllm` entry point (standin/image.ts), hosts.json naming the image. The launch reads the
 * engine from the image, runs `vllm serve` in a container with vLLM's own cache mounted, and
 * stop leaves no container and no GPU memory. Needs root and `docker.io runc`.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import * as Launch from "@mlops/serve/Launch"
import * as Stop from "@mlops/serve/Stop"
import { Context, Effect, Layer, Stream } from "effect"
import * as Containers from "../../../core/test/support/Containers.js"
import { withSetEnv } from "../../../core/test/support/Slurm.js"
import * as Sshd from "../../../core/test/support/Sshd.js"
import { VllmEngine } from "../../src/Engine.js"
import { installInImage, seeContainers } from "./standin/image.js"
import * as Standin from "./standin/install.js"

const alias = "testhost"
const IMAGE = "mlops-test/vllm:v0.13.0"

class Host extends Context.Tag("test/VllmContainer")<
  Host,
  { readonly standin: Standin.VllmStandin; readonly docker: Containers.DockerDaemon }
>() {}

const TestLayer = Layer.unwrapScoped(
  Effect.gen(function* () {
    const standin = yield* Standin.install(alias)
    const docker = yield* Containers.startDocker({ gpuHook: true })
    const contents = yield* installInImage()
    yield* Containers.buildImage(docker, { name: IMAGE, ...contents })
    seeContainers(standin.venv, [docker.dir])
    fs.writeFileSync(
      path.join(standin.mlopsHome, "hosts.json"),
      JSON.stringify({ hosts: { [alias]: { stateDir: standin.stateDir, image: IMAGE, runtime: "docker" } } })
    )
    const sshd = yield* Sshd.start({
      extraConfig: withSetEnv(standin.sshdConfig, [`DOCKER_HOST=${docker.env.DOCKER_HOST}`])
    })
    return ConnectionPool.layer().pipe(
      Layer.provideMerge(Hosts.layer({ sshConfig: sshd.sshConfigPath, mlopsHome: standin.mlopsHome })),
      Layer.merge(Layer.succeed(Host, { standin, docker }))
    )
  })
)

const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

describe("vLLM in a container (real Docker Engine, stand-in vLLM image)", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: "180 seconds" })((it) => {
    it.scoped(
      "vllm serve from the image to ready, its version read inside it, vLLM's cache mounted; stop leaves no container and no GPU memory",
      () =>
        Effect.gen(function* () {
          const { standin, docker } = yield* Host
          const port = yield* freePort
          const name = `vllm-ct-${process.pid}`
          yield* Effect.addFinalizer(() =>
            Effect.ignore(Stop.stop(alias, name)).pipe(
              Effect.andThen(() =>
                fs.rmSync(path.join(standin.stateDir, "deployments", name), { recursive: true, force: true })
              )
            )
          )
          const events = [
            ...(yield* Launch.launch({
              host: alias,
              engine: VllmEngine,
              name,
              argv: [
                standin.modelPath,
                "--host",
                "127.0.0.1",
                "--port",
                String(port),
                "--max-model-len",
                "8192"
              ],
              env: { STANDIN_PHASE_SECONDS: "0.02" }
            }).pipe(Stream.runCollect))
          ]
          assert.strictEqual(events.at(-1)?._tag, "Launched", JSON.stringify(events.at(-1)))
          const python = events.find((e) => e._tag === "Python")
          assert.include(python?._tag === "Python" ? python.python.where : "", `in image ${IMAGE}`)
          assert.strictEqual(python?._tag === "Python" ? python.python.engineVersion : "", "0.13.0")

          const [id] = (yield* Containers.runOk(docker, [
            "ps",
            "--filter",
            `label=mlops.deployment=${name}`,
            "--format",
            "{{.ID}}"
          ]))
            .split("\n")
            .filter((line) => line !== "")
          assert.isDefined(id)
          const env = (yield* Containers.runOk(docker, [
            "inspect",
            "--format",
            "{{json .Config.Env}}",
            id!
          ])).trim()
          const cacheRoot = (JSON.parse(env) as Array<string>).find((v) => v.startsWith("VLLM_CACHE_ROOT="))
          assert.isDefined(cacheRoot, env)
          const mounts = yield* Containers.runOk(docker, ["inspect", "--format", "{{json .Mounts}}", id!])
          assert.include(mounts, cacheRoot!.slice("VLLM_CACHE_ROOT=".length))

          const smi = () =>
            execFileSync(path.join(standin.bin, "nvidia-smi"), [
              "--query-compute-apps=pid,used_memory",
              "--format=csv,noheader,nounits"
            ])
              .toString()
              .trim()
          assert.notStrictEqual(smi(), "", "the host's nvidia-smi sees the container's GPU memory")
          yield* Stop.stop(alias, name)
          const left = yield* Containers.runOk(docker, [
            "ps",
            "-a",
            "--filter",
            `label=mlops.deployment=${name}`,
            "--format",
            "{{.ID}}"
          ])
          assert.strictEqual(left.trim(), "")
          assert.strictEqual(smi(), "")
        })
    )
  })
})
