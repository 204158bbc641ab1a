import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool, Probes } from "@mlops/core"
import { FakeHost } from "@mlops/core/testing"
import * as Logs from "@mlops/serve/Logs"
import * as Stop from "@mlops/serve/Stop"
import { Effect } from "effect"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"
import { drive, fixedArgv } from "./support/sim.js"

const env = { SGLANG_ENABLE_SPEC_V2: "1" }
const connect = Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get("sim"))

describe("Stop", () => {
  it.effect("stops the group and confirms its GPU memory is free; the log stays", () =>
    Effect.gen(function* () {
      const deployment = yield* drive(
        Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" })
      )
      const conn = yield* connect
      assert.isNotEmpty(yield* Probes.gpuProcesses(conn))
      const result = yield* drive(Stop.stop("sim", "qwen"))
      assert.deepStrictEqual(result, {
        host: "sim",
        name: "qwen",
        server: deployment.server,
        outcome: "terminated",
        ranks: [{ rank: 0, host: "sim", server: deployment.server, outcome: "terminated" }]
      })
      assert.lengthOf(yield* Effect.flatMap(FakeHost.host("sim"), (h) => h.processes), 0)
      assert.lengthOf(yield* Probes.gpuProcesses(conn), 0)
      const lines = yield* drive(Logs.tail("sim", "qwen", { lines: 500 }))
      assert.isTrue(lines.some((l) => l.text.includes("The server is fired up and ready to roll!")))
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("an unknown name is a typed error listing the known ones", () =>
    Effect.gen(function* () {
      yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" }))
      const error = yield* Effect.flip(drive(Stop.stop("sim", "nope")))
      assert.strictEqual(error._tag, "DeploymentNotFound")
      if (error._tag === "DeploymentNotFound") assert.deepStrictEqual(error.known, ["qwen"])
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("GPU memory still held by a pid of the group after the stop: GpuMemoryStillHeld", () =>
    Effect.gen(function* () {
      const deployment = yield* drive(
        Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" })
      )
      // a leaked worker: nvidia-smi keeps reporting memory for the launcher's pid
      const handle = yield* FakeHost.host("sim")
      yield* handle.register(
        FakeHost.nvidiaSmi(Simulator.gpus, [
          { pid: Serving.pidOf(deployment), gpuUuid: Simulator.gpus[0]!.uuid, usedMemoryMiB: 30_000 }
        ])
      )
      const error = yield* Effect.flip(drive(Stop.stop("sim", "qwen", { confirmWithin: "2 seconds" })))
      assert.strictEqual(error._tag, "GpuMemoryStillHeld")
      if (error._tag === "GpuMemoryStillHeld") assert.deepStrictEqual(error.pids, [Serving.pidOf(deployment)])
    }).pipe(Effect.provide(Simulator.layer))
  )
})
