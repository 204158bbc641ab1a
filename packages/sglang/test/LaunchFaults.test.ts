/**
 * A launch across dropped connections, on the simulated host: the connection is re-acquired
 * from the pool and everything goes on (the death watch, the log follow, readiness); a crash
 * while the host could not be reached is reported as that crash soon after it can be again,
 * never as a stall; a start whose answer was lost is settled, never left running untracked.
 */
import { assert, describe, it } from "@effect/vitest"
import { FakeHost } from "@mlops/core/testing"
import { Chunk, Clock, Effect, Fiber, Stream } from "effect"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"
import { advance, drive, fixedArgv } from "./support/sim.js"

const env = { SGLANG_ENABLE_SPEC_V2: "1" }

const collect = (request: Serving.Request) =>
  Stream.runCollect(Serving.launch(request)).pipe(Effect.map(Chunk.toReadonlyArray))

const servers = Effect.flatMap(FakeHost.host("sim"), (h) => h.processes)

describe("Launch across faults", () => {
  it.effect("a drop while the server loads: Disconnected, Reconnected, and it is followed to ready", () =>
    Effect.gen(function* () {
      const handle = yield* FakeHost.host("sim")
      const launch = yield* Effect.fork(collect({ host: "sim", argv: fixedArgv, env }))
      yield* advance(1500)
      yield* handle.dropConnection("network blip")
      const all = yield* drive(Fiber.join(launch))
      const tags = all.map((e) => e._tag)
      assert.include(tags, "Disconnected")
      assert.include(tags, "Reconnected")
      assert.isBelow(tags.indexOf("Disconnected"), tags.indexOf("Reconnected"))
      assert.strictEqual(all.at(-1)?._tag, "Launched")
      assert.isTrue(all.some((e) => e._tag === "HealthChecked" && e.status === 200))
      assert.isAbove(yield* handle.connects, 1)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "a crash while the host is unreachable (longer than the stall timeout) is that crash, soon after",
    () =>
      Effect.gen(function* () {
        const handle = yield* FakeHost.host("sim")
        // tp 1 does not fit: a CUDA OOM while the weights load (~1 s of sim time in)
        const launch = yield* Effect.fork(
          collect({
            host: "sim",
            name: "oom",
            argv: ["--model-path", Simulator.modelPath, "--tp", "1"],
            preflight: false,
            stallTimeout: "10 seconds"
          })
        )
        yield* advance(300)
        yield* handle.setDown(true)
        yield* advance(30_000, 500)
        assert.lengthOf(yield* servers, 0, "the server crashed meanwhile")
        yield* handle.setDown(false)
        const back = yield* Clock.currentTimeMillis
        const exit = yield* drive(Effect.exit(Fiber.join(launch)), { step: "50 millis" })
        const verdictAt = yield* Clock.currentTimeMillis
        assert.strictEqual(exit._tag, "Failure")
        if (exit._tag !== "Failure") return
        const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
        assert.strictEqual(failure?._tag, "OOM")
        assert.isAtMost(verdictAt - back, 2000, "the verdict within 2 s of the host answering again")
      }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("a drop after the start was sent but before its answer: one server, tracked, and ready", () =>
    Effect.gen(function* () {
      const handle = yield* FakeHost.host("sim")
      yield* handle.dropWhenReached("detached", "cut mid-start")
      const all = yield* drive(collect({ host: "sim", name: "mid", argv: fixedArgv, env }))
      const last = all.at(-1)
      assert.strictEqual(last?._tag, "Launched")
      const running = (yield* servers).filter((p) => /python$/.test(p.argv[0] ?? ""))
      assert.lengthOf(running, 1, "exactly one server runs")
      if (last?._tag === "Launched") assert.strictEqual(running[0]?.pid, Serving.pidOf(last.deployment))
      assert.isAbove(yield* handle.connects, 1, "the start's connection was cut and replaced")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "readiness has its own budget: a server whose /health never answers 200 fails NotHealthy in time",
    () =>
      Effect.gen(function* () {
        const started = yield* Clock.currentTimeMillis
        const error = yield* Effect.flip(
          drive(
            Serving.launchDeployment({
              host: "sim",
              argv: fixedArgv,
              env: { ...env, MLOPS_SIM_UNHEALTHY: "1" },
              readinessTimeout: "20 seconds"
            }),
            { step: "500 millis" }
          )
        )
        assert.strictEqual(error._tag, "NotHealthy")
        if (error._tag === "NotHealthy") assert.include(error.reason, "no healthy answer within 20s")
        // well inside the 30-minute cap: the ready line came after ~4 s, then 20 s of budget
        assert.isBelow((yield* Clock.currentTimeMillis) - started, 60_000)
        assert.lengthOf(yield* servers, 0, "the unhealthy server was stopped")
      }).pipe(Effect.provide(Simulator.layer))
  )
})
