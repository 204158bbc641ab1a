import { assert, describe, it } from "@effect/vitest"
import * as SpeculativeTriple from "../../src/rules/SpeculativeTriple.js"
import { adjust, input, llama, qwen36, violation } from "./input.js"

describe("rules/SpeculativeTriple", () => {
  it("R12: draft tokens alone is the bare assertion; the fix completes the triple", () => {
    const v = violation(
      SpeculativeTriple.speculativeTriple.check(
        input({ speculative_algorithm: "EAGLE", speculative_num_draft_tokens: 1 })
      )
    )
    assert.strictEqual(v.errorType, "AssertionError")
    assert.strictEqual(v.engineMessage, "")
    assert.deepStrictEqual(v.fix.set, { speculative_num_steps: 1, speculative_eagle_topk: 1 })
    const four = violation(
      SpeculativeTriple.speculativeTriple.check(
        input({ speculative_algorithm: "EAGLE", speculative_num_draft_tokens: 4 })
      )
    )
    assert.deepStrictEqual(four.fix.set, { speculative_num_steps: 3, speculative_eagle_topk: 1 })
    const topk = violation(
      SpeculativeTriple.speculativeTriple.check(
        input({ speculative_algorithm: "EAGLE", speculative_eagle_topk: 4 })
      )
    )
    assert.deepStrictEqual(topk.fix.set, { speculative_num_steps: 5, speculative_num_draft_tokens: 8 })
    assert.isUndefined(
      SpeculativeTriple.speculativeTriple.check(
        input({ speculative_algorithm: "EAGLE", speculative_num_steps: 2, speculative_eagle_topk: 1 })
      )
    )
    assert.isUndefined(SpeculativeTriple.speculativeTriple.check(input({ speculative_algorithm: "EAGLE" })))
  })

  it("R12.auto: (3, 1, 4) for Qwen, (5, 4, 8) for Llama, (3, 1, 4) for STANDALONE even on Llama", () => {
    const triple = (o: ReturnType<typeof adjust>) => [
      o.set.speculative_num_steps,
      o.set.speculative_eagle_topk,
      o.set.speculative_num_draft_tokens
    ]
    assert.deepStrictEqual(
      triple(
        adjust(
          SpeculativeTriple.autoTriple.check(input({ speculative_algorithm: "EAGLE" }, { traits: qwen36 }))
        )
      ),
      [3, 1, 4]
    )
    assert.deepStrictEqual(
      triple(
        adjust(
          SpeculativeTriple.autoTriple.check(input({ speculative_algorithm: "EAGLE" }, { traits: llama }))
        )
      ),
      [5, 4, 8]
    )
    assert.deepStrictEqual(
      triple(
        adjust(
          SpeculativeTriple.autoTriple.check(
            input({ speculative_algorithm: "STANDALONE" }, { traits: llama })
          )
        )
      ),
      [3, 1, 4]
    )
  })

  it("R12.topk-missing: steps without topk is the TypeError", () => {
    const v = violation(
      SpeculativeTriple.stepsWithoutTopk.check(
        input({ speculative_algorithm: "EAGLE", speculative_num_steps: 3 })
      )
    )
    assert.strictEqual(v.errorType, "TypeError")
    assert.strictEqual(v.engineMessage, "'>' not supported between instances of 'NoneType' and 'int'")
  })

  it("R13: topk 1 forces draft tokens = steps + 1 with SGLang's warning", () => {
    const out = adjust(
      SpeculativeTriple.draftTokensForTopkOne.check(
        input({
          speculative_algorithm: "EAGLE",
          speculative_num_steps: 1,
          speculative_eagle_topk: 1,
          speculative_num_draft_tokens: 1
        })
      )
    )
    assert.deepStrictEqual(out.set, { speculative_num_draft_tokens: 2 })
    assert.strictEqual(
      out.engineMessage,
      "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
    )
    assert.isUndefined(
      SpeculativeTriple.draftTokensForTopkOne.check(
        input({
          speculative_algorithm: "EAGLE",
          speculative_num_steps: 3,
          speculative_eagle_topk: 1,
          speculative_num_draft_tokens: 4
        })
      )
    )
  })

  it("R14: topk > 1 fails with trtllm_mha, and with page size > 1 outside flashinfer/fa3", () => {
    const spec = {
      speculative_algorithm: "EAGLE",
      speculative_num_steps: 5,
      speculative_eagle_topk: 4
    } as const
    const trt = violation(
      SpeculativeTriple.trtllmTopk.check(input({ ...spec, attention_backend: "trtllm_mha" }))
    )
    assert.strictEqual(
      trt.engineMessage,
      "trtllm_mha backend only supports topk = 1 for speculative decoding."
    )
    const paged = violation(
      SpeculativeTriple.topkWithPages.check(input({ ...spec, attention_backend: "triton", page_size: 16 }))
    )
    assert.include(paged.engineMessage, "speculative_eagle_topk > 1 with page_size > 1 is unstable")
    assert.isUndefined(
      SpeculativeTriple.topkWithPages.check(
        input({ ...spec, attention_backend: "flashinfer", page_size: 16 })
      )
    )
  })
})
