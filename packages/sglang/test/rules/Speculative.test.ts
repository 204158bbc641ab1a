import { assert, describe, it } from "@effect/vitest"
import * as Speculative from "../../src/rules/Speculative.js"
import { adjust, input, violation, warning } from "./input.js"

describe("rules/Speculative", () => {
  it("R1: NEXTN becomes EAGLE silently", () => {
    const out = adjust(Speculative.nextnIsEagle.check(input({ speculative_algorithm: "NEXTN" })))
    assert.deepStrictEqual(out.set, { speculative_algorithm: "EAGLE" })
    assert.strictEqual(out.engineMessage, undefined)
    assert.isUndefined(Speculative.nextnIsEagle.check(input({ speculative_algorithm: "EAGLE" })))
  })

  it("R4: skip-dp-mlp-sync only with EAGLE", () => {
    const v = violation(
      Speculative.skipDpMlpSync.check(
        input({ speculative_algorithm: "EAGLE3", speculative_skip_dp_mlp_sync: true })
      )
    )
    assert.strictEqual(
      v.engineMessage,
      "--speculative-skip-dp-mlp-sync is only supported with speculative_algorithm == EAGLE, got EAGLE3."
    )
    assert.isUndefined(
      Speculative.skipDpMlpSync.check(
        input({ speculative_algorithm: "EAGLE", speculative_skip_dp_mlp_sync: true })
      )
    )
  })

  it("R9: STANDALONE with dp attention is a ValueError", () => {
    const v = violation(
      Speculative.standaloneDpAttention.check(
        input({ speculative_algorithm: "STANDALONE", enable_dp_attention: true })
      )
    )
    assert.strictEqual(
      v.engineMessage,
      "Currently standalone speculative decoding does not support dp attention."
    )
  })

  it("R15: max running requests 48 unless given", () => {
    const out = adjust(Speculative.maxRunningRequests.check(input({ speculative_algorithm: "EAGLE" })))
    assert.deepStrictEqual(out.set, { max_running_requests: 48 })
    assert.isTrue(out.engineMessage?.startsWith("Max running requests is reset to 48"))
    assert.isUndefined(
      Speculative.maxRunningRequests.check(input({ speculative_algorithm: "EAGLE", max_running_requests: 8 }))
    )
    assert.isUndefined(Speculative.maxRunningRequests.check(input()))
  })

  it("R10: topk > 1 turns overlap off (spec v1), default is spec v2, disabled overlap logs v1", () => {
    const v1 = adjust(
      Speculative.specVersion.check(input({ speculative_algorithm: "EAGLE", speculative_eagle_topk: 4 }))
    )
    assert.deepStrictEqual(v1.set, { disable_overlap_schedule: true })
    assert.strictEqual(
      v1.engineMessage,
      "Spec v1 is used for eagle/eagle3/standalone speculative decoding because spec v2 currently only supports topk = 1."
    )
    const v2 = warning(Speculative.specVersion.check(input({ speculative_algorithm: "EAGLE" })))
    assert.strictEqual(
      v2.engineMessage,
      "Spec v2 is enabled by default for eagle/eagle3/standalone speculative decoding."
    )
    const off = warning(
      Speculative.specVersion.check(input({ speculative_algorithm: "EAGLE", disable_overlap_schedule: true }))
    )
    assert.include(off.engineMessage, "because overlap schedule is disabled.")
  })

  it("R10.mixed-chunk: mixed chunked prefill is turned off", () => {
    const out = adjust(
      Speculative.eagleMixedChunk.check(input({ speculative_algorithm: "EAGLE", enable_mixed_chunk: true }))
    )
    assert.strictEqual(
      out.engineMessage,
      "Mixed chunked prefill is disabled because of using eagle speculative decoding."
    )
  })

  it("R17: adaptive speculation falls back when topk is not 1", () => {
    const out = adjust(
      Speculative.adaptiveUnsupported.check(
        input({ speculative_algorithm: "EAGLE", speculative_eagle_topk: 4, speculative_adaptive: true })
      )
    )
    assert.deepStrictEqual(out.set, { speculative_adaptive: false })
  })

  it("R18: flex attention and PD-decode radix cache cannot speculate", () => {
    assert.include(
      violation(
        Speculative.flexAttention.check(
          input({ speculative_algorithm: "EAGLE", attention_backend: "flex_attention" })
        )
      ).engineMessage,
      "Flex Attention"
    )
    assert.strictEqual(
      violation(
        Speculative.pdDecodeRadix.check(
          input({
            speculative_algorithm: "EAGLE",
            disaggregation_mode: "decode",
            disaggregation_decode_enable_radix_cache: true
          })
        )
      ).engineMessage,
      "--disaggregation-decode-enable-radix-cache is incompatible with speculative decoding (--speculative-algorithm EAGLE)"
    )
  })
})
