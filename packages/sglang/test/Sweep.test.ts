/**
 * `Sweep` in the SDK on the simulated SGLang: a sweep interrupted while a variant is being
 * benchmarked leaves nothing running (its server stopped on the way out), and the next
 * variant never starts.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Sweep from "@mlops/serve/Sweep"
import { Deferred, Effect, Fiber, Stream } from "effect"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"

const base = ["--model-path", Simulator.modelPath, "--tp", "2"]

describe("Sweep", () => {
  it.live("interrupted during a benchmark: that variant's server is stopped, the next never starts", () =>
    Effect.gen(function* () {
      const benchmarking = yield* Deferred.make<string>()
      const seen: Array<string> = []
      const sweep = yield* Sweep.events({
        host: "sim",
        engines: Serving.engines,
        argv: base,
        variants: [
          { label: "a", flags: [] },
          { label: "b", flags: ["--served-model-name", "b"] }
        ],
        name: "cut",
        env: { MLOPS_SIM_TIME_SCALE: "0.01" },
        bench: { requests: 5000, outputTokens: 256 }
      }).pipe(
        Stream.runForEach((event) =>
          Effect.gen(function* () {
            seen.push(event._tag)
            if (event._tag === "Benchmarking") yield* Deferred.succeed(benchmarking, event.name)
          })
        ),
        Effect.fork
      )
      const name = yield* Deferred.await(benchmarking)
      assert.strictEqual(name, "cut-1")
      yield* Effect.sleep("300 millis")
      yield* Fiber.interrupt(sweep)
      const after = yield* Serving.statusOfHost("sim")
      assert.deepStrictEqual(
        after.map((d) => [d.name, d.alive, d.stopped]),
        [["cut-1", false, "terminated"]]
      )
      assert.deepStrictEqual(seen, ["Checked", "Checked", "Launching", "Benchmarking"])
    }).pipe(Effect.provide(Simulator.layer))
  )
})
