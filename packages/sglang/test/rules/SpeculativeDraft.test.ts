import { assert, describe, it } from "@effect/vitest"
import * as SpeculativeDraft from "../../src/rules/SpeculativeDraft.js"
import { adjust, deepseek, input, qwen36, violation, warning } from "./input.js"

describe("rules/SpeculativeDraft", () => {
  it("R2: a draft path without revision gets main", () => {
    const out = adjust(SpeculativeDraft.draftRevision.check(input({ speculative_draft_model_path: "/d" })))
    assert.deepStrictEqual(out.set, { speculative_draft_model_revision: "main" })
  })

  it("R3: flashinfer_trtllm for the draft MoE is an AssertionError; unset copies the target's, trtllm -> auto", () => {
    const v = violation(
      SpeculativeDraft.draftMoeRunnerTrtllm.check(
        input({ speculative_algorithm: "EAGLE", speculative_moe_runner_backend: "flashinfer_trtllm" })
      )
    )
    assert.include(v.engineMessage, "doesn't support flashinfer_trtllm")
    const copy = adjust(
      SpeculativeDraft.draftMoeRunnerDefault.check(
        input({ speculative_algorithm: "EAGLE", moe_runner_backend: "flashinfer_trtllm" })
      )
    )
    assert.deepStrictEqual(copy.set, { speculative_moe_runner_backend: "auto" })
  })

  it("R11: DeepSeek's draft path defaults to the model path; a given path only warns; Qwen keeps None", () => {
    const out = adjust(
      SpeculativeDraft.mtpDraftPath.check(input({ speculative_algorithm: "EAGLE" }, { traits: deepseek }))
    )
    assert.strictEqual(out.set.speculative_draft_model_path, "/root/models/m")
    const w = warning(
      SpeculativeDraft.mtpDraftPath.check(
        input({ speculative_algorithm: "EAGLE", speculative_draft_model_path: "/d" }, { traits: deepseek })
      )
    )
    assert.strictEqual(w.engineMessage, "DeepSeek MTP does not require setting speculative_draft_model_path.")
    assert.isUndefined(
      SpeculativeDraft.mtpDraftPath.check(input({ speculative_algorithm: "EAGLE" }, { traits: qwen36 }))
    )
  })
})
