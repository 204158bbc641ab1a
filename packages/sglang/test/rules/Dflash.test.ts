import { assert, describe, it } from "@effect/vitest"
import * as D from "../../src/rules/Dflash.js"
import { adjust, input, violation } from "./input.js"

const dflash = { speculative_algorithm: "DFLASH", speculative_draft_model_path: "/d" } as const

describe("rules/Dflash", () => {
  it("R5: DFLASH needs a draft path, pp 1 and no dp attention", () => {
    const noDraft = violation(D.dflashDraftPath.check(input({ speculative_algorithm: "DFLASH" })))
    assert.strictEqual(
      noDraft.engineMessage,
      "DFLASH speculative decoding requires setting --speculative-draft-model-path."
    )
    assert.deepStrictEqual(noDraft.fix.set, {})
    assert.strictEqual(
      violation(D.dflashPipeline.check(input({ ...dflash, pp_size: 2 }))).engineMessage,
      "Currently DFLASH speculative decoding only supports pp_size == 1."
    )
    assert.isUndefined(D.dflashDpAttention.check(input(dflash)))
  })

  it("R6: DFLASH forces steps and topk to 1, warning only when the user gave another value", () => {
    const given = adjust(D.dflashSteps.check(input({ ...dflash, speculative_num_steps: 3 })))
    assert.strictEqual(
      given.engineMessage,
      "DFLASH only supports speculative_num_steps == 1; overriding speculative_num_steps=3 to 1."
    )
    const unset = adjust(D.dflashTopk.check(input(dflash)))
    assert.deepStrictEqual(unset.set, { speculative_eagle_topk: 1 })
    assert.strictEqual(unset.engineMessage, undefined)
  })

  it("R7: block size and draft tokens must agree; block size sets draft tokens; window covers the block", () => {
    const differ = violation(
      D.dflashBlockMatchesDraft.check(
        input({ ...dflash, speculative_dflash_block_size: 8, speculative_num_draft_tokens: 4 })
      )
    )
    assert.include(differ.engineMessage, "speculative_num_draft_tokens=4, speculative_dflash_block_size=8.")
    assert.deepStrictEqual(
      adjust(D.dflashDraftFromBlock.check(input({ ...dflash, speculative_dflash_block_size: 8 }))).set,
      {
        speculative_num_draft_tokens: 8
      }
    )
    assert.deepStrictEqual(adjust(D.dflashDraftFromBlock.check(input(dflash))).set, {
      speculative_num_draft_tokens: 16
    })
    const window = violation(
      D.dflashWindowCoversBlock.check(
        input({ ...dflash, speculative_dflash_draft_window_size: 4, speculative_num_draft_tokens: 16 })
      )
    )
    assert.include(window.engineMessage, "window_size=4, block_size=16.")
    assert.include(
      violation(D.dflashBlockPositive.check(input({ ...dflash, speculative_dflash_block_size: 0 })))
        .engineMessage,
      "got 0."
    )
    assert.strictEqual(
      violation(D.dflashWindowPositive.check(input({ ...dflash, speculative_dflash_draft_window_size: 0 })))
        .engineMessage,
      "DFLASH requires --speculative-dflash-draft-window-size to be positive, got 0."
    )
    assert.isUndefined(
      D.dflashWindowPositive.check(input({ ...dflash, speculative_dflash_draft_window_size: 16 }))
    )
  })

  it("R8: DFLASH disables overlap and mixed chunk, and resets max running requests", () => {
    assert.deepStrictEqual(adjust(D.dflashOverlap.check(input(dflash))).set, {
      disable_overlap_schedule: true
    })
    assert.deepStrictEqual(
      adjust(D.dflashMixedChunk.check(input({ ...dflash, enable_mixed_chunk: true }))).set,
      {
        enable_mixed_chunk: false
      }
    )
    assert.deepStrictEqual(adjust(D.dflashMaxRunning.check(input(dflash))).set, { max_running_requests: 48 })
  })
})
