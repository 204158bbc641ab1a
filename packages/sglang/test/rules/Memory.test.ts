import { assert, describe, it } from "@effect/vitest"
import * as Memory from "../../src/rules/Memory.js"
import { a6000x2, adjust, b200x8, input, llama, qwen36, violation } from "./input.js"

describe("rules/Memory", () => {
  it("R32: the memory table, including tp >= 4 and unknown GPUs", () => {
    assert.deepStrictEqual(Memory.memoryDefaults(16 * 1024, 1), [2048, 8])
    assert.deepStrictEqual(Memory.memoryDefaults(24 * 1024, 4), [2048, 80])
    assert.deepStrictEqual(Memory.memoryDefaults(49140, 2), [4096, 32])
    assert.deepStrictEqual(Memory.memoryDefaults(81559, 8), [8192, 512])
    assert.deepStrictEqual(Memory.memoryDefaults(183359, 8), [16384, 512])
    assert.deepStrictEqual(Memory.memoryDefaults(undefined, 1), [4096, 160])
  })

  it("R32: fills only unset values; an explicit --cuda-graph-bs list sets the max", () => {
    assert.deepStrictEqual(adjust(Memory.gpuMemoryDefaults.check(input({ tp_size: 2 }))).set, {
      chunked_prefill_size: 4096,
      cuda_graph_max_bs: 32
    })
    assert.deepStrictEqual(
      adjust(Memory.gpuMemoryDefaults.check(input({ chunked_prefill_size: 1024, cuda_graph_bs: [1, 2, 64] })))
        .set,
      { cuda_graph_max_bs: 64 }
    )
  })

  it("R33: the reserve formula on one A6000 (tp 2, chunked 4096, graph bs 32, speculative)", () => {
    const given = {
      tp_size: 2,
      chunked_prefill_size: 4096,
      cuda_graph_max_bs: 32,
      disable_piecewise_cuda_graph: true
    }
    const plain = adjust(Memory.memFractionStatic.check(input(given, { traits: llama, gpus: a6000x2 })))
    // reserved = 512 + 4096*1.5 + 32*2 + 2/8*1024 = 6976 MiB
    assert.strictEqual(plain.set.mem_fraction_static, Math.round(((49140 - 6976) / 49140) * 1000) / 1000)
    const spec = adjust(
      Memory.memFractionStatic.check(
        input({ ...given, speculative_algorithm: "NEXTN" }, { traits: llama, gpus: a6000x2 })
      )
    )
    assert.strictEqual(
      spec.set.mem_fraction_static,
      Math.round(((49140 - 6976 - 4096) / 49140) * 1000) / 1000
    )
  })

  it("R33: a vision tower shrinks the fraction; > 60 GiB GPUs reserve at least 10 GiB", () => {
    const given = { chunked_prefill_size: 4096, cuda_graph_max_bs: 32, disable_piecewise_cuda_graph: true }
    const text = adjust(Memory.memFractionStatic.check(input(given, { traits: llama }))).set
      .mem_fraction_static!
    const vlm = adjust(Memory.memFractionStatic.check(input(given, { traits: qwen36 }))).set
      .mem_fraction_static!
    assert.isTrue(vlm < text)
    const big = adjust(
      Memory.memFractionStatic.check(input({ ...given, tp_size: 8 }, { traits: llama, gpus: b200x8 }))
    ).set.mem_fraction_static
    assert.strictEqual(big, Math.round(((183359 - 10240) / 183359) * 1000) / 1000)
    assert.isUndefined(Memory.memFractionStatic.check(input({ mem_fraction_static: 0.8 })))
  })

  it("R34: multimodal models and pipeline parallelism disable piecewise CUDA graph", () => {
    assert.deepStrictEqual(adjust(Memory.piecewiseCudaGraph.check(input({}, { traits: qwen36 }))).set, {
      disable_piecewise_cuda_graph: true
    })
    assert.deepStrictEqual(
      adjust(Memory.piecewiseCudaGraph.check(input({ pp_size: 2 }, { traits: llama }))).set,
      {
        disable_piecewise_cuda_graph: true
      }
    )
    assert.isUndefined(Memory.piecewiseCudaGraph.check(input({}, { traits: llama })))
    assert.isUndefined(
      Memory.piecewiseCudaGraph.check(input({ enforce_piecewise_cuda_graph: true }, { traits: qwen36 }))
    )
  })

  it("R35: priority scheduling policy, SWA ratio and tokenizer workers", () => {
    assert.strictEqual(
      violation(
        Memory.priorityScheduling.check(input({ enable_priority_scheduling: true, schedule_policy: "lpm" }))
      ).engineMessage,
      "To use priority scheduling, schedule_policy must be 'fcfs' or 'lof'. 'lpm' is not supported."
    )
    assert.strictEqual(
      violation(Memory.swaRatio.check(input({ swa_full_tokens_ratio: 1.5 }))).engineMessage,
      "--swa-full-tokens-ratio should be in range (0, 1.0]."
    )
    assert.strictEqual(
      violation(Memory.tokenizerWorkers.check(input({ tokenizer_worker_num: 0 }))).engineMessage,
      "Tokenizer worker num must >= 1"
    )
    assert.isUndefined(Memory.swaRatio.check(input()))
  })
})
