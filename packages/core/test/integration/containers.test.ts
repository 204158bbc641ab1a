/**
 * The container test support (test/support/Containers.ts) against the real engines on this
 * machine: a Docker Engine (docker.io 20.10) with and without the stand-in GPU hook, podman 4.3
 * with the stand-in CDI GPUs, a local registry, and images holding this machine's Python. The
 * last tests run the stand-in SGLang (packages/sglang/test/integration/standin, used by path:
 * core cannot import another package's tests) in a container and read its GPU memory through
 * the host's stand-in nvidia-smi. Needs root and `docker.io podman runc catatonit
 * docker-registry` (`.ci/run` installs them).
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import * as Containers from "../support/Containers.js"

const standinDir = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../sglang/test/integration/standin"
)

const IMPORTS = "import json, logging, http.server, argparse, asyncio, multiprocessing; print(1)"
const NO_DRIVER = 'could not select device driver "" with capabilities: [[gpu]]'
const GPU1_UUID = "GPU-5tand1n0-0001-4000-8000-000000000001"

const timings: Array<string> = []
const timed = <A, E, R>(label: string, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const started = Date.now()
    const result = yield* effect
    timings.push(`${label}: ${Date.now() - started} ms`)
    return result
  })

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return !/^\S+ \(.*\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

/** Live (non-zombie) processes whose command line mentions `text`. */
const processesMentioning = (text: string) =>
  fs.readdirSync("/proc").filter((entry) => {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) return false
    try {
      return fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(text) && isAlive(Number(entry))
    } catch {
      return false
    }
  })

/** The stand-in SGLang's package and a dist-info, as the sglang tests' `installInImage` gives them. */
const sglangPackages = [
  { from: path.join(standinDir, "sglang"), into: "site-packages" as const },
  { from: path.join(standinDir, "sglang-0.5.11.dist-info"), into: "site-packages" as const }
]

class Shared extends Context.Tag("containers.test/Shared")<
  Shared,
  {
    readonly docker: Containers.DockerDaemon
    readonly python: Containers.Image
    readonly sglang: Containers.Image
  }
>() {}

const shared = Layer.scoped(
  Shared,
  Effect.gen(function* () {
    const docker = yield* timed(
      "dockerd start (requirement-check hook)",
      Containers.startDocker({ gpuHook: "requirement-check" })
    )
    const python = yield* timed(
      "python image: base rootfs + import",
      Containers.buildImage(docker, { name: "mlops-test/python:3", packages: [] })
    )
    timings.push(
      `  base rootfs ${python.timings.base} ms, ${(python.bytes / 1e6).toFixed(1)} MB, import ${python.timings.import} ms (${python.python})`
    )
    const sglang = yield* timed(
      "sglang image (cached base + packages + import)",
      Containers.buildImage(docker, {
        name: "mlops-test/sglang:v0.5.11",
        packages: sglangPackages,
        env: { STANDIN_GPU_REGISTRY: "/var/lib/standin-gpu", STANDIN_PHASE_SECONDS: "0.02" },
        labels: { "org.opencontainers.image.version": "0.5.11" }
      })
    )
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => console.log(`container timings:\n  ${timings.join("\n  ")}`))
    )
    return { docker, python, sglang }
  })
)

const docker = (args: ReadonlyArray<string>) =>
  Effect.flatMap(Shared, ({ docker }) => Containers.run(docker, args))

layer(shared, { excludeTestServices: true, timeout: Duration.minutes(3) })(
  "containers (real engines)",
  (it) => {
    it.effect(
      "a Docker Engine without the hook (vfs): the real --gpus error, a root-only socket, nothing left after its scope",
      () =>
        Effect.gen(function* () {
          const { python } = yield* Shared
          const seen = yield* Effect.scoped(
            Effect.gen(function* () {
              // vfs here (the shared daemon has overlay2 where it works): both storage drivers stay covered
              const plain = yield* timed(
                "dockerd start (no hook, vfs)",
                Containers.startDocker({ storageDriver: "vfs" })
              )
              yield* timed(
                "docker import (vfs)",
                Containers.buildImage(plain, { name: python.name, packages: [] })
              )
              const ran = yield* timed(
                "docker run --rm python3 -c 'import json, ...' (vfs)",
                Containers.run(plain, [
                  "run",
                  "--rm",
                  "--network",
                  "host",
                  python.name,
                  "python3",
                  "-c",
                  IMPORTS
                ])
              )
              assert.strictEqual(ran.stdout, "1\n", ran.stderr)
              const out = yield* Containers.run(plain, [
                "run",
                "--rm",
                "--network",
                "host",
                "--gpus",
                '"device=1"',
                python.name,
                "python3",
                "-c",
                "1"
              ])
              assert.strictEqual(out.code, 125)
              assert.include(out.stderr, `docker: Error response from daemon: ${NO_DRIVER}`)
              // Debian's own 20.10 client says the same
              if (fs.existsSync("/usr/bin/docker")) {
                const debian = yield* Containers.run(
                  plain,
                  ["run", "--rm", "--gpus", "all", python.name, "true"],
                  {
                    bin: "/usr/bin/docker"
                  }
                )
                assert.include(debian.stderr, NO_DRIVER)
              }
              // root:root 0660: another user gets the real error
              const mode = fs.statSync(plain.socket)
              assert.strictEqual(mode.mode & 0o777, 0o660)
              assert.strictEqual(mode.gid, 0)
              let denied = ""
              try {
                execFileSync("runuser", ["-u", "nobody", "--", "docker", "ps"], {
                  env: { ...process.env, ...plain.env },
                  stdio: "pipe"
                })
              } catch (e) {
                denied = String((e as { stderr?: Buffer }).stderr ?? e)
              }
              assert.include(
                denied,
                `permission denied while trying to connect to the Docker daemon socket at ${plain.env.DOCKER_HOST}`
              )
              const containerd = processesMentioning(`${plain.dir}/exec/containerd/containerd.toml`)
              assert.isAbove(containerd.length, 0)
              return { dir: plain.dir, pid: plain.pid }
            })
          ).pipe((e) => timed("dockerd (vfs): start, import, 3 runs, stop", e))
          assert.isFalse(isAlive(seen.pid), "dockerd still runs")
          assert.deepStrictEqual(processesMentioning(seen.dir), [], "dockerd/containerd/shim left")
          assert.deepStrictEqual(Containers.mountsUnder(seen.dir), [])
          assert.isFalse(fs.existsSync(seen.dir))
        })
    )

    it.effect("an imported image runs the host's Python; a local image never touches the network", () =>
      Effect.gen(function* () {
        const { docker: daemon, python } = yield* Shared
        const out = yield* timed(
          "docker run --rm python3 -c 'import json, ...'",
          docker(["run", "--rm", "--network", "host", python.name, "python3", "-c", IMPORTS])
        )
        assert.strictEqual(out.stdout, "1\n", out.stderr)
        const shell = yield* docker([
          "run",
          "--rm",
          "--network",
          "host",
          python.name,
          "/bin/sh",
          "-c",
          "echo $((6*7))"
        ])
        assert.strictEqual(shell.stdout, "42\n")
        const label = yield* docker(["inspect", "--format", "{{.Config.Env}}", "mlops-test/sglang:v0.5.11"])
        assert.include(label.stdout, "STANDIN_GPU_REGISTRY=/var/lib/standin-gpu")
        const version = yield* docker([
          "inspect",
          "--format",
          '{{index .Config.Labels "org.opencontainers.image.version"}}',
          "mlops-test/sglang:v0.5.11"
        ])
        assert.strictEqual(version.stdout, "0.5.11\n", version.stderr)
        assert.deepStrictEqual(daemon.networkAttempts(), [])
        // an absent short name would be pulled from docker.io: the guard proxy refuses it here
        const absent = yield* docker(["run", "--rm", "--network", "host", "mlops-test/absent:1", "true"])
        assert.notStrictEqual(absent.code, 0)
        assert.include(absent.stderr, "Unable to find image 'mlops-test/absent:1' locally")
        assert.isTrue(daemon.networkAttempts().some((a) => a.includes("registry-1.docker.io:443")))
      })
    )

    it.effect("--gpus with the hook: the container sees NVIDIA_VISIBLE_DEVICES of the devices asked", () =>
      Effect.gen(function* () {
        const { python } = yield* Shared
        const show = "import os; print(os.environ.get('NVIDIA_VISIBLE_DEVICES'))"
        for (const [gpus, seen] of [
          ['"device=1"', "1"],
          ['"device=0,1"', "0,1"],
          ["all", "all"]
        ] as const) {
          const out = yield* docker([
            "run",
            "--rm",
            "--network",
            "host",
            "--gpus",
            gpus,
            python.name,
            "python3",
            "-c",
            show
          ])
          assert.strictEqual(out.stdout.trim(), seen, out.stderr)
        }
      })
    )

    it.effect(
      "the requirement-check hook refuses cuda>=12.8 on the 12.4 driver (as docker relays it) and accepts 12.2",
      () =>
        Effect.gen(function* () {
          const { docker: daemon, python } = yield* Shared
          const withRequire = (require: string) =>
            docker([
              "run",
              "--rm",
              "--network",
              "host",
              "--gpus",
              "all",
              "-e",
              `NVIDIA_REQUIRE_CUDA=${require}`,
              python.name,
              "python3",
              "-c",
              "print('started')"
            ])
          const refused = yield* withRequire("cuda>=12.8 brand=tesla,driver>=470,driver<471")
          assert.strictEqual(refused.code, 125)
          assert.include(
            refused.stderr,
            "docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: " +
              "unable to start container process: error during container init: error running hook #0: error running hook: " +
              "exit status 1, stdout: , stderr: nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, " +
              "please update your driver to a newer version, or use an earlier cuda container: unknown"
          )
          const accepted = yield* withRequire("cuda>=12.2")
          assert.strictEqual(accepted.stdout, "started\n", accepted.stderr)
          // a newer stand-in driver: the file next to the hook
          fs.writeFileSync(path.join(daemon.hookDir!, "cuda-version"), "12.8\n")
          const newer = yield* withRequire("cuda>=12.8")
          fs.writeFileSync(path.join(daemon.hookDir!, "cuda-version"), "12.4\n")
          assert.strictEqual(newer.stdout, "started\n", newer.stderr)
        })
    )

    it.effect(
      "podman runs the same rootfs with --network host and a CDI GPU; a local registry takes a push and serves pulls",
      () =>
        Effect.gen(function* () {
          const { docker: daemon, python } = yield* Shared
          yield* Effect.scoped(
            Effect.gen(function* () {
              const podman = yield* Containers.podmanEnv()
              const registry = yield* Containers.startRegistry()
              const image = yield* timed(
                "podman import",
                Containers.buildImage(podman, { name: python.name, packages: [] })
              )
              const show =
                "import os; print(os.environ.get('NVIDIA_VISIBLE_DEVICES'), sorted(d for d in os.listdir('/dev') if d.startswith('nvidia')), os.environ.get('HTTP_PROXY'))"
              const out = yield* timed(
                "podman run --rm --device nvidia.com/gpu=1",
                Containers.run(podman, [
                  "run",
                  "--rm",
                  "--network",
                  "host",
                  "--device",
                  "nvidia.com/gpu=1",
                  image.name,
                  "python3",
                  "-c",
                  show
                ])
              )
              // the guard proxy is podman's own, never the container's
              assert.strictEqual(out.stdout, "1 ['nvidia1'] None\n", out.stderr)
              const bad = yield* Containers.run(podman, [
                "run",
                "--rm",
                "--network",
                "host",
                "--device",
                "nvidia.com/gpu=7",
                image.name,
                "true"
              ])
              assert.include(bad.stderr, "unresolvable CDI devices nvidia.com/gpu=7")

              // docker pushes; docker (after removing its copy) and podman pull from 127.0.0.1
              const ref = yield* timed(
                "docker tag + push",
                Containers.pushImage(daemon, registry, python.name)
              )
              assert.strictEqual(ref, `${registry.host}/${python.name}`)
              yield* Containers.runOk(daemon, ["rmi", ref])
              yield* timed("docker pull", Containers.runOk(daemon, ["pull", ref]))
              const pulled = yield* Containers.run(daemon, [
                "run",
                "--rm",
                "--network",
                "host",
                ref,
                "python3",
                "-c",
                "print(2)"
              ])
              assert.strictEqual(pulled.stdout, "2\n", pulled.stderr)
              yield* timed("podman pull", Containers.runOk(podman, ["pull", ref]))
              const viaPodman = yield* Containers.run(podman, [
                "run",
                "--rm",
                "--network",
                "host",
                ref,
                "python3",
                "-c",
                "print(3)"
              ])
              assert.strictEqual(viaPodman.stdout, "3\n", viaPodman.stderr)
              assert.deepStrictEqual(podman.networkAttempts(), [])
              // a short name that is not local: no unqualified-search registries, so no lookup at all
              const short = yield* Containers.run(podman, [
                "run",
                "--rm",
                "--network",
                "host",
                "mlops-test/absent:1",
                "true"
              ])
              assert.include(short.stderr, "no unqualified-search registries are defined")
              assert.deepStrictEqual(podman.networkAttempts(), [])
              // a container left running is removed with the scope
              yield* Containers.runOk(podman, [
                "run",
                "-d",
                "--network",
                "host",
                image.name,
                "python3",
                "-c",
                "import time; time.sleep(300)"
              ])
              return podman.dir
            })
          ).pipe(
            Effect.tap((dir) =>
              Effect.sync(() => {
                assert.isFalse(fs.existsSync(dir))
                assert.deepStrictEqual(processesMentioning(dir), [])
                assert.isFalse(fs.existsSync("/var/run/cdi/mlops-test-standin-gpu.yaml") && !otherCdiUsers())
              })
            )
          )
        })
    )

    it.scoped(
      "the host's stand-in nvidia-smi reports a containerised stand-in rank's GPU memory under its host pid, on the physical GPU",
      () =>
        Effect.gen(function* () {
          const { docker: daemon, sglang } = yield* Shared
          const host = yield* Effect.acquireRelease(
            Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-containers-test-"))),
            (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
          )
          // the host's stand-in: <venv>/bin/nvidia-smi reads <venv>/standin-gpu (and, told so, the containers)
          const smi = path.join(host, "venv", "bin", "nvidia-smi")
          fs.mkdirSync(path.dirname(smi), { recursive: true })
          fs.copyFileSync(path.join(standinDir, "nvidia-smi"), smi)
          fs.chmodSync(smi, 0o755)
          const apps = () =>
            execFileSync(smi, [
              "--query-compute-apps=pid,gpu_uuid,used_memory",
              "--format=csv,noheader,nounits"
            ])
              .toString()
              .trim()
          const model = path.join(host, "model")
          fs.mkdirSync(model)
          fs.writeFileSync(
            path.join(model, "config.json"),
            JSON.stringify({ architectures: ["LlamaForCausalLM"] })
          )
          const port = 20000 + Math.floor(Math.random() * 20000)
          const name = `mlops-test-rank-${process.pid}`
          yield* Effect.addFinalizer(() => Effect.ignore(Containers.run(daemon, ["rm", "-f", name])))
          yield* Containers.runOk(daemon, [
            "run",
            "-d",
            "--name",
            name,
            "--network",
            "host",
            "--gpus",
            '"device=1"',
            "-v",
            `${model}:/models/m:ro`,
            sglang.name,
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "/models/m",
            "--port",
            String(port)
          ])
          const registry = path.join(host, "venv", "standin-gpu")
          fs.mkdirSync(registry)
          fs.writeFileSync(path.join(registry, "containers"), `${daemon.dir}\n`)
          const line = yield* Effect.suspend(() => {
            const out = apps()
            return out.includes("42800") ? Effect.succeed(out) : Effect.fail(out)
          }).pipe(
            Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 150 }),
            Effect.catchAll((last) =>
              Effect.flatMap(Containers.run(daemon, ["logs", name]), (logs) =>
                Effect.die(new Error(`no GPU memory seen: ${last}\n${logs.stdout}${logs.stderr}`))
              )
            )
          )
          const [pid, uuid, mib] = line.split(", ")
          // an nvidia-smi not told about this engine sees nothing (other tests' containers stay invisible too)
          fs.renameSync(path.join(registry, "containers"), path.join(registry, "containers.off"))
          assert.strictEqual(apps(), "")
          fs.renameSync(path.join(registry, "containers.off"), path.join(registry, "containers"))
          assert.strictEqual(uuid, GPU1_UUID)
          assert.strictEqual(mib, "42800")
          const nspid = fs
            .readFileSync(`/proc/${pid}/status`, "utf8")
            .split("\n")
            .find((l) => l.startsWith("NSpid:"))!
            .split(/\s+/)
            .slice(1)
          assert.strictEqual(nspid.length, 2)
          assert.strictEqual(nspid[0], pid)
          const top = yield* Containers.runOk(daemon, ["top", name, "-o", "pid"])
          assert.include(
            top.split("\n").map((l) => l.trim()),
            pid
          )
          const used = execFileSync(smi, [
            "--query-gpu=index,memory.used",
            "--format=csv,noheader,nounits"
          ]).toString()
          assert.include(used, "1, 42803")
          yield* Containers.runOk(daemon, ["rm", "-f", name])
          assert.strictEqual(apps(), "")
        })
    )

    it.scoped(
      "the stand-in in a container given no GPU fails as torch does; TP 2 on docker's 64 MB /dev/shm fails as NCCL does",
      () =>
        Effect.gen(function* () {
          const { sglang } = yield* Shared
          const host = yield* Effect.acquireRelease(
            Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-containers-test-"))),
            (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
          )
          fs.writeFileSync(
            path.join(host, "config.json"),
            JSON.stringify({ architectures: ["LlamaForCausalLM"] })
          )
          const launch = (flags: ReadonlyArray<string>, tp: number) =>
            docker([
              "run",
              "--rm",
              "--network",
              "host",
              ...flags,
              "-v",
              `${host}:/models/m:ro`,
              sglang.name,
              "python3",
              "-m",
              "sglang.launch_server",
              "--model-path",
              "/models/m",
              "--port",
              String(20000 + Math.floor(Math.random() * 20000)),
              "--tp",
              String(tp)
            ])
          const noGpu = yield* launch([], 1)
          assert.strictEqual(noGpu.code, 1)
          assert.match(
            noGpu.stderr,
            /Traceback \(most recent call last\):[\s\S]*\nRuntimeError: No CUDA GPUs are available\n$/
          )
          const shm = yield* launch(["--gpus", "all", "-e", "NCCL_DEBUG=WARN"], 2)
          assert.notStrictEqual(shm.code, 0)
          const all = shm.stdout + shm.stderr
          assert.include(all, "Scheduler hit an exception: Traceback (most recent call last):")
          assert.include(
            all,
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:81, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"
          )
          assert.match(
            all,
            /NCCL WARN Error while creating shared memory segment \/dev\/shm\/nccl-\w{6} \(size 9637888\)/
          )
        })
    )
  }
)

/** Another process still uses the shared CDI spec (a podman test running in parallel). */
const otherCdiUsers = () => {
  try {
    return fs.readdirSync("/run/mlops-test-cdi-users").some((name) => isAlive(Number(name.split("-")[0])))
  } catch {
    return false
  }
}
