import { assert, describe, it } from "@effect/vitest"
import * as P from "../../src/rules/Parallelism.js"
import { adjust, input, violation } from "./input.js"

describe("rules/Parallelism", () => {
  it("R36: tp x pp must divide over the nodes", () => {
    const v = violation(P.nodesDivideTpPp.check(input({ tp_size: 3, nnodes: 2 })))
    assert.strictEqual(v.engineMessage, "tp_size must be divisible by number of nodes")
    assert.deepStrictEqual(v.fix.set, { nnodes: 1 })
    assert.isUndefined(P.nodesDivideTpPp.check(input({ tp_size: 8, nnodes: 2 })))
  })

  it("R36: multi-node dp needs dp attention; GPU ids are non-negative / positive", () => {
    assert.strictEqual(
      violation(P.multiNodeDp.check(input({ dp_size: 2, nnodes: 2 }))).engineMessage,
      "multi-node data parallel is not supported unless dp attention!"
    )
    assert.strictEqual(
      violation(P.gpuIds.check(input({ base_gpu_id: -1 }))).engineMessage,
      "base_gpu_id must be non-negative"
    )
    assert.strictEqual(
      violation(P.gpuIds.check(input({ gpu_id_step: 0 }))).engineMessage,
      "gpu_id_step must be positive"
    )
  })

  it("R37: dp size 1 switches dp attention off; tp % dp is a bare assert; chunked prefill is divided", () => {
    assert.deepStrictEqual(adjust(P.dpSizeOne.check(input({ enable_dp_attention: true }))).set, {
      enable_dp_attention: false,
      enable_dp_lm_head: false
    })
    const bare = violation(P.dpDividesTp.check(input({ enable_dp_attention: true, tp_size: 4, dp_size: 3 })))
    assert.strictEqual(bare.engineMessage, "")
    assert.deepStrictEqual(bare.fix.set, { dp_size: 2 })
    const chunk = adjust(
      P.dpChunkedPrefill.check(
        input({ enable_dp_attention: true, tp_size: 4, dp_size: 4, chunked_prefill_size: 8192 })
      )
    )
    assert.strictEqual(chunk.set.chunked_prefill_size, 2048)
    assert.strictEqual(
      chunk.engineMessage,
      "DP attention is enabled. The chunked prefill size is adjusted to 2048 to avoid MoE kernel issues. "
    )
    assert.strictEqual(chunk.set.schedule_conservativeness, 0.3)
    // chunked prefill off (-1) stays off: Python's -1 // 4 is -1
    const off = adjust(
      P.dpChunkedPrefill.check(
        input({ enable_dp_attention: true, tp_size: 4, dp_size: 4, chunked_prefill_size: -1 })
      )
    )
    assert.deepStrictEqual(off.set, { chunked_prefill_size: -1, schedule_conservativeness: 0.3 })
    assert.include(
      violation(P.dpLmHead.check(input({ enable_dp_lm_head: true }))).engineMessage,
      "enable_dp_lm_head"
    )
  })

  it("R38: tp divisible by attn cp size", () => {
    assert.strictEqual(
      violation(P.contextParallel.check(input({ tp_size: 4, attn_cp_size: 3 }))).engineMessage,
      "tp_size must be divisible by attn_cp_size"
    )
    assert.isUndefined(P.contextParallel.check(input({ tp_size: 4, attn_cp_size: 2 })))
  })

  it("R39: a2a backends set ep = tp; flashinfer_cutlass needs ep 1 or tp; EPLB needs ep > 1", () => {
    assert.deepStrictEqual(
      adjust(P.a2aExpertParallel.check(input({ tp_size: 8, moe_a2a_backend: "deepep" }))).set,
      {
        ep_size: 8
      }
    )
    assert.strictEqual(
      violation(
        P.flashinferMoeEp.check(input({ tp_size: 8, ep_size: 2, moe_runner_backend: "flashinfer_cutlass" }))
      ).engineMessage,
      "The expert parallel size must be 1 or the same as the tensor parallel size"
    )
    assert.deepStrictEqual(violation(P.eplbNeedsEp.check(input({ enable_eplb: true }))).fix, {
      set: { ep_size: 2 },
      alternatives: [{ enable_eplb: false }]
    })
    assert.isUndefined(P.eplbNeedsEp.check(input({ enable_eplb: true, ep_size: 2 })))
  })

  it("R40 and R18.pp: pipeline parallelism turns overlap off and forbids speculative decoding", () => {
    assert.strictEqual(
      adjust(P.pipelineOverlap.check(input({ pp_size: 2 }))).engineMessage,
      "Pipeline parallelism is incompatible with overlap schedule."
    )
    assert.strictEqual(
      violation(
        P.pipelineSpeculative.check(
          input({ pp_size: 2, disable_overlap_schedule: true, speculative_algorithm: "EAGLE" })
        )
      ).engineMessage,
      "Pipeline parallelism is not compatible with overlap schedule, speculative decoding"
    )
    assert.isUndefined(P.pipelineSpeculative.check(input({ pp_size: 2, disable_overlap_schedule: true })))
  })
})
