/**
 * The (steps, topk, draft tokens) triple of EAGLE-family speculative decoding (rules.md
 * R12-R14): the all-or-nothing bare assertion, SGLang's automatic choice, topk 1 forcing
 * draft tokens = steps + 1, and the topk > 1 constraints.
 *
 * @since 0.1.0
 */
import { draftTokensAdjusted } from "../internal/lifecycle/messages.js"
import { attentionBackends, isEagleFamily } from "../internal/rules/helpers.js"
import { rangeOf } from "../internal/rules/ranges.js"
import * as Rule from "../Rule.js"
import * as VersionRange from "../VersionRange.js"

/** Complete a partially given (steps, topk, draft tokens) triple the way SGLang would accept it. */
const completeTriple = (topk: number | null, draft: number | null) => {
  if (topk !== null && topk > 1) return { speculative_num_steps: 5, speculative_num_draft_tokens: draft ?? 8 }
  const steps = draft === null ? 3 : Math.max(1, draft - 1)
  return { speculative_num_steps: steps, speculative_eagle_topk: 1 }
}

/** The object the check reads: it moved into arg_groups/speculative_hook.py (`server_args`) in main-2026-05-19. */
const owner = (version: string) => (VersionRange.atLeast(version, "main-2026-05-19") ? "server_args" : "self")

/** R12: the bare assertion: without --speculative-num-steps, topk and draft tokens must be unset too. */
export const speculativeTriple = Rule.make({
  id: "R12",
  title: "speculative steps, topk and draft tokens: all or none",
  versions: rangeOf("R12"),
  order: { step: 17, sub: 35 },
  kind: "fatal",
  check: ({ args, version }) => {
    const { speculative_eagle_topk: topk, speculative_num_draft_tokens: draft } = args
    if (!isEagleFamily(args.speculative_algorithm) || args.speculative_num_steps !== null) return undefined
    if (topk === null && draft === null) return undefined
    // from 0.5.14 adaptive speculation picks the numbers itself and skips the assertion
    if (VersionRange.atLeast(version, "0.5.14") && args.speculative_adaptive) return undefined
    const given = [
      topk !== null ? "--speculative-eagle-topk" : "",
      draft !== null ? "--speculative-num-draft-tokens" : ""
    ]
      .filter((s) => s !== "")
      .join(" and ")
    return Rule.violation({
      errorType: "AssertionError",
      message: `${given} given without --speculative-num-steps: SGLang needs none of the three speculative numbers (it picks them) or at least steps and topk; it fails with a bare AssertionError (no message)`,
      engineMessage: "",
      sourceLine: `assert (${owner(version)}.speculative_eagle_topk is None and ${owner(version)}.speculative_num_draft_tokens is None)`,
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
  versions: rangeOf("R12.auto"),
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
  versions: rangeOf("R12.topk-missing"),
  order: { step: 17, sub: 37 },
  kind: "fatal",
  check: ({ args }) =>
    isEagleFamily(args.speculative_algorithm) &&
    args.speculative_num_steps !== null &&
    args.speculative_eagle_topk === null
      ? Rule.violation({
          errorType: "TypeError",
          message:
            "--speculative-num-steps needs --speculative-eagle-topk too (SGLang compares the missing topk with 1)",
          engineMessage: "'>' not supported between instances of 'NoneType' and 'int'",
          fields: ["speculative_num_steps", "speculative_eagle_topk"],
          fix: { speculative_eagle_topk: 1 }
        })
      : undefined
})

/** R12 in 0.4.6–0.4.8: the topk comparison is reached only with pages over one token (a backend's, or --page-size). */
export const stepsWithoutTopkPaged = Rule.make({
  id: "R12.topk-missing-paged",
  title: "--speculative-num-steps without --speculative-eagle-topk, on pages over one token",
  versions: rangeOf("R12.topk-missing-paged"),
  order: { step: 17, sub: 37 },
  kind: "fatal",
  check: ({ args }) =>
    isEagleFamily(args.speculative_algorithm) &&
    args.speculative_num_steps !== null &&
    args.speculative_eagle_topk === null &&
    args.page_size !== null &&
    args.page_size > 1
      ? Rule.violation({
          errorType: "TypeError",
          message: `--speculative-num-steps needs --speculative-eagle-topk too on pages of ${args.page_size} tokens (SGLang compares the missing topk with 1)`,
          engineMessage: "'>' not supported between instances of 'NoneType' and 'int'",
          fields: ["speculative_num_steps", "speculative_eagle_topk"],
          fix: { speculative_eagle_topk: 1 }
        })
      : undefined
})

/**
 * R12 in 0.4.5: choosing the three numbers automatically reads `decrypted_config_file`, which
 * that release's ServerArgs does not have: speculative decoding without them fails.
 */
export const autoTripleBroken = Rule.make({
  id: "R12.auto-broken",
  title: "SGLang 0.4.5 cannot choose the speculative numbers itself",
  versions: rangeOf("R12.auto-broken"),
  order: { step: 17, sub: 36 },
  kind: "fatal",
  check: ({ args }) =>
    isEagleFamily(args.speculative_algorithm) &&
    args.speculative_num_steps === null &&
    args.speculative_eagle_topk === null &&
    args.speculative_num_draft_tokens === null
      ? Rule.violation({
          errorType: "AttributeError",
          message:
            "SGLang 0.4.5 fails while choosing the speculative numbers itself (a bug of that release): give all three",
          engineMessage: "'ServerArgs' object has no attribute 'decrypted_config_file'",
          fields: ["speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"],
          fix: { speculative_num_steps: 3, speculative_eagle_topk: 1, speculative_num_draft_tokens: 4 }
        })
      : undefined
})

/** R14: trtllm_mha only with topk 1. */
export const trtllmTopk = Rule.make({
  id: "R14.trtllm-mha",
  title: "trtllm_mha attention only with topk 1",
  versions: rangeOf("R14.trtllm-mha"),
  order: { step: 17, sub: 38 },
  kind: "fatal",
  check: ({ args }) => {
    const topk = args.speculative_eagle_topk
    if (!isEagleFamily(args.speculative_algorithm) || topk === null || topk <= 1) return undefined
    if (!attentionBackends(args).includes("trtllm_mha")) return undefined
    return Rule.violation({
      errorType: "ValueError",
      message: `the trtllm_mha attention backend supports only --speculative-eagle-topk 1, got ${topk}`,
      engineMessage: "trtllm_mha backend only supports topk = 1 for speculative decoding.",
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
  versions: rangeOf("R13"),
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
      draftTokensAdjusted()
    )
  }
})

/** R14: topk > 1 with paged attention only on flashinfer / fa3. */
export const topkWithPages = Rule.make({
  id: "R14.page-size",
  title: "topk > 1 with page size > 1 only on flashinfer or fa3",
  versions: rangeOf("R14.page-size"),
  order: { step: 17, sub: 40 },
  kind: "fatal",
  check: ({ args }) => {
    const topk = args.speculative_eagle_topk
    const page = args.page_size ?? 1
    if (!isEagleFamily(args.speculative_algorithm) || topk === null || topk <= 1 || page <= 1)
      return undefined
    if (args.attention_backend === "flashinfer" || args.attention_backend === "fa3") return undefined
    return Rule.violation({
      errorType: "ValueError",
      message: `topk ${topk} with page size ${page} gives wrong results on the ${args.attention_backend} backend`,
      engineMessage:
        "speculative_eagle_topk > 1 with page_size > 1 is unstable and produces incorrect results for paged attention backends. This combination is only supported for the 'flashinfer' backend.",
      fields: ["speculative_eagle_topk", "page_size", "attention_backend"],
      fix: { attention_backend: "flashinfer" },
      alternatives: [{ speculative_eagle_topk: 1 }]
    })
  }
})

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  speculativeTriple,
  autoTripleBroken,
  autoTriple,
  stepsWithoutTopkPaged,
  stepsWithoutTopk,
  trtllmTopk,
  draftTokensForTopkOne,
  topkWithPages
]
