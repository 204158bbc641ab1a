import { assert, describe, it } from "@effect/vitest"
import * as HybridModels from "../../src/rules/HybridModels.js"
import { adjust, b200x8, input, llama, qwen36, violation } from "./input.js"

describe("rules/HybridModels", () => {
  it("R20.sm100-attention: Qwen hybrids on SM100 get triton, or trtllm_mha when topk is given with speculation", () => {
    const spec = { speculative_algorithm: "NEXTN", mamba_scheduler_strategy: "extra_buffer" } as const
    const auto = adjust(
      HybridModels.sm100HybridAttention.check(input(spec, { traits: qwen36, gpus: b200x8 }))
    )
    assert.deepStrictEqual(auto.set, { attention_backend: "triton" })
    const withTopk = adjust(
      HybridModels.sm100HybridAttention.check(
        input({ ...spec, speculative_eagle_topk: 1 }, { traits: qwen36, gpus: b200x8 })
      )
    )
    assert.deepStrictEqual(withTopk.set, { attention_backend: "trtllm_mha" })
    assert.isUndefined(HybridModels.sm100HybridAttention.check(input(spec, { traits: qwen36 })))
  })

  it("R20.radix: KimiLinear runs without radix cache", () => {
    const out = adjust(
      HybridModels.radixUnsupported.check(
        input({}, { traits: { ...llama, architecture: "KimiLinearForCausalLM" } })
      )
    )
    assert.strictEqual(
      out.engineMessage,
      "Disabling Radix Cache for KimiLinearForCausalLM as it is not yet supported."
    )
  })

  it("R20.triton: NemotronH cannot use triton attention", () => {
    const nemotronH = { ...qwen36, architecture: "NemotronHForCausalLM" }
    const v = violation(
      HybridModels.tritonForbidden.check(input({ attention_backend: "triton" }, { traits: nemotronH }))
    )
    assert.include(v.engineMessage, "does not support triton attention backend,as the first layer")
  })

  it("R27: flashinfer linear-attention decode on SM100 needs bf16 SSM state; bf16 without spec defaults to it", () => {
    const v = violation(
      HybridModels.linearAttnFlashinferDtype.check(
        input({ linear_attn_decode_backend: "flashinfer" }, { gpus: b200x8 })
      )
    )
    assert.strictEqual(
      v.engineMessage,
      "--linear-attn-decode-backend flashinfer on SM100+ requires --mamba-ssm-dtype bfloat16, got None"
    )
    assert.isUndefined(
      HybridModels.linearAttnFlashinferDtype.check(input({ linear_attn_decode_backend: "flashinfer" }))
    )
    const d = adjust(
      HybridModels.linearAttnDecodeDefault.check(input({ mamba_ssm_dtype: "bfloat16" }, { gpus: b200x8 }))
    )
    assert.deepStrictEqual(d.set, { linear_attn_decode_backend: "flashinfer" })
    assert.isUndefined(
      HybridModels.linearAttnDecodeDefault.check(
        input({ mamba_ssm_dtype: "bfloat16", speculative_algorithm: "EAGLE" }, { gpus: b200x8 })
      )
    )
  })
})
