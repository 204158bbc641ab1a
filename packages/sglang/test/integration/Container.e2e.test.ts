/**
 * End to end in containers: a real Docker Engine (docker.io 20.10, started by the test with the
 * stand-in GPU hook, core's test/support/Containers.ts) serves a test sshd on 127.0.0.1 as host
 * `testhost` (its sessions get `DOCKER_HOST`), an image holding this machine's Python and the
 * stand-in SGLang (standin/image.ts), and the host's stand-in `nvidia-smi`, which sees the GPU
 * memory of stand-in processes in that daemon's containers. mlops launches from the image,
 * classifies what goes wrong, and stops, exactly as it would with `lmsysorg/sglang`.
 * A second daemon without the GPU hook, a local registry, and podman with CDI GPUs each get a
 * block of their own. Needs root and `docker.io podman runc catatonit docker-registry`.
 */

import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import * as Bench from "@mlops/serve/Bench"
import * as ContainerPlacement from "@mlops/serve/ContainerPlacement"
import * as ImageRuntime from "@mlops/serve/ImageRuntime"
import * as Job from "@mlops/serve/Job"
import * as Remove from "@mlops/serve/Remove"
import * as Stop from "@mlops/serve/Stop"
import { Chunk, Context, Effect, Exit, Fiber, Layer, Stream } from "effect"
import * as Containers from "../../../core/test/support/Containers.js"
import { withSetEnv } from "../../../core/test/support/Slurm.js"
import * as Sshd from "../../../core/test/support/Sshd.js"
import * as HostFlags from "../../src/HostFlags.js"
import * as Serving from "../support/serving.js"
import { installInImage, seeContainers } from "./standin/image.js"
import * as Standin from "./standin/install.js"
import { alias, deploymentDir, fixedStory, freePort, removeDeployment, story as storyOf } from "./support.js"

const IMAGE = "mlops-test/sglang:v0.5.11"
const TOKEN = "hf_e2eC0nta1nerT0ken9"
const API_KEY = "sk-e2e-container-api-key-7"

interface Host {
  readonly standin: Standin.Standin
  readonly sshd: Sshd.Sshd
  readonly engine: Containers.Target & { readonly dir: string }
}

/**
 * The stand-in, a container engine with the stand-in image, and a test sshd whose sessions reach
 * that engine; hosts.json names the image (and the tool) for `testhost`, as a user's would.
 */
const startHost = <T extends Containers.Target & { readonly dir: string }, E, R>(
  engine: Effect.Effect<T, E, R>,
  entry: Readonly<Record<string, unknown>> = {}
) =>
  Effect.gen(function* () {
    const standin = yield* Standin.install
    const target = yield* engine
    const contents = yield* installInImage()
    const image = yield* Containers.buildImage(target, {
      name: IMAGE,
      packages: contents.packages,
      env: contents.env,
      labels: contents.labels
    })
    seeContainers(standin.venv, [target.dir])
    fs.writeFileSync(
      path.join(standin.mlopsHome, "hosts.json"),
      JSON.stringify({
        hosts: { [alias]: { stateDir: standin.stateDir, image: image.name, runtime: target.tool, ...entry } }
      })
    )
    const sshd = yield* Sshd.start({
      extraConfig: withSetEnv(
        standin.sshdConfig,
        Object.entries(target.env).map(([key, value]) => `${key}=${value}`)
      )
    })
    return { standin, sshd, engine: target } satisfies Host
  })

const hostLayer = <I, T extends Containers.Target & { readonly dir: string }, E>(
  tag: Context.Tag<I, Host>,
  engine: Effect.Effect<T, E, import("effect").Scope.Scope>,
  entry?: Readonly<Record<string, unknown>>
) => {
  const host = Layer.scoped(tag, startHost(engine, entry))
  return Layer.unwrapEffect(
    Effect.map(tag, ({ standin, sshd }) =>
      ConnectionPool.layer().pipe(
        Layer.provideMerge(Hosts.layer({ sshConfig: sshd.sshConfigPath, mlopsHome: standin.mlopsHome }))
      )
    )
  ).pipe(Layer.provideMerge(host))
}

class Docker extends Context.Tag("test/Container.e2e/Docker")<Docker, Host>() {}
class NoGpuDocker extends Context.Tag("test/Container.e2e/NoGpuDocker")<NoGpuDocker, Host>() {}
class Podman extends Context.Tag("test/Container.e2e/Podman")<Podman, Host>() {}

/** The engine's containers of a deployment (any state), by mlops' label. */
const containersOf = (host: Host, name: string) =>
  Effect.map(
    Containers.runOk(host.engine, [
      "ps",
      "-a",
      "--filter",
      `label=${ContainerPlacement.deploymentLabel}=${name}`,
      "--format",
      "{{.ID}}"
    ]),
    (out) => out.split("\n").filter((line) => line.trim() !== "")
  )

interface Inspected {
  readonly Id: string
  readonly State: { readonly Status: string; readonly Pid: number }
  readonly Config: { readonly Env: ReadonlyArray<string>; readonly Cmd: ReadonlyArray<string> }
  readonly HostConfig: {
    readonly NetworkMode: string
    readonly ShmSize: number
    readonly Init: boolean | null
    readonly DeviceRequests: ReadonlyArray<{ readonly DeviceIDs: ReadonlyArray<string> | null }> | null
  }
  readonly Mounts: ReadonlyArray<{
    readonly Source: string
    readonly Destination: string
    readonly RW: boolean
  }>
}

const inspect = (host: Host, id: string) =>
  Effect.map(Containers.runOk(host.engine, ["inspect", id]), (out) => {
    const [first] = JSON.parse(out) as ReadonlyArray<Inspected>
    if (first === undefined) throw new Error(`nothing inspected for ${id}`)
    return { parsed: first, text: out }
  })

/** What the host's stand-in nvidia-smi says processes hold (pid, MiB), one line each. */
const gpuApps = (standin: Standin.Standin) =>
  execFileSync(path.join(standin.bin, "nvidia-smi"), [
    "--query-compute-apps=pid,used_memory",
    "--format=csv,noheader,nounits"
  ])
    .toString()
    .split("\n")
    .filter((line) => line.trim() !== "")

/** A fresh deployment name; afterwards it is stopped, its container removed and its directory deleted. */
const deploymentName = <I>(tag: Context.Tag<I, Host>, label: string) =>
  Effect.flatMap(tag, (host) =>
    Effect.acquireRelease(
      Effect.sync(() => `ct-${label}-${Math.random().toString(36).slice(2, 8)}`),
      (name) =>
        Stop.stop(alias, name).pipe(
          Effect.ignore,
          Effect.zipRight(Effect.ignore(Remove.remove(alias, [name]))),
          Effect.zipRight(
            Effect.ignore(
              Effect.flatMap(containersOf(host, name), (ids) =>
                ids.length === 0
                  ? Effect.void
                  : Effect.ignore(Containers.run(host.engine, ["rm", "-f", ...ids]))
              )
            )
          ),
          Effect.zipRight(Effect.sync(() => removeDeployment(host.standin, name)))
        )
    )
  )

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected the launch to fail, it succeeded")
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (failure === undefined) throw new Error(`expected a typed failure, got ${String(exit.cause)}`)
  return failure
}

const launchFailure = (request: Omit<Serving.Request, "host">) =>
  Serving.launchDeployment({ host: alias, ...request }).pipe(Effect.exit, Effect.map(failureOf))

const env = { STANDIN_PHASE_SECONDS: "0.02" }

const TRAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), "standin", "train.py")

/** A local working directory holding the stand-in training run, synced into each job. */
const trainingDir = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-image-job-"))
    fs.copyFileSync(TRAIN, path.join(dir, "train.py"))
    return dir
  }),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A fresh job name; afterwards it is stopped, its record removed and any container of it removed. */
const jobName = <I>(tag: Context.Tag<I, Host>, label: string) =>
  Effect.flatMap(tag, (host) =>
    Effect.acquireRelease(
      Effect.sync(() => `job-${label}-${Math.random().toString(36).slice(2, 8)}`),
      (name) =>
        Job.stop(alias, name).pipe(
          Effect.ignore,
          Effect.zipRight(Effect.ignore(Job.remove(alias, name))),
          Effect.zipRight(
            Effect.ignore(
              Effect.flatMap(jobContainers(host, name), (ids) =>
                ids.length === 0
                  ? Effect.void
                  : Effect.ignore(Containers.run(host.engine, ["rm", "-f", ...ids]))
              )
            )
          )
        )
    )
  )

/** The engine's containers of a job (any state), by mlops' label. */
const jobContainers = (host: Host, name: string) =>
  Effect.map(
    Containers.runOk(host.engine, ["ps", "-a", "--filter", `label=mlops.job=${name}`, "--format", "{{.ID}}"]),
    (out) => out.split("\n").filter((line) => line.trim() !== "")
  )

const waitFor = <R>(check: Effect.Effect<boolean, unknown, R>, what: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 300; i++) {
      if (yield* Effect.orElseSucceed(check, () => false)) return
      yield* Effect.sleep("100 millis")
    }
    assert.fail(`timed out waiting for ${what}`)
  })

const imageJob = (request: Omit<Job.JobRequest, "host">) =>
  Stream.runCollect(Job.run({ host: alias, runtime: ImageRuntime.spec({ image: IMAGE }), ...request })).pipe(
    Effect.map(Chunk.toArray)
  )

describe("Launch in a container (real Docker Engine, stand-in SGLang image)", () => {
  layer(hostLayer(Docker, Containers.startDocker({ gpuHook: "requirement-check" })), {
    excludeTestServices: true,
    timeout: "240 seconds"
  })((it) => {
    it.scoped(
      "the fixed story runs from the image to ready: host network, 32g /dev/shm, its two GPUs, the model read-only; secrets reach only the server; stop leaves no container and no GPU memory",
      () =>
        Effect.gen(function* () {
          const host = yield* Docker
          const { standin } = host
          const port = yield* freePort
          const name = yield* deploymentName(Docker, "ok")
          const argv = [...fixedStory(standin.modelPath, port), "--api-key", API_KEY]
          const events = Chunk.toArray(
            yield* Serving.launch({ host: alias, name, argv, env: { ...env, HF_TOKEN: TOKEN } }).pipe(
              Stream.runCollect
            )
          )
          const last = events.at(-1)
          assert.strictEqual(last?._tag, "Launched", JSON.stringify(events.at(-1)))
          if (last?._tag !== "Launched") return
          const python = events.find((e) => e._tag === "Python")
          assert.include(python?._tag === "Python" ? python.python.where : "", `in image ${IMAGE}`)
          assert.strictEqual(python?._tag === "Python" ? python.python.engineVersion : "", "0.5.11")
          const preflight = events.find((e) => e._tag === "Preflight")
          assert.include(preflight?._tag === "Preflight" ? preflight.facts.runtime.description : "", IMAGE)
          assert.include(
            preflight?._tag === "Preflight" ? preflight.facts.placement.description : "",
            "container"
          )

          const [id, ...more] = yield* containersOf(host, name)
          assert.isDefined(id)
          assert.deepStrictEqual(more, [])
          const { parsed, text } = yield* inspect(host, id!)
          assert.strictEqual(parsed.State.Status, "running")
          assert.strictEqual(parsed.HostConfig.NetworkMode, "host")
          assert.strictEqual(parsed.HostConfig.ShmSize, 32 * 1024 ** 3)
          assert.isTrue(parsed.HostConfig.Init)
          assert.deepStrictEqual(parsed.HostConfig.DeviceRequests?.[0]?.DeviceIDs, ["0", "1"])
          const mount = (source: string) => parsed.Mounts.find((m) => m.Source === source)
          assert.strictEqual(mount(standin.modelPath)?.RW, false, JSON.stringify(parsed.Mounts))
          assert.strictEqual(mount(deploymentDir(standin, name))?.RW, true)
          // the server got both secrets (it answered the readiness check with the key; the token in its environment)
          const pids = (yield* Containers.runOk(host.engine, ["top", id!, "-o", "pid"]))
            .split("\n")
            .slice(1)
            .map((line) => line.trim())
            .filter((line) => /^\d+$/.test(line))
          const environs = pids.map((pid) => {
            try {
              return fs.readFileSync(`/proc/${pid}/environ`, "utf8")
            } catch {
              return ""
            }
          })
          assert.isTrue(
            environs.some((e) => e.split("\0").includes(`HF_TOKEN=${TOKEN}`)),
            "the server has the token"
          )
          // ...and nobody else: not docker inspect, the host's process list, the log, the events, the run dir
          const ps = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })
          const log = fs.readFileSync(path.join(deploymentDir(standin, name), "log"), "utf8")
          for (const [where, seen] of [
            ["docker inspect", text],
            ["ps", ps],
            ["the log", log],
            ["the events", JSON.stringify(events)]
          ] as const) {
            assert.notInclude(seen, TOKEN, where)
            assert.notInclude(seen, API_KEY, where)
          }
          assert.isFalse(fs.existsSync(path.join(deploymentDir(standin, name), "secrets")))
          for (const file of fs.readdirSync(deploymentDir(standin, name))) {
            const stat = fs.statSync(path.join(deploymentDir(standin, name), file))
            if (stat.isFile()) assert.strictEqual(stat.mode & 0o077, 0, `${file} is ${stat.mode.toString(8)}`)
          }
          // the host's nvidia-smi sees the ranks' memory under their host pids
          const apps = gpuApps(standin)
          assert.strictEqual(apps.length, 2, apps.join("\n"))
          for (const app of apps) assert.include(pids, app.split(",")[0]?.trim())

          // a benchmark reaches the container's server with its key, and is refused without it
          const bench = yield* Bench.run(alias, name, Serving.engines, {
            requests: 2,
            outputTokens: 4,
            apiKey: API_KEY
          })
          assert.deepStrictEqual(
            bench.levels.map((l) => [l.completed, l.errors, l.outputTokens]),
            [[2, 0, 8]]
          )
          const keyless = yield* Effect.flip(Bench.run(alias, name, Serving.engines, { requests: 1 }))
          assert.strictEqual(keyless._tag, "BenchRefused")
          assert.include(keyless.message, "it was launched with --api-key")
          assert.notInclude(JSON.stringify(bench), API_KEY)

          const [status] = yield* Serving.statusOfHost(alias, { name })
          assert.strictEqual(status?.placement, "container")
          assert.isTrue(status?.alive)
          assert.isAbove(status?.gpuMemoryMiB ?? 0, 80_000)

          yield* Stop.stop(alias, name)
          assert.deepStrictEqual(yield* containersOf(host, name), [])
          assert.deepStrictEqual(gpuApps(standin), [])
          const [after] = yield* Serving.statusOfHost(alias, { name })
          assert.isFalse(after?.alive)
          assert.strictEqual(after?.stopped, "terminated")
          yield* Remove.remove(alias, [name])
          assert.isFalse(fs.existsSync(deploymentDir(standin, name)))
        })
    )

    it.scoped("the story as written is refused before a container is made", () =>
      Effect.gen(function* () {
        const host = yield* Docker
        const port = yield* freePort
        const name = yield* deploymentName(Docker, "story")
        const failure = yield* launchFailure({
          name,
          argv: [...storyOf(host.standin.modelPath), "--port", String(port)],
          env
        })
        assert.strictEqual(failure._tag, "LaunchRulesViolated")
        assert.deepStrictEqual(yield* containersOf(host, name), [])
      })
    )

    it.scoped(
      "an image whose tag says another release: the checks follow the engine in the image, and say so",
      () =>
        Effect.gen(function* () {
          const host = yield* Docker
          const tagged = "mlops-test/sglang:v0.5.9"
          yield* Containers.runOk(host.engine, ["tag", IMAGE, tagged])
          const port = yield* freePort
          const name = yield* deploymentName(Docker, "tag")
          const events = Chunk.toArray(
            yield* Stream.runCollect(
              Serving.launch({
                host: alias,
                name,
                argv: fixedStory(host.standin.modelPath, port),
                env,
                runtime: ImageRuntime.spec({ image: tagged })
              })
            )
          )
          assert.strictEqual(events.at(-1)?._tag, "Launched")
          const preflight = events.find((e) => e._tag === "Preflight")
          const facts = preflight?._tag === "Preflight" ? preflight.facts : undefined
          assert.strictEqual(facts?.engineVersion, "0.5.11")
          assert.strictEqual(facts?.flags.version, "0.5.11")
          assert.isTrue(
            facts?.warnings.some((w) => w.includes("says 0.5.9") && w.includes("0.5.11")),
            JSON.stringify(facts?.warnings)
          )
        })
    )

    it.scoped(
      "a dev image (0.0.0.dev1+g1234abc): its flags come from its own parser run inside it, then from the cache kept by image id",
      () =>
        Effect.gen(function* () {
          const host = yield* Docker
          const contents = yield* installInImage({ version: "0.0.0.dev1+g1234abc" })
          const dev = yield* Containers.buildImage(host.engine, {
            name: "mlops-test/sglang:dev",
            packages: contents.packages,
            env: contents.env,
            labels: contents.labels
          })
          const caches = yield* Effect.acquireRelease(
            Effect.sync(() => fs.mkdtempSync(path.join(host.standin.dir, "caches-"))),
            (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
          )
          const cached = Layer.mergeAll(
            HostFlags.layerDirectory(path.join(caches, "flags")),
            ImageRuntime.cacheDirectory(path.join(caches, "images"))
          )
          const flagsOf = (label: string) =>
            Effect.gen(function* () {
              const port = yield* freePort
              const name = yield* deploymentName(Docker, label)
              const events = Chunk.toArray(
                yield* Stream.runCollect(
                  Serving.launch({
                    host: alias,
                    name,
                    argv: fixedStory(host.standin.modelPath, port),
                    env,
                    runtime: ImageRuntime.spec({ image: dev.name })
                  })
                ).pipe(Effect.provide(cached))
              )
              assert.strictEqual(events.at(-1)?._tag, "Launched", JSON.stringify(events.at(-1)))
              // the GPUs free for the next one
              yield* Stop.stop(alias, name)
              const preflight = events.find((e) => e._tag === "Preflight")
              return preflight?._tag === "Preflight" ? preflight.facts : undefined
            })
          const first = yield* flagsOf("dev1")
          assert.deepStrictEqual(first?.flags, { version: "0.0.0.dev1+g1234abc", source: "dumped" })
          assert.isFalse(first?.rulesVerified)
          const second = yield* flagsOf("dev2")
          assert.deepStrictEqual(second?.flags, { version: "0.0.0.dev1+g1234abc", source: "cached" })
          const kept = fs
            .readdirSync(path.join(caches, "flags"), { recursive: true, encoding: "utf8" })
            .join(" ")
          assert.include(kept, dev.id.replace(/^sha256:/, "").slice(0, 12))
        })
    )

    it.scoped("a rank's CUDA OOM in the container is classified; the container is gone, its log kept", () =>
      Effect.gen(function* () {
        const host = yield* Docker
        const port = yield* freePort
        const name = yield* deploymentName(Docker, "oom")
        const argv = [...fixedStory(host.standin.modelPath, port), "--mem-fraction-static", "0.99"]
        const failure = yield* launchFailure({ name, argv, env, preflight: false })
        assert.strictEqual(failure._tag, "OOM", JSON.stringify(failure))
        if (failure._tag !== "OOM") return
        assert.isDefined(failure.fix?.flags?.["--mem-fraction-static"])
        const ids = yield* containersOf(host, name)
        for (const id of ids) assert.notStrictEqual((yield* inspect(host, id)).parsed.State.Status, "running")
        assert.deepStrictEqual(gpuApps(host.standin), [])
        const log = fs.readFileSync(path.join(deploymentDir(host.standin, name), "log"), "utf8")
        assert.include(log, "Scheduler hit an exception")
      })
    )

    it.scoped(
      "/dev/shm of 64m under two ranks: NCCL's failure is SharedMemoryTooSmall with --shm-size as the fix",
      () =>
        Effect.gen(function* () {
          const host = yield* Docker
          const port = yield* freePort
          const name = yield* deploymentName(Docker, "shm")
          const failure = yield* launchFailure({
            name,
            argv: fixedStory(host.standin.modelPath, port),
            env,
            placement: ContainerPlacement.spec({ shm: "64m" })
          })
          assert.strictEqual(failure._tag, "SharedMemoryTooSmall", JSON.stringify(failure))
          const [id] = yield* containersOf(host, name)
          assert.strictEqual((yield* inspect(host, id!)).parsed.HostConfig.ShmSize, 64 * 1024 ** 2)
          assert.include(JSON.stringify(failure), "--shm-size")
        })
    )

    it.scoped(
      "an image needing CUDA 12.8 on a 12.4 driver: preflight says so before a container; without preflight the hook's refusal is classified the same",
      () =>
        Effect.gen(function* () {
          const host = yield* Docker
          const port = yield* freePort
          const name = yield* deploymentName(Docker, "cuda")
          const contents = yield* installInImage()
          const newer = yield* Containers.buildImage(host.engine, {
            name: "mlops-test/sglang:v0.5.11-cu128",
            packages: contents.packages,
            env: { ...contents.env, NVIDIA_REQUIRE_CUDA: "cuda>=12.8 brand=tesla,driver>=470,driver<471" },
            labels: contents.labels
          })
          const request = {
            name,
            argv: fixedStory(host.standin.modelPath, port),
            env,
            runtime: ImageRuntime.spec({ image: newer.name })
          }
          const early = yield* launchFailure(request)
          assert.strictEqual(early._tag, "CudaDriverTooOld", JSON.stringify(early))
          if (early._tag !== "CudaDriverTooOld") return
          assert.strictEqual(early.requiredCuda, "12.8")
          assert.strictEqual(early.driverCuda, "12.4")
          assert.deepStrictEqual(yield* containersOf(host, name), [])

          const late = yield* launchFailure({ ...request, preflight: false })
          assert.strictEqual(late._tag, "CudaDriverTooOld", JSON.stringify(late))
          if (late._tag !== "CudaDriverTooOld") return
          assert.strictEqual(late.requiredCuda, "12.8")
          const log = fs.readFileSync(path.join(deploymentDir(host.standin, name), "log"), "utf8")
          assert.include(log, "requirement error: unsatisfied condition: cuda>=12.8")
        })
    )

    it.scoped(
      "a relaunch finds the server running; once the tag names another image the relaunch says so; --replace starts the new one",
      () =>
        Effect.gen(function* () {
          const host = yield* Docker
          const port = yield* freePort
          const name = yield* deploymentName(Docker, "again")
          const request = { host: alias, name, argv: fixedStory(host.standin.modelPath, port), env }
          const first = yield* Serving.launchDeployment(request)
          const again = Chunk.toArray(yield* Stream.runCollect(Serving.launch(request)))
          assert.strictEqual(again.at(-1)?._tag, "Launched")
          assert.isTrue(again.some((e) => e._tag === "AlreadyRunning"))
          assert.deepStrictEqual((yield* containersOf(host, name)).length, 1)

          const contents = yield* installInImage()
          const rebuilt = yield* Containers.buildImage(host.engine, {
            name: IMAGE,
            packages: contents.packages,
            env: { ...contents.env, REBUILT: "1" },
            labels: contents.labels
          })
          const changed = yield* launchFailure(request)
          assert.strictEqual(changed._tag, "DeploymentExists", JSON.stringify(changed))
          assert.include(JSON.stringify(changed), rebuilt.id.replace(/^sha256:/, "").slice(0, 12))
          const replaced = yield* Serving.launchDeployment({ ...request, replace: true })
          const [id] = yield* containersOf(host, name)
          assert.include((yield* inspect(host, id!)).parsed.Config.Env, "REBUILT=1")
          assert.notStrictEqual(replaced.startedAt, first.startedAt)
        })
    )

    it.scoped(
      "the connection cut while the server starts: the launch reconnects and follows it to ready",
      () =>
        Effect.gen(function* () {
          const host = yield* Docker
          const port = yield* freePort
          const name = yield* deploymentName(Docker, "cut")
          const launching = yield* Serving.launch({
            host: alias,
            name,
            argv: fixedStory(host.standin.modelPath, port),
            env: { STANDIN_PHASE_SECONDS: "0.4" }
          }).pipe(
            Stream.tap((event) => (event._tag === "Spawned" ? host.sshd.killSessionProcesses : Effect.void)),
            Stream.runCollect,
            Effect.fork
          )
          const events = Chunk.toArray(yield* Fiber.join(launching))
          assert.strictEqual(events.at(-1)?._tag, "Launched")
          assert.isTrue(events.some((e) => e._tag === "Reconnected"))
          assert.strictEqual((yield* containersOf(host, name)).length, 1)
        })
    )

    it.scoped(
      "an image from a registry is pulled with progress; an absent image with pull never, or one no registry has, is refused by name",
      () =>
        Effect.gen(function* () {
          const host = yield* Docker
          const registry = yield* Containers.startRegistry()
          const ref = yield* Containers.pushImage(host.engine, registry, IMAGE)
          yield* Containers.runOk(host.engine, ["rmi", ref])
          const port = yield* freePort
          const name = yield* deploymentName(Docker, "pull")
          const argv = fixedStory(host.standin.modelPath, port)

          const never = yield* launchFailure({
            name,
            argv,
            env,
            runtime: ImageRuntime.spec({ image: ref, pull: "never" })
          })
          assert.strictEqual(never._tag, "ImageNotFound", JSON.stringify(never))
          assert.include(JSON.stringify(never), ref)

          // the registry answers that it has no such image: not found, with the name
          const absent = `${registry.host}/mlops-test/absent:1`
          const missing = yield* launchFailure({
            name,
            argv,
            env,
            runtime: ImageRuntime.spec({ image: absent })
          })
          assert.strictEqual(missing._tag, "ImageNotFound", JSON.stringify(missing))
          assert.include(JSON.stringify(missing), absent)
          // no registry answers at all: the pull failed, with the tool's words
          const nowhere = `127.0.0.1:${yield* freePort}/mlops-test/sglang:v0.5.11`
          const unreachable = yield* launchFailure({
            name,
            argv,
            env,
            runtime: ImageRuntime.spec({ image: nowhere })
          })
          assert.strictEqual(unreachable._tag, "ImagePullFailed", JSON.stringify(unreachable))
          assert.include(JSON.stringify(unreachable), "connection refused")

          const events = Chunk.toArray(
            yield* Stream.runCollect(
              Serving.launch({ host: alias, name, argv, env, runtime: ImageRuntime.spec({ image: ref }) })
            )
          )
          assert.strictEqual(events.at(-1)?._tag, "Launched", JSON.stringify(events.at(-1)))
          const preparing = events.filter((e) => e._tag === "Preparing")
          assert.isAbove(preparing.length, 0)
          assert.include(preparing[0]?._tag === "Preparing" ? preparing[0].step : "", ref)
          // pulled before anything else of the launch
          assert.isBelow(
            events.findIndex((e) => e._tag === "Preparing"),
            events.findIndex((e) => e._tag === "Python")
          )
          assert.strictEqual((yield* Containers.run(host.engine, ["image", "inspect", ref])).code, 0)
        })
    )

    it.scoped(
      "jobs from the image: each in its process group's foreground on the GPU the host's waiter picked (only that one), its synced code in the mounted run directory; a secret reaches only the program; a crash is classified; stop removes the container and frees its GPU",
      () =>
        Effect.gen(function* () {
          const host = yield* Docker
          const { standin } = host
          const local = yield* trainingDir
          const long = yield* jobName(Docker, "long")
          const short = yield* jobName(Docker, "short")
          // the first holds a GPU until stopped
          const started = yield* imageJob({
            name: long,
            argv: ["python3", "train.py", "--steps", "3000", "--step-seconds", "0.1"],
            gpus: 1,
            sync: { local },
            env: { HF_TOKEN: TOKEN, RUN_LABEL: "first" },
            follow: false
          })
          const submitted = started.find((e) => e._tag === "Submitted")
          assert.include(
            submitted?._tag === "Submitted" ? submitted.runsIn : "",
            `a container of ${IMAGE} (docker)`
          )
          yield* waitFor(
            Effect.sync(() => gpuApps(standin).length === 1),
            "the first job's GPU memory"
          )
          const first = yield* Job.get(alias, long)
          assert.strictEqual(first.state, "running")
          assert.deepStrictEqual(first.gpus, [0])
          const [id, ...more] = yield* jobContainers(host, long)
          assert.isDefined(id)
          assert.deepStrictEqual(more, [])
          const { parsed, text } = yield* inspect(host, id!)
          // only the picked GPU, the run directory at its own path, an init that passes TERM on
          assert.deepStrictEqual(parsed.HostConfig.DeviceRequests?.[0]?.DeviceIDs, ["0"])
          assert.isTrue(parsed.HostConfig.Init)
          assert.strictEqual(parsed.HostConfig.NetworkMode, "host")
          assert.strictEqual(
            parsed.Mounts.find((m) => m.Source === first.runDir)?.Destination,
            first.runDir,
            JSON.stringify(parsed.Mounts)
          )
          // the secret: in the program's environment, nowhere else
          const pids = (yield* Containers.runOk(host.engine, ["top", id!, "-o", "pid"]))
            .split("\n")
            .slice(1)
            .map((line) => line.trim())
            .filter((line) => /^\d+$/.test(line))
          const environs = pids.map((pid) => {
            try {
              return fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")
            } catch {
              return []
            }
          })
          assert.isTrue(
            environs.some((e) => e.includes(`HF_TOKEN=${TOKEN}`) && e.includes("RUN_LABEL=first")),
            "the program has its environment"
          )
          const ps = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })
          const record = fs
            .readdirSync(first.runDir)
            .filter((file) => fs.statSync(path.join(first.runDir, file)).isFile())
            .map((file) => fs.readFileSync(path.join(first.runDir, file), "utf8"))
            .join("\n")
          for (const [where, seen] of [
            ["docker inspect", text],
            ["ps", ps],
            ["the run directory", record],
            ["the events", JSON.stringify(started)]
          ] as const)
            assert.notInclude(seen, TOKEN, where)
          // the secrets' file was read and emptied inside (this image has no rm); nothing else holds them
          const sealed = fs.readdirSync(first.runDir).filter((file) => file.startsWith(".secrets."))
          assert.isAtMost(sealed.length, 1)
          for (const file of sealed) assert.strictEqual(fs.statSync(path.join(first.runDir, file)).size, 0)

          // the second lands on the other GPU, and its crash is classified from its log
          const crashed = yield* Effect.exit(
            imageJob({
              name: short,
              argv: ["python3", "train.py", "--steps", "6", "--fail", "oom", "--fail-at", "2"],
              gpus: 1,
              sync: { local }
            })
          )
          assert.isTrue(Exit.isFailure(crashed))
          const error = failureOf(crashed)
          assert.strictEqual(error._tag, "JobFailed", JSON.stringify(error))
          if (error._tag === "JobFailed") assert.strictEqual(error.failure?._tag, "OOM")
          const second = yield* Job.get(alias, short)
          assert.deepStrictEqual(second.gpus, [1])
          assert.strictEqual(second.exit?.exitCode, 1)
          assert.include(fs.readFileSync(second.logPath, "utf8"), "training on GPU 1 with 1 worker(s)")
          // removed when it ended: its output is in the log, its files in the run directory
          assert.deepStrictEqual(yield* jobContainers(host, short), [])

          // no GPU asked: none given, even to an image that would take every one; the job's own
          // variables arrive as set, whatever their names
          const cpu = yield* jobName(Docker, "cpu")
          const cpuRun = yield* imageJob({
            name: cpu,
            argv: [
              "python3",
              "-c",
              "import os; print('devices=' + os.environ.get('NVIDIA_VISIBLE_DEVICES', '-') + ' tool=' + os.environ.get('tool', '-') + ' name=' + os.environ.get('name', '-'))"
            ],
            env: { tool: "mine", name: "exp1" }
          })
          assert.isTrue(
            cpuRun.some((e) => e._tag === "Output" && e.line === "devices=void tool=mine name=exp1"),
            JSON.stringify(cpuRun.filter((e) => e._tag === "Output"))
          )

          const stopped = yield* Job.stop(alias, long)
          assert.strictEqual(stopped.outcome, "terminated")
          assert.deepStrictEqual(stopped.gpus, [0])
          assert.deepStrictEqual(yield* jobContainers(host, long), [])
          assert.deepStrictEqual(gpuApps(standin), [])
          assert.strictEqual((yield* Job.get(alias, long)).state, "stopped")
          // and the secrets' file went with the job
          assert.deepStrictEqual(
            fs.readdirSync(first.runDir).filter((file) => file.startsWith(".secrets.")),
            []
          )
        })
    )
  })
})

describe("A Docker Engine without the NVIDIA runtime", () => {
  layer(hostLayer(NoGpuDocker, Containers.startDocker({ gpuHook: false })), {
    excludeTestServices: true,
    timeout: "180 seconds"
  })((it) => {
    it.scoped(
      "preflight's GPU check names it before anything starts; without preflight the log says the same",
      () =>
        Effect.gen(function* () {
          const host = yield* NoGpuDocker
          const port = yield* freePort
          const name = yield* deploymentName(NoGpuDocker, "nogpu")
          const request = { name, argv: fixedStory(host.standin.modelPath, port), env }
          const early = yield* launchFailure(request)
          assert.strictEqual(early._tag, "ContainerGpuUnavailable", JSON.stringify(early))
          assert.deepStrictEqual(yield* containersOf(host, name), [])
          const late = yield* launchFailure({ ...request, preflight: false })
          assert.strictEqual(late._tag, "ContainerGpuUnavailable", JSON.stringify(late))
          const log = fs.readFileSync(path.join(deploymentDir(host.standin, name), "log"), "utf8")
          assert.include(log, 'could not select device driver "" with capabilities: [[gpu]]')
        })
    )
  })
})

describe("Launch with podman (CDI GPUs)", () => {
  layer(hostLayer(Podman, Containers.podmanEnv()), { excludeTestServices: true, timeout: "240 seconds" })(
    (it) => {
      it.scoped(
        "the fixed story runs to ready on its two CDI GPUs; stop leaves no container and no GPU memory",
        () =>
          Effect.gen(function* () {
            const host = yield* Podman
            const port = yield* freePort
            const name = yield* deploymentName(Podman, "ok")
            const deployment = yield* Serving.launchDeployment({
              host: alias,
              name,
              argv: fixedStory(host.standin.modelPath, port),
              env
            })
            assert.strictEqual(deployment.port, port)
            const [id] = yield* containersOf(host, name)
            assert.isDefined(id)
            assert.strictEqual(gpuApps(host.standin).length, 2)
            yield* Stop.stop(alias, name)
            assert.deepStrictEqual(yield* containersOf(host, name), [])
            assert.deepStrictEqual(gpuApps(host.standin), [])
          })
      )
      it.scoped(
        "a job from the image runs on the CDI GPU the host's waiter picked, and its container goes with it",
        () =>
          Effect.gen(function* () {
            const host = yield* Podman
            const local = yield* trainingDir
            const name = yield* jobName(Podman, "cdi")
            const events = yield* imageJob({
              name,
              argv: ["python3", "train.py", "--steps", "3"],
              gpuIds: [1],
              sync: { local },
              runtime: ImageRuntime.spec({ image: IMAGE, tool: "podman" })
            })
            const last = events.at(-1)
            assert.strictEqual(last?._tag === "Finished" ? last.job.state : last?._tag, "succeeded")
            assert.isTrue(
              events.some((e) => e._tag === "Output" && e.line === "training on GPU 1 with 1 worker(s)"),
              JSON.stringify(events.filter((e) => e._tag === "Output"))
            )
            assert.deepStrictEqual(yield* jobContainers(host, name), [])
            assert.deepStrictEqual(gpuApps(host.standin), [])
          })
      )
    }
  )
})
