/**
 * Containers: what a launch from an image costs over the same launch on the host, and over the
 * by-hand way, each measured in this run on a real Docker Engine (core's test support, the
 * stand-in GPU hook; needs root and `docker.io runc`) behind the test sshd, with the stand-in
 * SGLang in a venv and in an image built from the same sources:
 *
 * (a) launch → ready (`Launched`: the ready line and /health, /generate, /v1/models answering),
 *     median of BENCH_RUNS (5): mlops on the host (a process group) and mlops in a container
 *     (image inspect, the GPU check, `docker run -d`, the same follow), and the by-hand
 *     `docker run -d ... && until curl -sf /health; do sleep 1; done` (and with a 100 ms poll,
 *     a lower bound no one types), run from this machine without ssh;
 * (b) the crash line written (the stand-in stamps it) → the typed OOM in the caller, host and
 *     container; goal < 2 s both.
 *
 *   npx tsx bench/container.ts      (or `npm run bench`, which runs every bench)
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import * as ImageRuntime from "@mlops/serve/ImageRuntime"
import * as Stop from "@mlops/serve/Stop"
import { Effect, Layer } from "effect"
import * as Containers from "../packages/core/test/support/Containers.js"
import { withSetEnv } from "../packages/core/test/support/Slurm.js"
import * as Sshd from "../packages/core/test/support/Sshd.js"
import { installInImage, seeContainers } from "../packages/sglang/test/integration/standin/image.js"
import * as Standin from "../packages/sglang/test/integration/standin/install.js"
import { alias, fixedStory, freePort } from "../packages/sglang/test/integration/support.js"
import * as Serving from "../packages/sglang/test/support/serving.js"
import { median } from "./support/stats.js"

const RUNS = Number(process.env.BENCH_RUNS ?? 5)
const IMAGE = "mlops-bench/sglang:v0.5.11"

const ms = (x: number) => `${x.toFixed(0)} ms`

const curlHealth = (port: number) =>
  Effect.async<boolean>((resume) => {
    execFile("curl", ["-sf", "-o", "/dev/null", `http://127.0.0.1:${port}/health`], (error) =>
      resume(Effect.succeed(error === null))
    )
  })

const program = Effect.gen(function* () {
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
  const live = ConnectionPool.layer().pipe(
    Layer.provideMerge(Hosts.layer({ sshConfig: sshd.sshConfigPath, mlopsHome: standin.mlopsHome }))
  )
  yield* Effect.provide(measure(standin, docker), live)
})

const measure = (standin: Standin.Standin, docker: Containers.DockerDaemon) =>
  Effect.gen(function* () {
    const image = ImageRuntime.spec({ image: IMAGE, tool: "docker" })
    let n = 0
    const env = { STANDIN_PHASE_SECONDS: "0.02" }
    const mlops = (inImage: boolean) =>
      Effect.gen(function* () {
        const port = yield* freePort
        const name = `bench-${++n}`
        const t0 = Date.now()
        yield* Serving.launchDeployment({
          host: alias,
          name,
          argv: fixedStory(standin.modelPath, port),
          env,
          ...(inImage ? { runtime: image } : {})
        })
        const took = Date.now() - t0
        yield* Stop.stop(alias, name)
        return took
      })
    const byHand = (pollMs: number) =>
      Effect.gen(function* () {
        const port = yield* freePort
        const t0 = Date.now()
        const id = (yield* Containers.runOk(docker, [
          "run",
          "-d",
          "--network",
          "host",
          "--gpus",
          '"device=0,1"',
          "--shm-size",
          "32g",
          "-v",
          `${standin.modelPath}:${standin.modelPath}:ro`,
          ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
          IMAGE,
          "python3",
          "-m",
          "sglang.launch_server",
          ...fixedStory(standin.modelPath, port)
        ])).trim()
        while (!(yield* curlHealth(port))) {
          if (Date.now() - t0 > 120_000) {
            const logs = yield* Containers.run(docker, ["logs", "--tail", "20", id])
            return yield* Effect.dieMessage(
              `by hand: not healthy after 2 minutes\n${logs.stdout}${logs.stderr}`
            )
          }
          yield* Effect.sleep(`${pollMs} millis`)
        }
        const took = Date.now() - t0
        yield* Containers.runOk(docker, ["rm", "-f", id])
        return took
      })

    // one of each first: caches warm (the image's first start, the connection, Python's bytecode)
    console.log("warming up: one launch of each kind")
    yield* mlops(false)
    yield* mlops(true)
    yield* byHand(100)
    const host: Array<number> = []
    const container: Array<number> = []
    const hand1s: Array<number> = []
    const hand100: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      host.push(yield* mlops(false))
      container.push(yield* mlops(true))
      hand1s.push(yield* byHand(1000))
      hand100.push(yield* byHand(100))
    }
    console.log(`(a) launch → ready, median of ${RUNS}:`)
    console.log(`    mlops on the host (process group)            ${ms(median(host))}`)
    console.log(
      `    mlops in a container                          ${ms(median(container))} (ratio to the host ${(median(container) / median(host)).toFixed(2)})`
    )
    console.log(
      `    by hand: docker run -d + curl /health, 1 s     ${ms(median(hand1s))} (mlops in a container / this: ${(median(container) / median(hand1s)).toFixed(2)})`
    )
    console.log(
      `    by hand, 100 ms poll (a lower bound)           ${ms(median(hand100))} (mlops in a container / this: ${(median(container) / median(hand100)).toFixed(2)})`
    )
    console.log(
      "    (mlops also checks the flags, the GPUs' memory and the port, waits for /generate and /v1/models, and goes over ssh)"
    )

    for (const inImage of [false, true]) {
      const detect: Array<number> = []
      for (let i = 0; i < RUNS; i++) {
        const port = yield* freePort
        const name = `bench-oom-${++n}`
        const runDir = path.join(standin.stateDir, "deployments", name)
        // the run directory is mounted into the container at its own path: the stamps go there
        const stamps = path.join(runDir, "stamps.ndjson")
        const t0 = Date.now()
        const failure = yield* Serving.launchDeployment({
          host: alias,
          name,
          argv: [...fixedStory(standin.modelPath, port), "--mem-fraction-static", "0.99"],
          env: { ...env, STANDIN_STAMP_FILE: stamps },
          preflight: false,
          ...(inImage ? { runtime: image } : {})
        }).pipe(Effect.flip)
        const at = Date.now()
        const crash = fs
          .readFileSync(stamps, "utf8")
          .split("\n")
          .filter((line) => line.trim() !== "")
          .map((line) => JSON.parse(line) as { event: string; ms: number })
          .find((s) => s.event === "crash" && s.ms >= t0)
        if (failure._tag !== "OOM" || crash === undefined)
          return yield* Effect.dieMessage(`no typed OOM: ${failure._tag}`)
        detect.push(at - crash.ms)
        yield* Stop.stop(alias, name).pipe(Effect.ignore)
      }
      console.log(
        `(b) crash line → OOM in the caller, ${inImage ? "in a container" : "on the host"}, median of ${RUNS}: ${ms(median(detect))} (goal < 2000 ms: ${median(detect) < 2000 ? "met" : "missed"})`
      )
    }
  })

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
