import { assert, describe, it } from "@effect/vitest"
import * as General from "../../src/rules/General.js"
import { adjust, input, llama, violation } from "./input.js"

describe("rules/General", () => {
  it("unquant becomes None; missing defaults come from the model path", () => {
    assert.deepStrictEqual(adjust(General.unquant.check(input({ quantization: "unquant" }))).set, {
      quantization: null
    })
    assert.deepStrictEqual(adjust(General.missingDefaults.check(input())).set, {
      tokenizer_path: "/root/models/m",
      served_model_name: "/root/models/m",
      device: "cuda"
    })
  })

  it("R35.context-length: longer than the model is a ValueError unless the env var allows it", () => {
    const v = violation(General.contextLength.check(input({ context_length: 16384 }, { traits: llama })))
    assert.strictEqual(
      v.engineMessage,
      "User-specified context_length (16384) is greater than the derived context_length (8192)."
    )
    assert.deepStrictEqual(v.fix.set, { context_length: 8192 })
    assert.isUndefined(
      General.contextLength.check(
        input(
          { context_length: 16384 },
          { traits: llama, env: { SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: "1" } }
        )
      )
    )
  })

  it("hierarchical cache and --disable-radix-cache exclude each other", () => {
    assert.include(
      violation(
        General.hicacheRadix.check(input({ enable_hierarchical_cache: true, disable_radix_cache: true }))
      ).engineMessage,
      "mutually exclusive"
    )
  })

  it("R31.chunked-prefill: chunked prefill must be a multiple of the page size", () => {
    const v = violation(
      General.chunkedPrefillPages.check(input({ chunked_prefill_size: 1000, page_size: 64 }))
    )
    assert.strictEqual(v.engineMessage, "chunked_prefill_size must be divisible by page_size")
    assert.deepStrictEqual(v.fix.set, { chunked_prefill_size: 960 })
  })

  it("served model name with ':' (defaulting to the model path) is an AssertionError", () => {
    const v = violation(General.servedModelNameColon.check(input({ served_model_name: "org:model" })))
    assert.include(v.engineMessage, "served_model_name cannot contain a colon")
    assert.deepStrictEqual(v.fix.set, { served_model_name: "org-model" })
    const fromPath = violation(
      General.servedModelNameColon.check({ ...input(), args: { ...input().args, model_path: "/m/a:b" } })
    )
    assert.include(fromPath.message, "defaults to --model-path")
  })

  it("R18.lora: LoRA only with NGRAM speculation", () => {
    assert.strictEqual(
      violation(General.loraSpeculative.check(input({ lora_paths: ["/a"], speculative_algorithm: "EAGLE" })))
        .engineMessage,
      "Currently LoRA is only compatible with NGRAM speculative decoding."
    )
    assert.isUndefined(
      General.loraSpeculative.check(input({ lora_paths: ["/a"], speculative_algorithm: "NGRAM" }))
    )
  })

  it("R18.mixed-chunk: check_server_args refuses mixed chunk with speculation (its message reads backwards)", () => {
    const v = violation(
      General.mixedChunkSpeculative.check(input({ enable_mixed_chunk: true, speculative_algorithm: "EAGLE" }))
    )
    assert.strictEqual(v.errorType, "AssertionError")
    assert.strictEqual(v.engineMessage, "enable_mixed_chunk is required for speculative decoding")
    assert.deepStrictEqual(v.fix.set, { enable_mixed_chunk: false })
    assert.isUndefined(General.mixedChunkSpeculative.check(input({ enable_mixed_chunk: true })))
  })
})
