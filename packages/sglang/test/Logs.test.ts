import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import * as Launch from "../src/Launch.js"
import * as Logs from "../src/Logs.js"
import * as Simulator from "../src/Simulator.js"
import { advance, drive, fixedArgv } from "./support/sim.js"

const env = { SGLANG_ENABLE_SPEC_V2: "1" }

describe("Logs", () => {
  it.effect("tail: the last n lines of a deployment's log", () =>
    Effect.gen(function* () {
      yield* drive(Launch.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" }))
      const lines = yield* drive(Logs.tail("sim", "qwen", { lines: 3 }))
      assert.lengthOf(lines, 3)
      assert.strictEqual(lines.at(-1)?.text.endsWith("The server is fired up and ready to roll!"), true)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("follow: the last lines, then new ones as the server writes them, each once", () =>
    Effect.gen(function* () {
      // follow from the start while the launch is still running
      const fiber = yield* Effect.fork(
        Launch.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "qwen" })
      )
      yield* advance(500)
      const lines = yield* drive(
        Logs.follow("sim", "qwen", { lines: 0 }).pipe(
          Stream.takeUntil((l) => l.text.includes("ready to roll")),
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray)
        )
      )
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
})
