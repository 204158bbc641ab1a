import { assert, describe, it } from "@effect/vitest"
import * as Mamba from "../../src/rules/Mamba.js"
import { adjust, input, llama, qwen36, qwenNext, violation } from "./input.js"

describe("rules/Mamba", () => {
  it("R19: auto resolves to no_buffer silently; explicit strategies stay", () => {
    const out = adjust(Mamba.autoStrategy.check(input()))
    assert.deepStrictEqual(out.set, { mamba_scheduler_strategy: "no_buffer" })
    assert.strictEqual(out.engineMessage, undefined)
    assert.isUndefined(Mamba.autoStrategy.check(input({ mamba_scheduler_strategy: "extra_buffer" })))
  })

  it("R24: speculative decoding + no_buffer + radix cache is a ValueError naming the architecture", () => {
    const v = violation(
      Mamba.noBufferSpeculative.check(
        input({ speculative_algorithm: "NEXTN", mamba_scheduler_strategy: "no_buffer" }, { traits: qwenNext })
      )
    )
    assert.strictEqual(v.errorType, "ValueError")
    assert.isTrue(
      v.engineMessage.startsWith("Speculative decoding for Qwen3NextForCausalLM is not compatible")
    )
    assert.include(v.engineMessage, "no_buffer.To use radix cache")
    assert.deepStrictEqual(v.fix.set, { mamba_scheduler_strategy: "extra_buffer" })
    assert.deepStrictEqual(v.fix.alternatives, [{ disable_radix_cache: true }])
  })

  it("R24: not raised with the radix cache off, with extra_buffer, or for a non-hybrid model", () => {
    const spec = { speculative_algorithm: "NEXTN", mamba_scheduler_strategy: "no_buffer" } as const
    assert.isUndefined(
      Mamba.noBufferSpeculative.check(input({ ...spec, disable_radix_cache: true }, { traits: qwen36 }))
    )
    assert.isUndefined(
      Mamba.noBufferSpeculative.check(
        input({ ...spec, mamba_scheduler_strategy: "extra_buffer" }, { traits: qwen36 })
      )
    )
    assert.isUndefined(Mamba.noBufferSpeculative.check(input(spec, { traits: llama })))
  })

  it("R24 on ROCm: the radix cache is disabled with a warning instead", () => {
    const out = adjust(
      Mamba.noBufferSpeculative.check(
        input(
          { speculative_algorithm: "EAGLE", mamba_scheduler_strategy: "no_buffer" },
          { traits: qwen36, platform: "rocm" }
        )
      )
    )
    assert.deepStrictEqual(out.set, { disable_radix_cache: true })
    assert.include(out.engineMessage, "on ROCm devices")
  })

  it("R24.page-size: no_buffer with radix cache forces page size 1 with SGLang's warning", () => {
    const out = adjust(
      Mamba.noBufferPageSize.check(
        input({ mamba_scheduler_strategy: "no_buffer", page_size: 16 }, { traits: qwen36 })
      )
    )
    assert.deepStrictEqual(out.set, { page_size: 1 })
    assert.strictEqual(
      out.engineMessage,
      "Qwen3_5ForConditionalGeneration with radix cache requires page_size=1 in the current Mamba scheduling mode (no_buffer), but got 16. Automatically setting page_size=1."
    )
  })

  it("R24.overlap and R24.trtllm-mha: without speculation overlap goes, and trtllm_mha drops the radix cache", () => {
    const base = { mamba_scheduler_strategy: "no_buffer" } as const
    assert.deepStrictEqual(adjust(Mamba.noBufferOverlap.check(input(base, { traits: qwen36 }))).set, {
      disable_overlap_schedule: true
    })
    assert.deepStrictEqual(
      adjust(
        Mamba.noBufferTrtllm.check(input({ ...base, attention_backend: "trtllm_mha" }, { traits: qwen36 }))
      ).set,
      { disable_radix_cache: true, disable_overlap_schedule: false }
    )
    assert.isUndefined(
      Mamba.noBufferTrtllm.check(input({ ...base, attention_backend: "triton" }, { traits: qwen36 }))
    )
  })

  it("R22: extra_buffer with --disable-radix-cache is a ValueError (missing period kept)", () => {
    const v = violation(
      Mamba.extraBufferNeedsRadix.check(
        input({ mamba_scheduler_strategy: "extra_buffer", disable_radix_cache: true }, { traits: qwen36 })
      )
    )
    assert.isTrue(
      v.engineMessage.startsWith("mamba extra_buffer is not compatible with --disable-radix-cache Overlap")
    )
  })

  it("R21: extra_buffer on an architecture without support is an AssertionError", () => {
    const nemotronH = { ...qwen36, architecture: "NemotronHForCausalLM" }
    const v = violation(
      Mamba.extraBufferUnsupported.check(
        input({ mamba_scheduler_strategy: "extra_buffer" }, { traits: nemotronH })
      )
    )
    assert.strictEqual(v.engineMessage, "mamba extra_buffer is not supported for NemotronHForCausalLM model")
    assert.isUndefined(
      Mamba.extraBufferUnsupported.check(
        input({ mamba_scheduler_strategy: "extra_buffer" }, { traits: qwen36 })
      )
    )
  })

  it("R23: track interval vs raw draft tokens, vs page size, and the FLA chunk rule", () => {
    const eb = { mamba_scheduler_strategy: "extra_buffer" } as const
    const draft = violation(
      Mamba.trackIntervalVsDraft.check(
        input({ ...eb, mamba_track_interval: 4, speculative_num_draft_tokens: 8 }, { traits: qwen36 })
      )
    )
    assert.strictEqual(
      draft.engineMessage,
      "mamba_track_interval 4 must be greater than or equal to speculative_num_draft_tokens 8"
    )
    const page = violation(
      Mamba.trackIntervalVsPage.check(input({ ...eb, page_size: 96 }, { traits: qwen36 }))
    )
    assert.strictEqual(page.engineMessage, "mamba_track_interval 256 must be divisible by page_size 96")
    const fla = violation(Mamba.pageVsFlaChunk.check(input({ ...eb, page_size: 48 }, { traits: qwen36 })))
    assert.include(fla.engineMessage, "got FLA_CHUNK_SIZE=64, self.page_size=48")
    assert.isUndefined(Mamba.pageVsFlaChunk.check(input({ ...eb, page_size: 128 }, { traits: qwen36 })))
    assert.isUndefined(Mamba.trackIntervalVsPage.check(input({ ...eb, page_size: 64 }, { traits: qwen36 })))
  })

  it("R23.page-size: the fix is a page size that divides the interval and passes the FLA rule", () => {
    const eb = { mamba_scheduler_strategy: "extra_buffer" } as const
    const cases: ReadonlyArray<[number, number, number]> = [
      // [interval, bad page size, fixed page size]
      [256, 96, 64],
      [96, 64, 32],
      [100, 8, 4]
    ]
    for (const [interval, page, fixed] of cases) {
      const given = { ...eb, mamba_track_interval: interval, page_size: page }
      const v = violation(Mamba.trackIntervalVsPage.check(input(given, { traits: qwen36 })))
      assert.deepStrictEqual(v.fix.set, { page_size: fixed })
      const after = input({ ...given, page_size: fixed }, { traits: qwen36 })
      assert.isUndefined(Mamba.trackIntervalVsPage.check(after))
      assert.isUndefined(Mamba.pageVsFlaChunk.check(after))
    }
  })

  it("R23.platform: extra_buffer on ROCm is an AssertionError", () => {
    const v = violation(
      Mamba.extraBufferPlatform.check(
        input({ mamba_scheduler_strategy: "extra_buffer" }, { traits: qwen36, platform: "rocm" })
      )
    )
    assert.strictEqual(
      v.engineMessage,
      "Mamba extra_buffer is only supported on CUDA and MUSA devices with FLA backend"
    )
  })

  it("R26: a PD decode server forces chunk cache and falls back to no_buffer", () => {
    const decode = { disaggregation_mode: "decode", mamba_scheduler_strategy: "extra_buffer" } as const
    assert.strictEqual(
      adjust(Mamba.pdDecodeChunkCache.check(input(decode))).engineMessage,
      "KV cache is forced as chunk cache for decode server"
    )
    assert.deepStrictEqual(adjust(Mamba.pdDecodeNoExtraBuffer.check(input(decode))).set, {
      mamba_scheduler_strategy: "no_buffer"
    })
    assert.isUndefined(
      Mamba.pdDecodeChunkCache.check(input({ ...decode, disaggregation_decode_enable_radix_cache: true }))
    )
  })
})
