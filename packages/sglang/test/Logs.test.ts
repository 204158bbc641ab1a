import { assert, describe, it } from "@effect/vitest"
import * as Logs from "@mlops/serve/Logs"
import * as Stop from "@mlops/serve/Stop"
import { Chunk, Effect, Fiber, Stream } from "effect"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"
import { advance, drive, fixedArgv } from "./support/sim.js"

const env = { SGLANG_ENABLE_SPEC_V2: "1" }

describe("Logs", () => {
  it.effect("tail: the last n lines of a deployment's log", () =>
    Effect.gen(function* () {
      yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" }))
      const lines = yield* drive(Logs.tail("sim", "qwen", { lines: 3 }))
      assert.lengthOf(lines, 3)
      assert.strictEqual(lines.at(-1)?.text.endsWith("The server is fired up and ready to roll!"), true)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("follow: the last lines, then new ones as the server writes them, each once", () =>
    Effect.gen(function* () {
      // follow from the start while the launch is still running
      const fiber = yield* Effect.fork(
        Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" })
      )
      yield* advance(500)
      const lines = yield* drive(
        Serving.followLogs("sim", "qwen", { lines: 0 }).pipe(
          Stream.takeUntil((l) => l._tag === "LogLine" && l.text.includes("ready to roll")),
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray)
        )
      ).pipe(Effect.map((all) => all.filter((l) => l._tag === "LogLine")))
      const offsets = lines.map((l) => l.offset)
      assert.deepStrictEqual(
        offsets,
        [...new Set(offsets)].sort((a, b) => a - b)
      )
      assert.isTrue(lines.some((l) => l.text.includes("Load weight begin")))
      yield* drive(Effect.asVoid(fiber.await))
      const missing = yield* Effect.flip(drive(Logs.tail("sim", "nope")))
      assert.strictEqual(missing._tag, "DeploymentNotFound")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("follow ends when the server crashes: its last lines (the traceback), then how it ended", () =>
    Effect.gen(function* () {
      const argv = ["--model-path", Simulator.modelPath, "--tp", "1"]
      const launch = yield* Effect.fork(
        Serving.launchDeployment({ host: "sim", argv, name: "oom", preflight: false })
      )
      yield* advance(300)
      const items = yield* drive(
        Serving.followLogs("sim", "oom", { lines: 0 }).pipe(
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray)
        )
      )
      const ended = items.at(-1)
      assert.strictEqual(ended?._tag, "Ended")
      if (ended?._tag !== "Ended") return
      assert.strictEqual(ended.exit, "signal KILL")
      assert.strictEqual(ended.failure?._tag, "OOM")
      assert.isTrue(items.some((l) => l._tag === "LogLine" && l.text.includes("CUDA out of memory")))
      yield* drive(Effect.asVoid(launch.await))
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("follow ends when the deployment is stopped, saying so", () =>
    Effect.gen(function* () {
      yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" }))
      const following = yield* Effect.fork(
        Serving.followLogs("sim", "qwen", { lines: 2 }).pipe(
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray)
        )
      )
      yield* advance(1000)
      yield* drive(Stop.stop("sim", "qwen"))
      const items = yield* drive(Fiber.join(following))
      const ended = items.at(-1)
      assert.strictEqual(ended?._tag, "Ended")
      if (ended?._tag === "Ended") {
        assert.strictEqual(ended.stopped, "terminated")
        assert.isUndefined(ended.failure)
      }
      assert.strictEqual(items.filter((l) => l._tag === "LogLine").length, 2)
    }).pipe(Effect.provide(Simulator.layer))
  )
})
