import { assert, describe, it } from "@effect/vitest"
import type { Gpus } from "../../src/Rule.js"
import * as Attention from "../../src/rules/Attention.js"
import { a6000x2, adjust, b200x8, deepseek, h100x8, input, llama, violation } from "./input.js"

describe("rules/Attention", () => {
  it("R29: flashinfer on Ampere, fa3 on Hopper, trtllm_mha on SM100 (no spec), triton for MLA on Ampere", () => {
    const on = (gpus: Gpus, traits = llama, given = {}) =>
      adjust(Attention.defaultBackend.check(input(given, { traits, gpus }))).set.attention_backend
    assert.strictEqual(on(a6000x2), "flashinfer")
    assert.strictEqual(on(h100x8), "fa3")
    assert.strictEqual(on(b200x8), "trtllm_mha")
    assert.strictEqual(on(b200x8, llama, { speculative_algorithm: "EAGLE" }), "flashinfer")
    assert.strictEqual(on(h100x8, llama, { speculative_eagle_topk: 4 }), "flashinfer")
    assert.strictEqual(on(a6000x2, deepseek), "triton")
    assert.strictEqual(on(b200x8, deepseek), "flashinfer")
  })

  it("R29: logs SGLang's line, and is undecidable with unknown GPUs", () => {
    const out = adjust(Attention.defaultBackend.check(input({}, { traits: llama })))
    assert.strictEqual(out.set.attention_backend, "flashinfer")
    assert.strictEqual(
      out.engineMessage,
      "Attention backend not specified. Use flashinfer backend by default."
    )
    assert.isUndefined(Attention.defaultBackend.check(input({}, { traits: llama, gpus: undefined })))
    assert.isUndefined(Attention.defaultBackend.check(input({ attention_backend: "triton" })))
  })

  it("R30: FlashMLA and Cutlass MLA force their page sizes", () => {
    assert.strictEqual(
      adjust(Attention.flashmlaPage.check(input({ attention_backend: "flashmla" }))).engineMessage,
      "FlashMLA only supports a page_size of 64, change page_size to 64."
    )
    assert.deepStrictEqual(
      adjust(Attention.cutlassMlaPage.check(input({ attention_backend: "cutlass_mla" }))).set,
      {
        page_size: 128
      }
    )
  })

  it("R30: trtllm_mla needs Blackwell; on Blackwell page size goes to 64", () => {
    assert.include(
      violation(Attention.trtllmMla.check(input({ attention_backend: "trtllm_mla" }))).engineMessage,
      "only supported on Blackwell GPUs"
    )
    assert.strictEqual(
      adjust(Attention.trtllmMla.check(input({ attention_backend: "trtllm_mla" }, { gpus: b200x8 })))
        .engineMessage,
      "TensorRT-LLM MLA only supports page_size of 32 or 64, changing page_size from None to 64."
    )
  })

  it("R30: trtllm_mha prefill needs SM100, decode SM90+, and page sizes 16/32/64", () => {
    assert.include(
      violation(Attention.trtllmMha.check(input({ attention_backend: "trtllm_mha" }))).engineMessage,
      "TRTLLM MHA backend for prefill is only supported on Blackwell GPUs (SM100)"
    )
    assert.include(
      violation(
        Attention.trtllmMha.check(
          input({ decode_attention_backend: "trtllm_mha", attention_backend: "flashinfer" })
        )
      ).engineMessage,
      "TRTLLM MHA backend for decode"
    )
    const paged = adjust(
      Attention.trtllmMha.check(input({ attention_backend: "trtllm_mha", page_size: 1 }, { gpus: b200x8 }))
    )
    assert.strictEqual(
      paged.engineMessage,
      "TensorRT-LLM MHA only supports page_size of 16, 32 or 64, changing page_size from 1 to 64."
    )
    assert.isUndefined(
      Attention.trtllmMha.check(input({ attention_backend: "trtllm_mha", page_size: 32 }, { gpus: b200x8 }))
    )
  })

  it("R30: fa3 with fp8_e5m2 KV falls back to triton", () => {
    assert.deepStrictEqual(
      adjust(Attention.fa3Fp8E5m2.check(input({ attention_backend: "fa3", kv_cache_dtype: "fp8_e5m2" }))).set,
      { attention_backend: "triton" }
    )
  })

  it("R31: page size defaults to 1 (64 on MUSA)", () => {
    assert.deepStrictEqual(adjust(Attention.defaultPageSize.check(input())).set, { page_size: 1 })
    assert.deepStrictEqual(adjust(Attention.defaultPageSize.check(input({}, { platform: "musa" }))).set, {
      page_size: 64
    })
    assert.isUndefined(Attention.defaultPageSize.check(input({ page_size: 16 })))
  })
})
