import { assert, describe, it } from "@effect/vitest"
import * as ModelInit from "../../src/rules/ModelInit.js"
import { b200x8, input, llama, qwen36, violation } from "./input.js"

describe("rules/ModelInit", () => {
  it("attention heads must split over tp: 24 heads on tp 5 fails, tp 2 is fine", () => {
    const v = violation(ModelInit.attentionHeads.check(input({ tp_size: 5 }, { traits: qwen36 })))
    assert.strictEqual(v.engineMessage, "24 is not divisible by 5")
    assert.deepStrictEqual(v.fix.set, { tp_size: 4 })
    assert.isUndefined(ModelInit.attentionHeads.check(input({ tp_size: 2 }, { traits: qwen36 })))
  })

  it("GDN value heads must split over the attention TP group", () => {
    const v = violation(ModelInit.gdnHeads.check(input({ tp_size: 32 }, { traits: qwen36 })))
    assert.strictEqual(v.engineMessage, "48 is not divisible by 32")
    assert.isUndefined(ModelInit.gdnHeads.check(input({ tp_size: 4 }, { traits: qwen36 })))
    assert.isUndefined(ModelInit.gdnHeads.check(input({ tp_size: 3 }, { traits: llama })))
  })

  it("GDN conv dim (2 x 16 x 128 + 48 x 128 = 10240) must split too: tp 3 divides the heads, not the conv dim", () => {
    assert.isUndefined(ModelInit.attentionHeads.check(input({ tp_size: 3 }, { traits: qwen36 })))
    const v = violation(ModelInit.gdnHeads.check(input({ tp_size: 3 }, { traits: qwen36 })))
    assert.strictEqual(v.engineMessage, "10240 is not divisible by 3")
    assert.deepStrictEqual(v.fix.set, { tp_size: 2 })
  })

  it("the attention TP group is tp / dp under dp attention", () => {
    // tp 8 / dp 4 = attention tp 2, which splits 24 heads and 48 GDN value heads
    const dpAttention = { tp_size: 8, dp_size: 4, enable_dp_attention: true }
    assert.isUndefined(ModelInit.attentionHeads.check(input(dpAttention, { traits: qwen36 })))
    assert.isUndefined(ModelInit.gdnHeads.check(input(dpAttention, { traits: qwen36 })))
    assert.strictEqual(
      violation(ModelInit.gdnHeads.check(input({ tp_size: 32 }, { traits: qwen36 }))).engineMessage,
      "48 is not divisible by 32"
    )
  })

  it("R28: hybrid GDN on Blackwell needs triton / trtllm_mha / fa4 / flashinfer", () => {
    assert.include(
      violation(
        ModelInit.blackwellGdnBackend.check(
          input({ attention_backend: "fa3" }, { traits: qwen36, gpus: b200x8 })
        )
      ).engineMessage,
      "are the only supported backends on Blackwell GPUs for hybrid GDN models"
    )
    assert.isUndefined(
      ModelInit.blackwellGdnBackend.check(input({ attention_backend: "fa3" }, { traits: qwen36 }))
    )
  })
})
