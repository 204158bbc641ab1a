/**
 * Speculative decoding rules of `_handle_speculative_decoding` (rules.md R1-R4, R9-R15, R17,
 * R18 parts): NEXTN -> EAGLE, the all-or-nothing (steps, topk, draft tokens) triple and its
 * auto choice, topk constraints, the max-running-requests reset and the spec v1/v2 choice.
 * DFLASH and NGRAM live in `SpeculativeDflashNgram.ts`.
 *
 * @since 0.1.0
 */
import { attentionBackends, envBool, isEagleFamily, V0_5_11 } from "../internal/rules/helpers.js"
import * as Rule from "../Rule.js"

/** R2: a draft path without a revision gets revision "main". */
export const draftRevision = Rule.make({
  id: "R2",
  title: "draft model revision defaults to main",
  versions: V0_5_11,
  order: { step: 17, sub: 1 },
  kind: "adjust",
  check: ({ args }) =>
    args.speculative_draft_model_path !== null && args.speculative_draft_model_revision === null
      ? Rule.adjust({ speculative_draft_model_revision: "main" }, "the draft model is loaded at revision main", undefined)
      : undefined
})

const trtllmMoe = (backend: string | null) => backend === "flashinfer_trtllm" || backend === "flashinfer_trtllm_routed"

/** R3: draft MoE runner may not be flashinfer_trtllm. */
export const draftMoeRunnerTrtllm = Rule.make({
  id: "R3",
  title: "speculative MoE runner cannot be flashinfer_trtllm",
  versions: V0_5_11,
  order: { step: 17, sub: 2 },
  kind: "fatal",
  check: ({ args }) =>
    args.speculative_algorithm !== null && trtllmMoe(args.speculative_moe_runner_backend)
      ? Rule.violation({
          errorType: "AssertionError",
          message: "the draft model's MoE layers cannot run on flashinfer_trtllm",
          sglangMessage:
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
  versions: V0_5_11,
  order: { step: 17, sub: 3 },
  kind: "adjust",
  check: ({ args }) =>
    args.speculative_algorithm !== null && args.speculative_moe_runner_backend === null
      ? Rule.adjust(
          {
            speculative_moe_runner_backend: trtllmMoe(args.moe_runner_backend) ? "auto" : args.moe_runner_backend
          },
          "the draft MoE runner copies --moe-runner-backend",
          undefined
        )
      : undefined
})

/** R1: NEXTN is EAGLE. */
export const nextnIsEagle = Rule.make({
  id: "R1",
  title: "NEXTN is an alias of EAGLE",
  versions: V0_5_11,
  order: { step: 17, sub: 4 },
  kind: "adjust",
  check: ({ args }) =>
    args.speculative_algorithm === "NEXTN"
      ? Rule.adjust({ speculative_algorithm: "EAGLE" }, "NEXTN is run as EAGLE with the model's MTP layers", undefined)
      : undefined
})

/** R4: --speculative-skip-dp-mlp-sync is EAGLE only. */
export const skipDpMlpSync = Rule.make({
  id: "R4",
  title: "--speculative-skip-dp-mlp-sync only with EAGLE",
  versions: V0_5_11,
  order: { step: 17, sub: 5 },
  kind: "fatal",
  check: ({ args }) =>
    args.speculative_skip_dp_mlp_sync && args.speculative_algorithm !== "EAGLE"
      ? Rule.violation({
          errorType: "AssertionError",
          message: "--speculative-skip-dp-mlp-sync works only with EAGLE (or NEXTN)",
          sglangMessage: `--speculative-skip-dp-mlp-sync is only supported with speculative_algorithm == EAGLE, got ${args.speculative_algorithm}.`,
          fields: ["speculative_skip_dp_mlp_sync", "speculative_algorithm"],
          fix: { speculative_skip_dp_mlp_sync: false }
        })
      : undefined
})

/** R9: STANDALONE without dp attention. */
export const standaloneDpAttention = Rule.make({
  id: "R9",
  title: "STANDALONE speculative decoding without dp attention",
  versions: V0_5_11,
  order: { step: 17, sub: 30 },
  kind: "fatal",
  check: ({ args }) =>
    args.speculative_algorithm === "STANDALONE" && args.enable_dp_attention
      ? Rule.violation({
          errorType: "ValueError",
          message: "STANDALONE speculative decoding cannot run with --enable-dp-attention",
          sglangMessage: "Currently standalone speculative decoding does not support dp attention.",
          fields: ["speculative_algorithm", "enable_dp_attention"],
          fix: { enable_dp_attention: false }
        })
      : undefined
})

export const maxRunningRequestsMessage =
  "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests."

/** R15 (EAGLE family): max_running_requests -> 48. */
export const maxRunningRequests = Rule.make({
  id: "R15",
  title: "max running requests reset to 48 for speculative decoding",
  versions: V0_5_11,
  order: { step: 17, sub: 31 },
  kind: "adjust",
  check: ({ args }) =>
    isEagleFamily(args.speculative_algorithm) && args.max_running_requests === null
      ? Rule.adjust(
          { max_running_requests: 48 },
          "speculative decoding caps concurrent requests at 48 unless --max-running-requests is given",
          maxRunningRequestsMessage
        )
      : undefined
})

/** R10: spec v2 (overlap) needs topk 1 and SGLANG_ENABLE_SPEC_V2; logs which worker is used. */
export const specVersion = Rule.make({
  id: "R10",
  title: "spec v1 or v2 for the EAGLE family",
  versions: V0_5_11,
  order: { step: 17, sub: 32 },
  kind: "adjust",
  check: (input) => {
    const { args } = input
    if (!isEagleFamily(args.speculative_algorithm)) return undefined
    const topk = args.speculative_eagle_topk
    let reason: string | undefined
    if (!args.disable_overlap_schedule && topk !== null && topk > 1) reason = "spec v2 currently only supports topk = 1"
    else if (!args.disable_overlap_schedule && !envBool(input, "SGLANG_ENABLE_SPEC_V2", true)) {
      reason = "SGLANG_ENABLE_SPEC_V2=False"
    }
    if (reason !== undefined) {
      return Rule.adjust(
        { disable_overlap_schedule: true },
        `the overlap scheduler (spec v2) is turned off: ${reason}`,
        `Spec v1 is used for eagle/eagle3/standalone speculative decoding because ${reason}.`
      )
    }
    return args.disable_overlap_schedule
      ? Rule.warning(
          "overlap schedule is disabled, so the spec v1 worker is used",
          "Spec v1 is used for eagle/eagle3/standalone speculative decoding because overlap schedule is disabled.",
          ["disable_overlap_schedule"]
        )
      : Rule.warning(
          "speculative decoding runs on the spec v2 (overlap) worker",
          "Spec v2 is enabled by default for eagle/eagle3/standalone speculative decoding.",
          ["speculative_algorithm"]
        )
  }
})

/** R10: no mixed chunked prefill with EAGLE. */
export const eagleMixedChunk = Rule.make({
  id: "R10.mixed-chunk",
  title: "mixed chunked prefill disabled for the EAGLE family",
  versions: V0_5_11,
  order: { step: 17, sub: 33 },
  kind: "adjust",
  check: ({ args }) =>
    isEagleFamily(args.speculative_algorithm) && args.enable_mixed_chunk
      ? Rule.adjust(
          { enable_mixed_chunk: false },
          "mixed chunked prefill is not used with speculative decoding",
          "Mixed chunked prefill is disabled because of using eagle speculative decoding."
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
  versions: V0_5_11,
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

/** Complete a partially given (steps, topk, draft tokens) triple the way SGLang would accept it. */
const completeTriple = (topk: number | null, draft: number | null) => {
  if (topk !== null && topk > 1) return { speculative_num_steps: 5, speculative_num_draft_tokens: draft ?? 8 }
  const steps = draft === null ? 3 : Math.max(1, draft - 1)
  return { speculative_num_steps: steps, speculative_eagle_topk: 1 }
}

/** R12: the bare assertion: without --speculative-num-steps, topk and draft tokens must be unset too. */
export const speculativeTriple = Rule.make({
  id: "R12",
  title: "speculative steps, topk and draft tokens: all or none",
  versions: V0_5_11,
  order: { step: 17, sub: 35 },
  kind: "fatal",
  check: ({ args }) => {
    const { speculative_eagle_topk: topk, speculative_num_draft_tokens: draft } = args
    if (!isEagleFamily(args.speculative_algorithm) || args.speculative_num_steps !== null) return undefined
    if (topk === null && draft === null) return undefined
    const given = [topk !== null ? "--speculative-eagle-topk" : "", draft !== null ? "--speculative-num-draft-tokens" : ""]
      .filter((s) => s !== "")
      .join(" and ")
    return Rule.violation({
      errorType: "AssertionError",
      message: `${given} given without --speculative-num-steps: SGLang needs none of the three speculative numbers (it picks them) or at least steps and topk; it fails with a bare AssertionError (no message)`,
      sglangMessage: "",
      sourceLine:
        "assert (self.speculative_eagle_topk is None and self.speculative_num_draft_tokens is None)",
      fields: ["speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"],
      fix: completeTriple(topk, draft),
      alternatives: [{ speculative_eagle_topk: null, speculative_num_draft_tokens: null }]
    })
  }
})

/** R12: none of the three given -> SGLang picks them from the architecture. */
export const autoTriple = Rule.make({
  id: "R12.auto",
  title: "automatic speculative steps, topk and draft tokens",
  versions: V0_5_11,
  order: { step: 17, sub: 36 },
  kind: "adjust",
  check: ({ args, traits }) => {
    if (!isEagleFamily(args.speculative_algorithm) || args.speculative_num_steps !== null) return undefined
    if (args.speculative_eagle_topk !== null || args.speculative_num_draft_tokens !== null) return undefined
    const arch = traits?.architecture
    const wide =
      args.speculative_algorithm !== "STANDALONE" &&
      (arch === "LlamaForCausalLM" || arch === "Grok1ForCausalLM" || arch === "Grok1VForCausalLM")
    const [steps, topk, draft] = wide ? [5, 4, 8] : [3, 1, 4]
    return Rule.adjust(
      { speculative_num_steps: steps, speculative_eagle_topk: topk, speculative_num_draft_tokens: draft },
      `SGLang picks (steps, topk, draft tokens) = (${steps}, ${topk}, ${draft}) for ${arch ?? "this model"}`,
      undefined
    )
  }
})

/** R12/R14: steps without topk passes the assertion, then `None > 1` raises a TypeError. */
export const stepsWithoutTopk = Rule.make({
  id: "R12.topk-missing",
  title: "--speculative-num-steps without --speculative-eagle-topk",
  versions: V0_5_11,
  order: { step: 17, sub: 37 },
  kind: "fatal",
  check: ({ args }) =>
    isEagleFamily(args.speculative_algorithm) && args.speculative_num_steps !== null && args.speculative_eagle_topk === null
      ? Rule.violation({
          errorType: "TypeError",
          message: "--speculative-num-steps needs --speculative-eagle-topk too (SGLang compares the missing topk with 1)",
          sglangMessage: "'>' not supported between instances of 'NoneType' and 'int'",
          fields: ["speculative_num_steps", "speculative_eagle_topk"],
          fix: { speculative_eagle_topk: 1 }
        })
      : undefined
})

/** R14: trtllm_mha only with topk 1. */
export const trtllmTopk = Rule.make({
  id: "R14.trtllm-mha",
  title: "trtllm_mha attention only with topk 1",
  versions: V0_5_11,
  order: { step: 17, sub: 38 },
  kind: "fatal",
  check: ({ args }) => {
    const topk = args.speculative_eagle_topk
    if (!isEagleFamily(args.speculative_algorithm) || topk === null || topk <= 1) return undefined
    if (!attentionBackends(args).includes("trtllm_mha")) return undefined
    return Rule.violation({
      errorType: "ValueError",
      message: `the trtllm_mha attention backend supports only --speculative-eagle-topk 1, got ${topk}`,
      sglangMessage: "trtllm_mha backend only supports topk = 1 for speculative decoding.",
      fields: ["speculative_eagle_topk", "attention_backend"],
      fix: { speculative_eagle_topk: 1 },
      alternatives: [{ attention_backend: "triton" }]
    })
  }
})

/** R13: topk 1 forces draft tokens = steps + 1. */
export const draftTokensForTopkOne = Rule.make({
  id: "R13",
  title: "topk 1 forces draft tokens = steps + 1",
  versions: V0_5_11,
  order: { step: 17, sub: 39 },
  kind: "adjust",
  check: ({ args }) => {
    const steps = args.speculative_num_steps
    if (!isEagleFamily(args.speculative_algorithm) || args.speculative_eagle_topk !== 1 || steps === null) {
      return undefined
    }
    if (args.speculative_num_draft_tokens === steps + 1) return undefined
    return Rule.adjust(
      { speculative_num_draft_tokens: steps + 1 },
      `with topk 1 SGLang verifies steps + 1 = ${steps + 1} draft tokens`,
      "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
    )
  }
})

/** R14: topk > 1 with paged attention only on flashinfer / fa3. */
export const topkWithPages = Rule.make({
  id: "R14.page-size",
  title: "topk > 1 with page size > 1 only on flashinfer or fa3",
  versions: V0_5_11,
  order: { step: 17, sub: 40 },
  kind: "fatal",
  check: ({ args }) => {
    const topk = args.speculative_eagle_topk
    const page = args.page_size ?? 1
    if (!isEagleFamily(args.speculative_algorithm) || topk === null || topk <= 1 || page <= 1) return undefined
    if (args.attention_backend === "flashinfer" || args.attention_backend === "fa3") return undefined
    return Rule.violation({
      errorType: "ValueError",
      message: `topk ${topk} with page size ${page} gives wrong results on the ${args.attention_backend} backend`,
      sglangMessage:
        "speculative_eagle_topk > 1 with page_size > 1 is unstable and produces incorrect results for paged attention backends. This combination is only supported for the 'flashinfer' backend.",
      fields: ["speculative_eagle_topk", "page_size", "attention_backend"],
      fix: { attention_backend: "flashinfer" },
      alternatives: [{ speculative_eagle_topk: 1 }]
    })
  }
})

/** R17: adaptive speculation only where it is supported. */
export const adaptiveUnsupported = Rule.make({
  id: "R17",
  title: "speculative_adaptive falls back to static params",
  versions: V0_5_11,
  order: { step: 17, sub: 41 },
  kind: "adjust",
  check: ({ args }) => {
    if (!args.speculative_adaptive) return undefined
    const algo = args.speculative_algorithm
    const reason =
      algo !== "EAGLE" && algo !== "EAGLE3"
        ? "the algorithm is not EAGLE/EAGLE3"
        : args.speculative_eagle_topk !== 1
          ? "topk is not 1"
          : args.enable_dp_attention
            ? "dp attention is on"
            : !args.disable_overlap_schedule
              ? "the overlap scheduler (spec v2) is on"
              : args.enable_multi_layer_eagle
                ? "multi-layer EAGLE is on"
                : args.enable_two_batch_overlap
                  ? "two-batch overlap is on"
                  : undefined
    return reason === undefined
      ? undefined
      : Rule.adjust(
          { speculative_adaptive: false },
          `--speculative-adaptive is ignored: ${reason}`,
          "Falling back to static speculative params."
        )
  }
})

/** R18: speculative decoding is not supported with the flex attention backend. */
export const flexAttention = Rule.make({
  id: "R18.flex-attention",
  title: "no speculative decoding with flex attention",
  versions: V0_5_11,
  order: { step: 17, sub: 60 },
  kind: "fatal",
  check: ({ args }) =>
    args.speculative_algorithm !== null && args.attention_backend === "flex_attention"
      ? Rule.violation({
          errorType: "AssertionError",
          message: "the flex_attention backend cannot run speculative decoding",
          sglangMessage: "Speculative decoding is currently not supported with Flex Attention backend",
          fields: ["attention_backend", "speculative_algorithm"],
          fix: { attention_backend: "triton" }
        })
      : undefined
})

/** R18: a PD decode server with radix cache cannot speculate. */
export const pdDecodeRadix = Rule.make({
  id: "R18.pd-decode-radix",
  title: "PD decode radix cache incompatible with speculative decoding",
  versions: V0_5_11,
  order: { step: 17, sub: 61 },
  kind: "fatal",
  check: ({ args }) =>
    args.speculative_algorithm !== null &&
    args.disaggregation_mode === "decode" &&
    args.disaggregation_decode_enable_radix_cache
      ? Rule.violation({
          errorType: "ValueError",
          message: "--disaggregation-decode-enable-radix-cache cannot be combined with speculative decoding",
          sglangMessage: `--disaggregation-decode-enable-radix-cache is incompatible with speculative decoding (--speculative-algorithm ${args.speculative_algorithm})`,
          fields: ["disaggregation_decode_enable_radix_cache", "speculative_algorithm"],
          fix: { disaggregation_decode_enable_radix_cache: false }
        })
      : undefined
})

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  draftRevision,
  draftMoeRunnerTrtllm,
  draftMoeRunnerDefault,
  nextnIsEagle,
  skipDpMlpSync,
  standaloneDpAttention,
  maxRunningRequests,
  specVersion,
  eagleMixedChunk,
  mtpDraftPath,
  speculativeTriple,
  autoTriple,
  stepsWithoutTopk,
  trtllmTopk,
  draftTokensForTopkOne,
  topkWithPages,
  adaptiveUnsupported,
  flexAttention,
  pdDecodeRadix
]
