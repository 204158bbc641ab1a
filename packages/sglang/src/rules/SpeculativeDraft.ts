/**
 * Draft-model settings of speculative decoding (rules.md R2, R3, R11): revision, MoE runner
 * backend of the draft, and the MTP draft path of DeepSeek-style checkpoints.
 *
 * @since 0.1.0
 */
import { isEagleFamily } from "../internal/rules/helpers.js"
import { rangeOf } from "../internal/rules/ranges.js"
import * as Rule from "../Rule.js"

/** R2: a draft path without a revision gets revision "main". */
export const draftRevision = Rule.make({
  id: "R2",
  title: "draft model revision defaults to main",
  versions: rangeOf("R2"),
  order: { step: 17, sub: 1 },
  kind: "adjust",
  check: ({ args }) =>
    args.speculative_draft_model_path !== null && args.speculative_draft_model_revision === null
      ? Rule.adjust(
          { speculative_draft_model_revision: "main" },
          "the draft model is loaded at revision main",
          undefined
        )
      : undefined
})

const trtllmMoe = (backend: string | null) =>
  backend === "flashinfer_trtllm" || backend === "flashinfer_trtllm_routed"

/** R3: draft MoE runner may not be flashinfer_trtllm. */
export const draftMoeRunnerTrtllm = Rule.make({
  id: "R3",
  title: "speculative MoE runner cannot be flashinfer_trtllm",
  versions: rangeOf("R3"),
  order: { step: 17, sub: 2 },
  kind: "fatal",
  check: ({ args }) =>
    args.speculative_algorithm !== null && trtllmMoe(args.speculative_moe_runner_backend)
      ? Rule.violation({
          errorType: "AssertionError",
          message: "the draft model's MoE layers cannot run on flashinfer_trtllm",
          engineMessage:
            "Currently speculative MoE runner backend doesn't support flashinfer_trtllm, please use triton or auto backend for speculative moe runner instead.",
          fields: ["speculative_moe_runner_backend"],
          fix: { speculative_moe_runner_backend: "triton" },
          alternatives: [{ speculative_moe_runner_backend: "auto" }]
        })
      : undefined
})

/** R3: the draft MoE runner follows the target's (flashinfer_trtllm -> auto). */
export const draftMoeRunnerDefault = Rule.make({
  id: "R3.default",
  title: "speculative MoE runner follows the target's",
  versions: rangeOf("R3.default"),
  order: { step: 17, sub: 3 },
  kind: "adjust",
  check: ({ args }) =>
    args.speculative_algorithm !== null && args.speculative_moe_runner_backend === null
      ? Rule.adjust(
          {
            speculative_moe_runner_backend: trtllmMoe(args.moe_runner_backend)
              ? "auto"
              : args.moe_runner_backend
          },
          "the draft MoE runner copies --moe-runner-backend",
          undefined
        )
      : undefined
})

const mtpDraftPathArchs: ReadonlySet<string> = new Set([
  "DeepseekV32ForCausalLM",
  "DeepseekV3ForCausalLM",
  "Glm4MoeForCausalLM",
  "Glm4MoeLiteForCausalLM",
  "GlmMoeDsaForCausalLM",
  "BailingMoeForCausalLM",
  "BailingMoeV2ForCausalLM",
  "BailingMoeV2_5ForCausalLM",
  "MistralLarge3ForCausalLM",
  "PixtralForConditionalGeneration",
  "HYV3ForCausalLM"
])

/** R11: DeepSeek-style MTP draft path defaults to the model path. */
export const mtpDraftPath = Rule.make({
  id: "R11",
  title: "MTP draft path defaults to the model path",
  versions: rangeOf("R11"),
  order: { step: 17, sub: 34 },
  kind: "adjust",
  check: ({ args, traits }) => {
    const arch = traits?.architecture
    if (!isEagleFamily(args.speculative_algorithm) || arch === undefined || !mtpDraftPathArchs.has(arch)) {
      return undefined
    }
    if (args.speculative_draft_model_path === null) {
      return Rule.adjust(
        { speculative_draft_model_path: args.model_path, speculative_draft_model_revision: args.revision },
        `${arch} drafts with its own MTP layers, loaded from --model-path`,
        undefined
      )
    }
    if (arch === "MistralLarge3ForCausalLM" || arch === "PixtralForConditionalGeneration") return undefined
    return Rule.warning(
      "--speculative-draft-model-path is not needed: the MTP layers come from the target checkpoint",
      "DeepSeek MTP does not require setting speculative_draft_model_path.",
      ["speculative_draft_model_path"]
    )
  }
})

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  draftRevision,
  draftMoeRunnerTrtllm,
  draftMoeRunnerDefault,
  mtpDraftPath
]
