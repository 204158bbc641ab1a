/**
 * End to end over a real sshd on 127.0.0.1 with the live ssh2 layer: a stand-in SGLang
 * (test/integration/standin/, a Python package in a throwaway venv, plus a stand-in
 * `nvidia-smi` first on the remote PATH) is launched, classified, and stopped exactly as a
 * real one would be. The test host's Python env comes from hosts.json, like a user's.
 */

import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import * as Logs from "@mlops/serve/Logs"
import * as Stop from "@mlops/serve/Stop"
import { Context, Effect, Exit, Fiber, Layer, Stream } from "effect"
import type * as Sshd from "../../../core/test/support/Sshd.js"
import * as Serving from "../support/serving.js"
import type * as Standin from "./standin/install.js"
import {
  alias,
  deploymentDir,
  standinEnv as env,
  fixedStory,
  freePort,
  liveLayer,
  removeDeployment,
  startHost,
  story as storyOf
} from "./support.js"

class E2E extends Context.Tag("test/E2E")<
  E2E,
  { readonly standin: Standin.Standin; readonly sshd: Sshd.Sshd }
>() {}

const TestLayer = Layer.unwrapEffect(Effect.map(E2E, liveLayer)).pipe(
  Layer.provideMerge(Layer.scoped(E2E, startHost))
)

/** A listener in this process holding `port` for the scope (the "other process" on the host). */
const holdPort = (port: number) =>
  Effect.acquireRelease(
    Effect.async<net.Server>((resume) => {
      const server = net.createServer((socket) => socket.end())
      server.listen(port, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
  )

/**
 * The live (non-zombie) processes of a deployment's process group (launcher, ranks and the
 * supervisor all share it), read with `ps` on this machine, which is the test host.
 */
const groupProcesses = (standin: Standin.Standin, name: string): Array<string> => {
  const pgidFile = path.join(deploymentDir(standin, name), "pgid")
  if (!fs.existsSync(pgidFile)) return []
  const pgid = fs.readFileSync(pgidFile, "utf8").trim()
  return execFileSync("ps", ["-A", "-o", "pgid=", "-o", "stat=", "-o", "args="], { encoding: "utf8" })
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([group, stat]) => group === pgid && !stat?.startsWith("Z"))
    .map((words) => words.slice(2).join(" "))
}

/** A fresh deployment name; afterwards (even when an assertion failed) it is stopped and its on-host directory removed. */
const deploymentName = (label: string) =>
  Effect.flatMap(E2E, ({ standin }) =>
    Effect.acquireRelease(
      Effect.sync(() => `e2e-${label}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`),
      (name) =>
        Stop.stop(alias, name).pipe(
          Effect.ignore,
          Effect.zipRight(Effect.sync(() => removeDeployment(standin, name)))
        )
    )
  )

/** Launch on the test host and return its typed failure (throws if it succeeded or died). */
const launchFailure = (request: Omit<Serving.Request, "host">) =>
  Serving.launchDeployment({ host: alias, ...request }).pipe(Effect.exit, Effect.map(failureOf))

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected the launch to fail, it succeeded")
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (failure === undefined) throw new Error(`expected a typed failure, got ${String(exit.cause)}`)
  return failure
}

describe("Launch end to end (real sshd, stand-in SGLang)", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.scoped("launches to ready, then stop leaves nothing running", () =>
      Effect.gen(function* () {
        const { standin } = yield* E2E
        const port = yield* freePort
        const name = yield* deploymentName("ok")
        const events = yield* Serving.launch({
          host: alias,
          name,
          argv: fixedStory(standin.modelPath, port),
          env: env(standin)
        }).pipe(Stream.runCollect)
        const list = [...events]
        const last = list[list.length - 1]
        assert.strictEqual(last?._tag, "Launched")
        if (last?._tag !== "Launched") return
        const deployment = last.deployment
        // under the hosts.json stateDir, not this machine's real ~/.mlops
        assert.strictEqual(deployment.runDir, deploymentDir(standin, name))
        assert.isTrue(fs.existsSync(path.join(deploymentDir(standin, name), "meta.json")))
        assert.isFalse(fs.existsSync(path.join(os.homedir(), ".mlops", "deployments", name)))
        assert.strictEqual(deployment.port, port)
        assert.strictEqual(deployment.args?.speculative_algorithm, "EAGLE")
        assert.strictEqual(deployment.args?.speculative_num_draft_tokens, 2)
        assert.strictEqual(deployment.args?.max_running_requests, 48)
        const phases = deployment.phases.map((p) => p.phase)
        assert.deepStrictEqual(
          ["weights-loading", "kv-cache", "cuda-graph", "ready"].filter((p) => phases.includes(p)),
          ["weights-loading", "kv-cache", "cuda-graph", "ready"]
        )
        assert.isTrue(list.some((e) => e._tag === "HealthChecked" && e.status === 200))
        // ready means one streamed token; its times from the start, in order, kept with the record
        assert.isTrue(
          list.some(
            (e) =>
              e._tag === "HealthChecked" && e.endpoint === "POST /v1/completions (stream)" && e.status === 200
          )
        )
        const times = deployment.timeToReady
        assert.isDefined(times)
        const { portOpenMs, httpReadyMs, firstTokenMs } = times!
        assert.isNotNull(portOpenMs)
        assert.isNotNull(httpReadyMs)
        assert.isNotNull(firstTokenMs)
        assert.isAtMost(portOpenMs!, httpReadyMs!)
        assert.isAtMost(httpReadyMs!, firstTokenMs!)
        assert.isAtMost(firstTokenMs!, (deployment.readyAt ?? 0) - deployment.startedAt)
        const ready = JSON.parse(
          fs.readFileSync(path.join(deploymentDir(standin, name), "ready.json"), "utf8")
        )
        assert.deepStrictEqual(ready.timeToReady, times)
        // launcher + 2 scheduler ranks run on the host (besides mlops' detached-process wrapper)
        const pythons = groupProcesses(standin, name).filter((line) =>
          /python[0-9.]*$/.test(line.split(" ")[0] ?? "")
        )
        assert.strictEqual(pythons.length, 3, groupProcesses(standin, name).join("\n"))

        yield* Stop.stop(alias, name)
        assert.deepStrictEqual(groupProcesses(standin, name), [])
        const gpuApps = execFileSync(path.join(standin.bin, "nvidia-smi"), [
          "--query-compute-apps=pid,used_memory",
          "--format=csv,noheader,nounits"
        ]).toString()
        assert.strictEqual(gpuApps.trim(), "")
      })
    )

    it.scoped(
      "/health 200 but no streamed token: not ready, NotHealthy names the step and the times it reached; the server is stopped",
      () =>
        Effect.gen(function* () {
          const { standin } = yield* E2E
          const port = yield* freePort
          const name = yield* deploymentName("nostream")
          const failure = yield* launchFailure({
            name,
            argv: fixedStory(standin.modelPath, port),
            env: { ...env(standin), STANDIN_NO_STREAM: "1" },
            readinessTimeout: "3 seconds"
          })
          assert.strictEqual(failure._tag, "NotHealthy", JSON.stringify(failure))
          if (failure._tag !== "NotHealthy") return
          assert.strictEqual(failure.endpoint, "POST /v1/completions (stream)")
          assert.include(failure.reason, "no streamed token within 3s")
          assert.isNotNull(failure.timeToReady?.portOpenMs ?? null)
          assert.isNotNull(failure.timeToReady?.httpReadyMs ?? null)
          assert.isNull(failure.timeToReady?.firstTokenMs)
          assert.include(failure.message, "TTFT -")
          assert.deepStrictEqual(groupProcesses(standin, name), [])
        })
    )

    it.scoped(
      "status: a ready server that stops generating is healthy but not generating (a canary token)",
      () =>
        Effect.gen(function* () {
          const { standin } = yield* E2E
          const port = yield* freePort
          const name = yield* deploymentName("canary")
          const hang = path.join(standin.dir, `hang-${name}`)
          yield* Serving.launchDeployment({
            host: alias,
            name,
            argv: fixedStory(standin.modelPath, port),
            env: { ...env(standin), STANDIN_HANG_FILE: hang }
          })
          const [before] = yield* Serving.statusOfHost(alias, { name })
          assert.strictEqual(before?.healthy, true)
          assert.strictEqual(before?.generating, true)
          fs.writeFileSync(hang, "")
          const [after] = yield* Serving.statusOfHost(alias, { name })
          assert.strictEqual(after?.healthy, true)
          assert.strictEqual(after?.generating, false)
        })
    )

    it.scoped(
      "logs -f: an idle server's quiet log is not a stall; once its requests hang, one Stalled item",
      () =>
        Effect.gen(function* () {
          const { standin } = yield* E2E
          const port = yield* freePort
          const name = yield* deploymentName("stall")
          const hang = path.join(standin.dir, `hang-${name}`)
          yield* Serving.launchDeployment({
            host: alias,
            name,
            argv: fixedStory(standin.modelPath, port),
            env: { ...env(standin), STANDIN_HANG_FILE: hang }
          })
          const seen: Array<Stream.Stream.Success<ReturnType<typeof Logs.follow>>> = []
          const following = yield* Logs.follow(alias, name, Serving.engines, {
            lines: 0,
            quietAfter: "1 second"
          }).pipe(
            Stream.tap((item) => Effect.sync(() => seen.push(item))),
            Stream.runDrain,
            Effect.fork
          )
          // quiet but generating (the canary answers): nothing to say
          yield* Effect.sleep("3 seconds")
          assert.deepStrictEqual(
            seen.filter((item) => item._tag !== "LogLine"),
            []
          )
          fs.writeFileSync(hang, "")
          const hungAt = Date.now()
          // said once within the canary's 10 s (and the checks' spacing) of the hang...
          while (!seen.some((item) => item._tag === "Stalled") && Date.now() - hungAt < 30_000)
            yield* Effect.sleep("100 millis")
          const stalled = seen.find((item) => item._tag === "Stalled")
          assert.isDefined(stalled)
          if (stalled?._tag !== "Stalled") return
          const saidAfter = Date.now() - hungAt
          // ...and not again while it stays quiet (two more quiet spells)
          yield* Effect.sleep("3 seconds")
          yield* Fiber.interrupt(following)
          assert.strictEqual(seen.filter((item) => item._tag === "Stalled").length, 1)
          assert.isAtLeast(stalled.quietMs, 1000)
          // at most a quiet spell, the canary's 10 s and its checks' spacing after the hang
          assert.isAtMost(saidAfter, 15_000)
        })
    )

    it.scoped("a rank's CUDA OOM is classified with its fix and the process group is stopped", () =>
      Effect.gen(function* () {
        const { standin } = yield* E2E
        const port = yield* freePort
        const name = yield* deploymentName("oom")
        const argv = [...fixedStory(standin.modelPath, port), "--mem-fraction-static", "0.99"]
        const failure = yield* launchFailure({ name, argv, env: env(standin), preflight: false })
        assert.strictEqual(failure._tag, "OOM")
        if (failure._tag !== "OOM") return
        assert.strictEqual(failure.process, "TP1")
        assert.isDefined(failure.fix?.flags?.["--mem-fraction-static"])
        assert.isTrue(failure.evidence.some((e) => e.text.includes("CUDA out of memory")))
        assert.deepStrictEqual(groupProcesses(standin, name), [])
        // the log is kept on the host
        const log = path.join(deploymentDir(standin, name), "log")
        assert.isTrue(fs.readFileSync(log, "utf8").includes("Scheduler hit an exception"))
      })
    )

    it.scoped("the story's two argument errors, met at runtime with preflight off, each with its fix", () =>
      Effect.gen(function* () {
        const { standin } = yield* E2E
        const port = yield* freePort
        const name = yield* deploymentName("story")
        const story = [...storyOf(standin.modelPath), "--port", String(port)]
        const first = yield* launchFailure({ name, argv: story, env: env(standin), preflight: false })
        assert.strictEqual(first._tag, "MissingSchedulerStrategy")
        if (first._tag !== "MissingSchedulerStrategy") return
        assert.strictEqual(first.fix?.flags?.["--mamba-scheduler-strategy"], "extra_buffer")

        const second = yield* launchFailure({
          name,
          argv: [...story, "--mamba-scheduler-strategy", "extra_buffer"],
          env: env(standin),
          preflight: false,
          replace: true
        })
        assert.strictEqual(second._tag, "AssertionFailure")
        if (second._tag !== "AssertionFailure") return
        assert.include(second.source, "speculative_eagle_topk is None")
        assert.isDefined(second.fix?.flags?.["--speculative-num-steps"])
      })
    )

    it.scoped(
      "a taken port: preflight names the holder; without preflight the bind error is classified",
      () =>
        Effect.gen(function* () {
          const { standin } = yield* E2E
          const port = yield* freePort
          yield* holdPort(port)
          const name = yield* deploymentName("port")
          const argv = fixedStory(standin.modelPath, port)

          const preflight = yield* launchFailure({ name, argv, env: env(standin) })
          assert.strictEqual(preflight._tag, "PortUnavailable")
          if (preflight._tag !== "PortUnavailable") return
          assert.strictEqual(preflight.port, port)
          assert.strictEqual(preflight.pid, process.pid)

          const runtime = yield* launchFailure({ name, argv, env: env(standin), preflight: false })
          assert.strictEqual(runtime._tag, "PortInUse")
          if (runtime._tag !== "PortInUse") return
          assert.strictEqual(runtime.port, port)
          assert.deepStrictEqual(groupProcesses(standin, name), [])
        })
    )
  })
})
