/** Each example's `main`, run on simulated hosts (live clock: a simulated launch takes seconds). */
import { assert, describe, it } from "@effect/vitest"
import * as Simulator from "@mlops/sglang/Simulator"
import { Effect } from "effect"
import * as CustomWorkflow from "../custom-workflow.js"
import * as Fleet from "../fleet.js"
import * as LaunchQwen from "../launch-qwen.js"
import * as TrainThenServe from "../train-then-serve.js"

describe("examples", () => {
  it.live(
    "train-then-serve: a drafter trained as a job on one GPU, then served with it and benchmarked",
    () =>
      Effect.gen(function* () {
        const result = yield* TrainThenServe.main().pipe(Effect.provide(Simulator.layer))
        assert.strictEqual(result.jobState, "succeeded")
        assert.deepStrictEqual(result.trainedOn, [0])
        assert.match(result.lastLoss, /'loss': \d/)
        assert.strictEqual(result.drafter, "LlamaForCausalLMEagle3")
        assert.match(result.url, /^http:\/\//)
        assert.isAbove(result.outputTokensPerS, 0)
      })
  )

  it.live("launch-qwen: the story's two runtime failures are handled, then the server is ready", () =>
    Effect.gen(function* () {
      const result = yield* LaunchQwen.main({ preflight: false }).pipe(Effect.provide(Simulator.layer))
      assert.deepStrictEqual(result.failures, ["MissingSchedulerStrategy", "AssertionFailure"])
      assert.deepStrictEqual(result.foundBy, ["log", "log"])
      assert.includeMembers([...result.argv], ["--mamba-scheduler-strategy", "--speculative-num-steps"])
      assert.match(result.url, /^http:\/\//)
    })
  )

  it.live("launch-qwen: the same catchTags handle the failures when preflight finds them first", () =>
    Effect.gen(function* () {
      const result = yield* LaunchQwen.main({ preflight: true }).pipe(Effect.provide(Simulator.layer))
      assert.deepStrictEqual(result.failures, ["MissingSchedulerStrategy", "AssertionFailure"])
      assert.deepStrictEqual(result.foundBy, ["preflight", "preflight"])
      assert.includeMembers([...result.argv], ["--mamba-scheduler-strategy", "--speculative-num-steps"])
      assert.match(result.url, /^http:\/\//)
    })
  )

  it.live("fleet: three hosts, at most two at a time; the memory-starved one fails with a fix", () =>
    Effect.gen(function* () {
      const rows = yield* Fleet.main.pipe(Effect.provide(Fleet.layer))
      assert.deepStrictEqual(
        rows.map((row) => [row.host, row.status]),
        [
          ["gpu-a", "ready"],
          ["gpu-b", "ready"],
          ["gpu-c", "failed"]
        ]
      )
      assert.include(rows[2]!.detail, "OOM")
      assert.include(rows[2]!.detail, "--mem-fraction-static")
      assert.include(Fleet.table(rows), "gpu-c")
    })
  )

  it.live("custom-workflow: GPUs probed, a file written and read back, a log followed to `done`", () =>
    Effect.gen(function* () {
      const result = yield* CustomWorkflow.main(Simulator.alias).pipe(Effect.provide(Simulator.layer))
      assert.strictEqual(result.gpuCount, 2)
      assert.strictEqual(result.jobFile, `CUDA_VISIBLE_DEVICES=${result.chosenGpu}`)
      assert.isAbove(result.freeMiB, 0)
      assert.deepStrictEqual(result.logLines, ["loading", "step 1/2", "step 2/2", "done"])
    })
  )
})
