import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream, TestClock } from "effect"
import * as SimDecoding from "../src/SimDecoding.js"

const settings = { stepMs: 10, batchSlowdown: 0.5, draftCost: 0.25, acceptRate: 0.5 }

describe("SimDecoding", () => {
  it("acceptance length: 1 without speculation; 1 + a + a² … capped by the draft tokens", () => {
    assert.strictEqual(SimDecoding.acceptLength(undefined, 0.5), 1)
    // 1 + 0.5 + 0.25 + 0.125 = 1.875
    assert.closeTo(SimDecoding.acceptLength({ steps: 3, draftTokens: 4 }, 0.5), 1.875, 1e-12)
    // steps 3 at a = 1 would be 4, but only 2 tokens are verified per step
    assert.strictEqual(SimDecoding.acceptLength({ steps: 3, draftTokens: 2 }, 1), 2)
  })

  it("a step is slower with more requests running and with draft steps", () => {
    assert.strictEqual(SimDecoding.stepMillis(settings, 1, undefined), 10)
    // 10 × (1 + 0.5 × 3)
    assert.strictEqual(SimDecoding.stepMillis(settings, 4, undefined), 25)
    // 10 × (1 + 0.25 × 2)
    assert.strictEqual(SimDecoding.stepMillis(settings, 1, { steps: 2, draftTokens: 3 }), 15)
  })

  it("the environment sets the knobs; bad values keep the defaults", () => {
    assert.deepStrictEqual(
      SimDecoding.settingsFromEnv({ MLOPS_SIM_STEP_MS: "5", MLOPS_SIM_ACCEPT_RATE: "0.9" }),
      { ...SimDecoding.defaults, stepMs: 5, acceptRate: 0.9 }
    )
    assert.deepStrictEqual(
      SimDecoding.settingsFromEnv({ MLOPS_SIM_STEP_MS: "fast", MLOPS_SIM_ACCEPT_RATE: "2" }),
      SimDecoding.defaults
    )
  })

  it.effect("one request: the prefill's token, then L tokens per step on average, each after a step", () =>
    Effect.gen(function* () {
      // a = 0.5, 1 step, 2 draft tokens: L = 1.5; a step takes 10 × 1.25 = 12.5 ms
      const decoder = yield* SimDecoding.make(settings, { steps: 1, draftTokens: 2 })
      const fiber = yield* Effect.fork(Stream.runCollect(decoder.generate(7, 8)))
      yield* TestClock.adjust("12 millis")
      assert.strictEqual((yield* decoder.counters).generationTokens, 0)
      yield* TestClock.adjust("1 millis")
      assert.strictEqual((yield* decoder.counters).generationTokens, 1)
      yield* TestClock.adjust("1 second")
      const chunks = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      // totals after j decoding steps: 1 + ⌊1.5 j⌋ = 2, 4, 5, 7, 8
      assert.deepStrictEqual(chunks, [1, 1, 2, 1, 2, 1])
      const c = yield* decoder.counters
      assert.deepStrictEqual(c, {
        promptTokens: 7,
        generationTokens: 8,
        requests: 1,
        drafts: 5,
        draftTokens: 5,
        acceptedTokens: 2,
        running: 0
      })
    })
  )

  it.effect("two requests at once each step at the two-request pace", () =>
    Effect.gen(function* () {
      const decoder = yield* SimDecoding.make(settings, undefined)
      const both = yield* Effect.fork(
        Effect.all([Stream.runCollect(decoder.generate(1, 3)), Stream.runCollect(decoder.generate(1, 3))], {
          concurrency: 2
        })
      )
      // 3 steps of 15 ms (10 × 1.5) each (the first one's may start before the other runs: 10
      // ms); alone they would be done in 30 ms
      yield* TestClock.adjust("39 millis")
      assert.deepInclude(yield* decoder.counters, { requests: 0, running: 2 })
      yield* TestClock.adjust("6 millis")
      yield* Fiber.join(both)
      assert.deepInclude(yield* decoder.counters, { requests: 2, generationTokens: 6, running: 0 })
    })
  )
})
