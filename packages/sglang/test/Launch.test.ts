import { assert, describe, it } from "@effect/vitest"
import { FakeHost } from "@mlops/core/testing"
import { Chunk, Effect, Fiber, Stream } from "effect"
import * as Check from "../src/Check.js"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"
import { advance, drive, fixedArgv, storyArgv } from "./support/sim.js"

const env = { SGLANG_ENABLE_SPEC_V2: "1" }

const events = (request: Serving.Request) =>
  drive(Stream.runCollect(Serving.launch(request)).pipe(Effect.map(Chunk.toReadonlyArray)))

// the servers (their supervisors, `sh`, aside)
const simProcesses = Effect.map(
  Effect.flatMap(FakeHost.host("sim"), (h) => h.processes),
  (processes) => processes.filter((p) => p.argv[0] !== "sh")
)

describe("Launch", () => {
  it.effect("the story's first command: both problems in SGLang's order and the fixed command", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(drive(Serving.launchDeployment({ host: "sim", argv: storyArgv, env })))
      assert.strictEqual(error._tag, "LaunchRulesViolated")
      if (error._tag !== "LaunchRulesViolated") return
      assert.deepStrictEqual(
        error.violations.map(
          (v) => v.fields.includes("mamba_scheduler_strategy") || v.ruleId.startsWith("R24")
        ),
        [true, false]
      )
      assert.strictEqual(error.violations[1]!.errorType, "AssertionError")
      assert.include(error.message, "--mamba-scheduler-strategy extra_buffer")
      assert.include(error.message, "--speculative-num-steps")
      // nothing was started on the host
      assert.lengthOf(yield* simProcesses, 0)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "--nnodes 2 on one host: refused before anything starts (NotEnoughHosts), by launch and check alike",
    () =>
      Effect.gen(function* () {
        const argv = [...fixedArgv, "--nnodes", "2"]
        const error = yield* Effect.flip(drive(Serving.launchDeployment({ host: "sim", argv, env })))
        assert.strictEqual(error._tag, "NotEnoughHosts", error.message)
        if (error._tag !== "NotEnoughHosts") return
        assert.deepStrictEqual([error.nodes, error.hosts], [2, 1])
        assert.include(error.message, "rank 0 would wait for them")
        // nothing was started, nothing recorded
        assert.lengthOf(yield* simProcesses, 0)
        const handle = yield* FakeHost.host("sim")
        assert.isUndefined(yield* handle.fs.readText("/root/.mlops/deployments/qwen3.6-27b/meta.json"))
        const checked = yield* Effect.flip(Check.host({ host: "sim", argv }))
        assert.strictEqual(checked._tag, "NotEnoughHosts")
      }).pipe(Effect.provide(Simulator.layer))
  )

  it("one command becomes the commands of its ranks: --nnodes, --node-rank and --dist-init-addr, nothing else changed", () => {
    const ranks = Serving.engine.ranks(
      ["--model-path", "/m", "--tp", "16", "--nnodes=2", "--node-rank", "1"],
      {
        nodes: 2,
        head: "head-node",
        port: 29500
      }
    )
    assert.deepStrictEqual(ranks, [
      [
        "--model-path",
        "/m",
        "--tp",
        "16",
        "--nnodes",
        "2",
        "--node-rank",
        "0",
        "--dist-init-addr",
        "head-node:29500"
      ],
      [
        "--model-path",
        "/m",
        "--tp",
        "16",
        "--nnodes",
        "2",
        "--node-rank",
        "1",
        "--dist-init-addr",
        "head-node:29500"
      ]
    ])
    // the alias `--nccl-init-addr` is the same flag: replaced, not repeated
    const [head] = Serving.engine.ranks(["--model-path", "/m", "--nccl-init-addr", "h:1"], {
      nodes: 3,
      head: "h",
      port: 2
    })
    assert.deepStrictEqual(head, [
      "--model-path",
      "/m",
      "--nnodes",
      "3",
      "--node-rank",
      "0",
      "--dist-init-addr",
      "h:2"
    ])
  })

  it.effect("the fixed command reaches ready: EAGLE 1/1/2, 48 requests, phases in order", () =>
    Effect.gen(function* () {
      const all = yield* events({ host: "sim", argv: fixedArgv, env })
      const last = all.at(-1)!
      assert.strictEqual(last._tag, "Launched")
      if (last._tag !== "Launched") return
      const d = last.deployment
      assert.strictEqual(d.args?.speculative_algorithm, "EAGLE")
      assert.deepStrictEqual(
        [d.args?.speculative_num_steps, d.args?.speculative_eagle_topk, d.args?.speculative_num_draft_tokens],
        [1, 1, 2]
      )
      assert.strictEqual(d.args?.max_running_requests, 48)
      assert.strictEqual(d.engineVersion, "0.5.11")
      assert.strictEqual(d.engine, "sglang")
      const phases = d.phases.map((p) => p.phase)
      assert.includeMembers(phases, ["weights-loading", "kv-cache", "cuda-graph", "draft-weights", "ready"])
      const times = d.phases.map((p) => p.atMs)
      assert.deepStrictEqual(
        times,
        [...times].sort((a, b) => a - b)
      )
      assert.isTrue(
        all.some((e) => e._tag === "HealthChecked" && e.endpoint === "GET /health" && e.status === 200)
      )
      assert.isTrue(
        all.some((e) => e._tag === "HealthChecked" && e.endpoint === "POST /generate" && e.status === 200)
      )
      // the server keeps running after the launch returns
      assert.lengthOf(yield* simProcesses, 1)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "preflight off: the story fails at runtime with MissingSchedulerStrategy, then AssertionFailure",
    () =>
      Effect.gen(function* () {
        const first = yield* Effect.flip(
          drive(Serving.launchDeployment({ host: "sim", argv: storyArgv, env, preflight: false }))
        )
        assert.strictEqual(first._tag, "MissingSchedulerStrategy")
        const withFix = [...storyArgv, "--mamba-scheduler-strategy", "extra_buffer"]
        const second = yield* Effect.flip(
          drive(Serving.launchDeployment({ host: "sim", argv: withFix, env, preflight: false }))
        )
        assert.strictEqual(second._tag, "AssertionFailure")
      }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("autoFix 2 with preflight off: two failed attempts, then ready", () =>
    Effect.gen(function* () {
      const all = yield* events({ host: "sim", argv: storyArgv, env, preflight: false, autoFix: 2 })
      const failed = all.filter((e) => e._tag === "AttemptFailed")
      assert.deepStrictEqual(
        failed.map((e) => (e._tag === "AttemptFailed" ? e.failure._tag : "")),
        ["MissingSchedulerStrategy", "AssertionFailure"]
      )
      assert.lengthOf(
        all.filter((e) => e._tag === "Spawned"),
        3
      )
      const last = all.at(-1)!
      assert.strictEqual(last._tag, "Launched")
      if (last._tag === "Launched") assert.include(last.deployment.argv, "extra_buffer")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("OOM: typed failure, the process group is stopped, the log is kept", () =>
    Effect.gen(function* () {
      const argv = ["--model-path", Simulator.modelPath, "--tp", "1"]
      const error = yield* Effect.flip(drive(Serving.launchDeployment({ host: "sim", argv, name: "oom" })))
      assert.strictEqual(error._tag, "OOM")
      assert.lengthOf(yield* simProcesses, 0)
      const handle = yield* FakeHost.host("sim")
      const log = yield* handle.fs.readText("/root/.mlops/deployments/oom/log")
      assert.include(log ?? "", "CUDA out of memory")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "a second server on the first one's GPUs and port: both problems, GPUs first, naming the holder",
    () =>
      Effect.gen(function* () {
        const first = yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "a" }))
        const second = (allowBusyGpus: boolean) =>
          Effect.flip(
            drive(
              Serving.launchDeployment({
                host: "sim",
                argv: ["--model-path", Simulator.modelPath, "--tp", "2"],
                name: "b",
                allowBusyGpus
              })
            )
          )
        const error = yield* second(false)
        assert.strictEqual(error._tag, "HostNotReady")
        if (error._tag !== "HostNotReady") return
        assert.deepStrictEqual(
          error.problems.map((p) => p._tag),
          ["GpusBusy", "PortUnavailable"]
        )
        const [busy, port] = error.problems
        if (busy?._tag !== "GpusBusy" || port?._tag !== "PortUnavailable") return
        assert.deepStrictEqual(
          busy.holders.map((h) => [h.pid, h.gpu, h.deployment]),
          [
            [Serving.pidOf(first), 0, "a"],
            [Serving.pidOf(first), 1, "a"]
          ]
        )
        assert.isTrue(
          busy.holders.every((h) => (h.usedMiB ?? 0) > 1000 && h.command?.includes("sglang") === true)
        )
        assert.include(busy.fix, "mlops stop --host sim --name a")
        assert.include(busy.fix, "--allow-busy-gpus")
        assert.strictEqual(port.pid, Serving.pidOf(first))
        assert.strictEqual(port.port, 30000)
        assert.include(error.message, `pid ${Serving.pidOf(first)}`)
        // allowed: the GPUs are no longer a problem, the port still is
        const allowed = yield* second(true)
        assert.strictEqual(allowed._tag, "PortUnavailable")
      }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("idempotent: the same launch again returns the running deployment", () =>
    Effect.gen(function* () {
      const first = yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env }))
      const again = yield* events({ host: "sim", argv: fixedArgv, env })
      assert.deepStrictEqual(
        again.map((e) => e._tag),
        ["Connected", "AlreadyRunning", "Launched"]
      )
      const last = again.at(-1)!
      if (last._tag === "Launched") assert.strictEqual(Serving.pidOf(last.deployment), Serving.pidOf(first))
      assert.lengthOf(yield* simProcesses, 1)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("different args under the same name: DeploymentExists, unless replace", () =>
    Effect.gen(function* () {
      const first = yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "q" }))
      const other = [...fixedArgv, "--mem-fraction-static", "0.8"]
      const error = yield* Effect.flip(
        drive(Serving.launchDeployment({ host: "sim", argv: other, env, name: "q" }))
      )
      assert.strictEqual(error._tag, "DeploymentExists")
      const replaced = yield* drive(
        Serving.launchDeployment({ host: "sim", argv: other, env, name: "q", replace: true })
      )
      assert.notStrictEqual(Serving.pidOf(replaced), Serving.pidOf(first))
      const running = yield* simProcesses
      assert.deepStrictEqual(
        running.map((p) => p.pid),
        [Serving.pidOf(replaced)]
      )
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("interrupting the launch leaves the server running", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env }))
      yield* advance(1500)
      assert.lengthOf(yield* simProcesses, 1)
      yield* Fiber.interrupt(fiber)
      yield* advance(5000)
      assert.lengthOf(yield* simProcesses, 1)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("stopOnInterrupt stops the server when the launch is interrupted", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, stopOnInterrupt: true })
      )
      yield* advance(1500)
      assert.lengthOf(yield* simProcesses, 1)
      yield* Effect.fork(Fiber.interrupt(fiber))
      yield* advance(15000)
      assert.lengthOf(yield* simProcesses, 0)
    }).pipe(Effect.provide(Simulator.layer))
  )

  // a server that hangs while capturing CUDA graphs is still running when the launch gives up
  for (const [title, limit, tag] of [
    ["no progress for stallTimeout: StartupStalled", { stallTimeout: "20 seconds" }, "StartupStalled"],
    ["the overall cap: LaunchTimedOut", { overallTimeout: "30 seconds" }, "LaunchTimedOut"]
  ] as const) {
    it.effect(`${title}, and the hung server is stopped`, () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          drive(
            Serving.launchDeployment({
              host: "sim",
              argv: fixedArgv,
              env: { ...env, MLOPS_SIM_HANG: "cuda-graph" },
              ...limit
            }),
            { step: "500 millis" }
          )
        )
        assert.strictEqual(error._tag, tag)
        assert.lengthOf(yield* simProcesses, 0)
      }).pipe(Effect.provide(Simulator.layer))
    )
  }

  it.effect("autoFix with preflight: the violations' fixes are applied before anything is spawned", () =>
    Effect.gen(function* () {
      const all = yield* events({ host: "sim", argv: storyArgv, env, autoFix: 1 })
      assert.deepStrictEqual(
        all
          .filter((e) => e._tag === "AttemptFailed")
          .map((e) => (e._tag === "AttemptFailed" ? e.failure._tag : "")),
        ["LaunchRulesViolated"]
      )
      assert.lengthOf(
        all.filter((e) => e._tag === "Spawned"),
        1
      )
      assert.strictEqual(all.at(-1)?._tag, "Launched")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("preflight errors: too few GPUs, a missing model directory", () =>
    Effect.gen(function* () {
      const gpus = yield* Effect.flip(
        drive(
          Serving.launchDeployment({ host: "sim", argv: ["--model-path", Simulator.modelPath, "--tp", "4"] })
        )
      )
      assert.strictEqual(gpus._tag, "NotEnoughGpus")
      if (gpus._tag === "NotEnoughGpus") assert.deepStrictEqual([gpus.needed, gpus.available], [4, 2])
      const model = yield* Effect.flip(
        drive(Serving.launchDeployment({ host: "sim", argv: ["--model-path", "/root/models/missing"] }))
      )
      assert.strictEqual(model._tag, "ModelNotFound")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("remoteCheck runs the host's own argument parsing before spawning", () =>
    Effect.gen(function* () {
      const all = yield* events({ host: "sim", argv: fixedArgv, env, remoteCheck: true })
      const tags = all.map((e) => e._tag)
      assert.isBelow(tags.indexOf("RemoteChecked"), tags.indexOf("Spawned"))
      const journal = yield* Effect.flatMap(FakeHost.host("sim"), (h) => h.journal)
      assert.isTrue(journal.some((j) => j.command.argv[1] === "-c" && j.line.includes("prepare_server_args")))
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("overallTimeout caps the launch: LaunchTimedOut", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, overallTimeout: "1 second" }))
      )
      assert.strictEqual(error._tag, "LaunchTimedOut")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("tunnel: Launched carries a local URL that reaches the server until the stream stops", () =>
    Effect.gen(function* () {
      const statuses = yield* drive(
        Serving.launch({ host: "sim", argv: fixedArgv, env, tunnel: true }).pipe(
          Stream.takeUntil((e) => e._tag === "Launched"),
          Stream.filter((e) => e._tag === "Launched"),
          Stream.mapEffect((e) =>
            e._tag === "Launched"
              ? Effect.promise(() =>
                  fetch(`${e.deployment.url}/health`).then((r) => [e.deployment.url, r.status] as const)
                )
              : Effect.die("unreachable")
          ),
          Stream.runCollect
        )
      )
      const [[url, status]] = Chunk.toReadonlyArray(statuses) as ReadonlyArray<readonly [string, number]>
      assert.match(url!, /^http:\/\/127\.0\.0\.1:\d+$/)
      assert.notStrictEqual(url, "http://127.0.0.1:30000")
      assert.strictEqual(status, 200)
    }).pipe(Effect.provide(Simulator.layer))
  )
})
