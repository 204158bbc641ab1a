/**
 * Speculative decoding rules of `_handle_speculative_decoding` (rules.md R1, R4, R9, R10, R15,
 * R17, R18 parts): NEXTN -> EAGLE, the max-running-requests reset, the spec v1/v2 choice and
 * the algorithm-wide guards. Draft-model settings are in `SpeculativeDraft.ts`, the (steps,
 * topk, draft tokens) triple in `SpeculativeTriple.ts`, DFLASH and NGRAM in `Dflash.ts` / `Ngram.ts`.
 *
 * @since 0.1.0
 */
import { specV2Enabled } from "../internal/lifecycle/messages.js"
import { envBool, isEagleFamily } from "../internal/rules/helpers.js"
import { resetMaxRunningRequests } from "../internal/rules/maxRunningRequests.js"
import { rangeOf } from "../internal/rules/ranges.js"
import * as Rule from "../Rule.js"
import type { ServerArgs } from "../ServerArgs.js"
import * as VersionRange from "../VersionRange.js"

/** The names `SpeculativeAlgorithm.from_string` knows from main-2026-05-19 on (after NEXTN's alias), by release. */
const knownAlgorithms = (version: string): ReadonlyArray<string> => [
  "DFLASH",
  "EAGLE",
  "EAGLE3",
  "FROZEN_KV_MTP",
  "STANDALONE",
  "NGRAM",
  "NONE",
  "NEXTN",
  ...(VersionRange.atLeast(version, "main-2026-07-20") ? ["DSPARK"] : [])
]

/** A name the flag's type knows (0.5.11's choices): what the other rules read. */
const isTypedAlgorithm = (name: string): name is NonNullable<ServerArgs["speculative_algorithm"]> =>
  ["DFLASH", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"].includes(name)

/**
 * R1.upper: from main-2026-05-19 argparse lists no choices for --speculative-algorithm and the
 * hook takes the name in capitals (`nextn` is NEXTN).
 */
export const algorithmInCapitals = Rule.make({
  id: "R1.upper",
  title: "the speculative algorithm's name in capitals",
  versions: rangeOf("R1.upper"),
  order: { step: 17, sub: 3.5 },
  kind: "adjust",
  check: ({ args }) => {
    const given = args.speculative_algorithm
    if (given === null) return undefined
    const upper = given.toUpperCase()
    if (upper === given || !isTypedAlgorithm(upper)) return undefined
    return Rule.adjust(
      { speculative_algorithm: upper },
      `SGLang reads --speculative-algorithm ${given} as ${upper}`,
      undefined
    )
  }
})

/** R1.unknown: a name the algorithm registry does not know is a ValueError (no argparse choice refuses it first). */
export const unknownAlgorithm = Rule.make({
  id: "R1.unknown",
  title: "a speculative algorithm SGLang does not know",
  versions: rangeOf("R1.unknown"),
  order: { step: 17, sub: 4.5 },
  kind: "fatal",
  check: ({ args, version }) => {
    const given = args.speculative_algorithm
    if (given === null || knownAlgorithms(version).includes(given.toUpperCase())) return undefined
    const known = knownAlgorithms(version).filter((name) => name !== "NONE")
    return Rule.violation({
      errorType: "ValueError",
      message: `--speculative-algorithm ${given} is no algorithm SGLang ${version} knows (${known.join(", ")}); MTP heads are served with NEXTN`,
      engineMessage: `Unknown speculative algorithm name: ${given.toUpperCase()}`,
      fields: ["speculative_algorithm"],
      fix: { speculative_algorithm: "NEXTN" },
      alternatives: [{ speculative_algorithm: "EAGLE" }]
    })
  }
})

/** R1: NEXTN is EAGLE. */
export const nextnIsEagle = Rule.make({
  id: "R1",
  title: "NEXTN is an alias of EAGLE",
  versions: rangeOf("R1"),
  order: { step: 17, sub: 4 },
  kind: "adjust",
  check: ({ args }) =>
    args.speculative_algorithm === "NEXTN"
      ? Rule.adjust(
          { speculative_algorithm: "EAGLE" },
          "NEXTN is run as EAGLE with the model's MTP layers",
          undefined
        )
      : undefined
})

/** R4: --speculative-skip-dp-mlp-sync is EAGLE only. */
export const skipDpMlpSync = Rule.make({
  id: "R4",
  title: "--speculative-skip-dp-mlp-sync only with EAGLE",
  versions: rangeOf("R4"),
  order: { step: 17, sub: 5 },
  kind: "fatal",
  check: ({ args }) =>
    args.speculative_skip_dp_mlp_sync && args.speculative_algorithm !== "EAGLE"
      ? Rule.violation({
          errorType: "AssertionError",
          message: "--speculative-skip-dp-mlp-sync works only with EAGLE (or NEXTN)",
          engineMessage: `--speculative-skip-dp-mlp-sync is only supported with speculative_algorithm == EAGLE, got ${args.speculative_algorithm}.`,
          fields: ["speculative_skip_dp_mlp_sync", "speculative_algorithm"],
          fix: { speculative_skip_dp_mlp_sync: false }
        })
      : undefined
})

/** R9: STANDALONE without dp attention. */
export const standaloneDpAttention = Rule.make({
  id: "R9",
  title: "STANDALONE speculative decoding without dp attention",
  versions: rangeOf("R9"),
  order: { step: 17, sub: 30 },
  kind: "fatal",
  check: ({ args }) =>
    args.speculative_algorithm === "STANDALONE" && args.enable_dp_attention
      ? Rule.violation({
          errorType: "ValueError",
          message: "STANDALONE speculative decoding cannot run with --enable-dp-attention",
          engineMessage: "Currently standalone speculative decoding does not support dp attention.",
          fields: ["speculative_algorithm", "enable_dp_attention"],
          fix: { enable_dp_attention: false }
        })
      : undefined
})

/** R15 (EAGLE family): max_running_requests -> 48. */
export const maxRunningRequests = resetMaxRunningRequests("R15", 31, ({ args }) =>
  isEagleFamily(args.speculative_algorithm)
)

/** R10: spec v2 (overlap) needs topk 1 and SGLANG_ENABLE_SPEC_V2; logs which worker is used. */
export const specVersion = Rule.make({
  id: "R10",
  title: "spec v1 or v2 for the EAGLE family",
  versions: rangeOf("R10"),
  order: { step: 17, sub: 32 },
  kind: "adjust",
  check: (input) => {
    const { args } = input
    if (!isEagleFamily(args.speculative_algorithm)) return undefined
    const topk = args.speculative_eagle_topk
    let reason: string | undefined
    if (!args.disable_overlap_schedule && topk !== null && topk > 1)
      reason = "spec v2 currently only supports topk = 1"
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
      : Rule.warning("speculative decoding runs on the spec v2 (overlap) worker", specV2Enabled(), [
          "speculative_algorithm"
        ])
  }
})

/** R10: no mixed chunked prefill with EAGLE. */
export const eagleMixedChunk = Rule.make({
  id: "R10.mixed-chunk",
  title: "mixed chunked prefill disabled for the EAGLE family",
  versions: rangeOf("R10.mixed-chunk"),
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

/** R17: adaptive speculation only where it is supported. */
export const adaptiveUnsupported = Rule.make({
  id: "R17",
  title: "speculative_adaptive falls back to static params",
  versions: rangeOf("R17"),
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
  versions: rangeOf("R18.flex-attention"),
  order: { step: 17, sub: 60 },
  kind: "fatal",
  check: ({ args }) =>
    args.speculative_algorithm !== null && args.attention_backend === "flex_attention"
      ? Rule.violation({
          errorType: "AssertionError",
          message: "the flex_attention backend cannot run speculative decoding",
          engineMessage: "Speculative decoding is currently not supported with Flex Attention backend",
          fields: ["attention_backend", "speculative_algorithm"],
          fix: { attention_backend: "triton" }
        })
      : undefined
})

/** R18: a PD decode server with radix cache cannot speculate. */
export const pdDecodeRadix = Rule.make({
  id: "R18.pd-decode-radix",
  title: "PD decode radix cache incompatible with speculative decoding",
  versions: rangeOf("R18.pd-decode-radix"),
  order: { step: 17, sub: 61 },
  kind: "fatal",
  check: ({ args }) =>
    args.speculative_algorithm !== null &&
    args.disaggregation_mode === "decode" &&
    args.disaggregation_decode_enable_radix_cache
      ? Rule.violation({
          errorType: "ValueError",
          message: "--disaggregation-decode-enable-radix-cache cannot be combined with speculative decoding",
          engineMessage: `--disaggregation-decode-enable-radix-cache is incompatible with speculative decoding (--speculative-algorithm ${args.speculative_algorithm})`,
          fields: ["disaggregation_decode_enable_radix_cache", "speculative_algorithm"],
          fix: { disaggregation_decode_enable_radix_cache: false }
        })
      : undefined
})

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  algorithmInCapitals,
  unknownAlgorithm,
  nextnIsEagle,
  skipDpMlpSync,
  standaloneDpAttention,
  maxRunningRequests,
  specVersion,
  eagleMixedChunk,
  adaptiveUnsupported,
  flexAttention,
  pdDecodeRadix
]
