import { assert, describe, it } from "@effect/vitest"
import { FakeHost } from "@mlops/core/testing"
import * as Stop from "@mlops/serve/Stop"
import { Effect } from "effect"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"
import { drive, fixedArgv } from "./support/sim.js"

const env = { SGLANG_ENABLE_SPEC_V2: "1" }

describe("Status", () => {
  it.effect("a running deployment: alive, ready, healthy, uptime and its GPU memory", () =>
    Effect.gen(function* () {
      const deployment = yield* drive(
        Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" })
      )
      const [status] = yield* drive(Serving.statusOfHost("sim"))
      assert.strictEqual(status?.name, "qwen")
      assert.deepStrictEqual(status?.server, deployment.server)
      assert.isTrue(status?.alive)
      assert.strictEqual(status?.phase, "ready")
      assert.isTrue(status?.healthy)
      assert.isAbove(status?.uptimeMs ?? 0, 0)
      assert.isAbove(status?.gpuMemoryMiB ?? 0, 20_000)
      assert.strictEqual(status?.engineVersion, "0.5.11")
      assert.strictEqual(status?.engine, "sglang")
      assert.isUndefined(status?.failure)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("a dead deployment: not alive, with the classified reason from its log", () =>
    Effect.gen(function* () {
      const argv = ["--model-path", Simulator.modelPath, "--tp", "1"]
      yield* Effect.flip(drive(Serving.launchDeployment({ host: "sim", argv, name: "small" })))
      const [status] = yield* drive(Serving.statusOfHost("sim", { name: "small" }))
      assert.isFalse(status?.alive)
      assert.isUndefined(status?.healthy)
      assert.strictEqual(status?.failure?._tag, "OOM")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("all hosts: deployments per host, unreachable hosts reported", () =>
    Effect.gen(function* () {
      yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" }))
      const down = yield* FakeHost.host("sim-down")
      yield* down.setDown(true)
      const all = yield* drive(Serving.statusOfHosts())
      assert.deepStrictEqual(
        all.deployments.map((d) => [d.host, d.name]),
        [["sim", "qwen"]]
      )
      assert.deepStrictEqual(
        all.unreachable.map((u) => u.host),
        ["sim-down"]
      )
    }).pipe(
      Effect.provide(FakeHost.layer([Simulator.hostSpec, Simulator.makeHostSpec({ alias: "sim-down" })]))
    )
  )

  it.effect("a stopped deployment is reported as stopped, not as a failure; a relaunch clears it", () =>
    Effect.gen(function* () {
      yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" }))
      yield* drive(Stop.stop("sim", "qwen"))
      const [stopped] = yield* drive(Serving.statusOfHost("sim", { name: "qwen" }))
      assert.isFalse(stopped?.alive)
      assert.strictEqual(stopped?.stopped, "terminated")
      assert.isUndefined(stopped?.failure)
      yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" }))
      const [again] = yield* drive(Serving.statusOfHost("sim", { name: "qwen" }))
      assert.isTrue(again?.alive)
      assert.isUndefined(again?.stopped)
    }).pipe(Effect.provide(Simulator.layer))
  )
})
