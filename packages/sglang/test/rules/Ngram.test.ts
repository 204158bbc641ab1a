import { assert, describe, it } from "@effect/vitest"
import * as N from "../../src/rules/Ngram.js"
import { adjust, input, violation } from "./input.js"

const ngram = { speculative_algorithm: "NGRAM" } as const

describe("rules/Ngram", () => {
  it("R16: NGRAM defaults (topk from BFS breadth, 12 draft tokens) and its checks", () => {
    assert.deepStrictEqual(adjust(N.ngramTopk.check(input(ngram))).set, { speculative_eagle_topk: 10 })
    const reset = adjust(N.ngramMaxRunning.check(input(ngram)))
    assert.deepStrictEqual(reset.set, { max_running_requests: 48 })
    assert.include(reset.engineMessage, "Max running requests is reset to 48")
    assert.isUndefined(N.ngramMaxRunning.check(input({ ...ngram, max_running_requests: 16 })))
    const draft = adjust(N.ngramDraftTokens.check(input(ngram)))
    assert.deepStrictEqual(draft.set, { speculative_num_draft_tokens: 12 })
    assert.include(draft.engineMessage, "set to 12 by default for ngram")
    assert.deepStrictEqual(adjust(N.ngramOverlap.check(input(ngram))).set, {
      disable_overlap_schedule: true,
      enable_mixed_chunk: false
    })
    assert.strictEqual(
      violation(N.ngramDevice.check(input({ ...ngram, device: "cpu" }))).engineMessage,
      "Ngram speculative decoding only supports CUDA device."
    )
    assert.strictEqual(
      violation(N.ngramDpAttention.check(input({ ...ngram, enable_dp_attention: true }))).engineMessage,
      "Currently ngram speculative decoding does not support dp attention."
    )
    const paged = violation(
      N.ngramPages.check(
        input({ ...ngram, speculative_eagle_topk: 10, page_size: 16, attention_backend: "fa3" })
      )
    )
    assert.include(paged.engineMessage, "speculative_eagle_topk(10) > 1 with page_size(16) > 1")
  })

  it("R16.corpus: an external corpus needs a budget within draft tokens - 1", () => {
    const base = { ...ngram, speculative_ngram_external_corpus_path: "/c", speculative_num_draft_tokens: 12 }
    assert.include(
      violation(N.ngramCorpus.check(input({ ...base, speculative_ngram_external_sam_budget: 0 })))
        .engineMessage,
      "must be positive"
    )
    const over = violation(N.ngramCorpus.check(input({ ...base, speculative_ngram_external_sam_budget: 20 })))
    assert.strictEqual(
      over.engineMessage,
      "speculative_ngram_external_sam_budget must be less than or equal to speculative_num_draft_tokens - 1 (11)."
    )
    assert.isUndefined(N.ngramCorpus.check(input({ ...base, speculative_ngram_external_sam_budget: 5 })))
  })
})
