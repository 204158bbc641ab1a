/**
 * NGRAM speculative decoding rules (rules.md R16 and its R15 reset).
 *
 * @since 0.1.0
 */
import { resetMaxRunningRequests } from "../internal/rules/maxRunningRequests.js"
import { rangeOf } from "../internal/rules/ranges.js"
import * as Rule from "../Rule.js"
import * as VersionRange from "../VersionRange.js"

const isNgram = ({ args }: Rule.RuleInput) => args.speculative_algorithm === "NGRAM"

export const ngramDevice = Rule.make({
  id: "R16.device",
  title: "NGRAM only on CUDA",
  versions: rangeOf("R16.device"),
  order: { step: 17, sub: 50 },
  kind: "fatal",
  check: (input) =>
    isNgram(input) && !(input.args.device ?? "cuda").startsWith("cuda")
      ? Rule.violation({
          errorType: "ValueError",
          message: "NGRAM speculative decoding runs only on CUDA devices",
          engineMessage: "Ngram speculative decoding only supports CUDA device.",
          fields: ["device", "speculative_algorithm"],
          fix: { speculative_algorithm: null }
        })
      : undefined
})

export const ngramMaxRunning = resetMaxRunningRequests("R15.ngram", 51, isNgram)

export const ngramTopk = Rule.make({
  id: "R16.topk",
  title: "NGRAM topk = max BFS breadth",
  versions: rangeOf("R16.topk"),
  order: { step: 17, sub: 52 },
  kind: "adjust",
  check: (input) =>
    isNgram(input) && input.args.speculative_eagle_topk !== input.args.speculative_ngram_max_bfs_breadth
      ? Rule.adjust(
          { speculative_eagle_topk: input.args.speculative_ngram_max_bfs_breadth },
          "NGRAM uses --speculative-ngram-max-bfs-breadth as its topk",
          undefined
        )
      : undefined
})

export const ngramDraftTokens = Rule.make({
  id: "R16.draft-tokens",
  title: "NGRAM draft tokens default 12",
  versions: rangeOf("R16.draft-tokens"),
  order: { step: 17, sub: 53 },
  kind: "adjust",
  check: (input) =>
    isNgram(input) && input.args.speculative_num_draft_tokens === null
      ? Rule.adjust(
          { speculative_num_draft_tokens: 12 },
          "NGRAM drafts 12 tokens by default",
          "speculative_num_draft_tokens is set to 12 by default for ngram speculative decoding. You can override this by explicitly setting --speculative-num-draft-tokens."
        )
      : undefined
})

export const ngramCorpus = Rule.make({
  id: "R16.corpus",
  title: "NGRAM external corpus budgets",
  versions: rangeOf("R16.corpus"),
  order: { step: 17, sub: 54 },
  kind: "fatal",
  check: (input) => {
    const { args } = input
    if (!isNgram(input) || args.speculative_ngram_external_corpus_path === null) return undefined
    const budget = args.speculative_ngram_external_sam_budget
    const draft = args.speculative_num_draft_tokens ?? 12
    if (budget <= 0) {
      return Rule.violation({
        errorType: "ValueError",
        message: "an external NGRAM corpus needs a positive --speculative-ngram-external-sam-budget",
        engineMessage:
          "--speculative-ngram-external-sam-budget must be positive when --speculative-ngram-external-corpus-path is set.",
        fields: ["speculative_ngram_external_sam_budget"],
        fix: { speculative_ngram_external_sam_budget: Math.max(1, draft - 1) }
      })
    }
    if (args.speculative_ngram_external_corpus_max_tokens <= 0) {
      return Rule.violation({
        errorType: "ValueError",
        message: "an external NGRAM corpus needs a positive --speculative-ngram-external-corpus-max-tokens",
        engineMessage:
          "--speculative-ngram-external-corpus-max-tokens must be positive when --speculative-ngram-external-corpus-path is set.",
        fields: ["speculative_ngram_external_corpus_max_tokens"],
        fix: { speculative_ngram_external_corpus_max_tokens: 10000000 }
      })
    }
    if (budget > draft - 1) {
      return Rule.violation({
        errorType: "ValueError",
        message: `the SAM budget ${budget} exceeds draft tokens - 1 = ${draft - 1}`,
        engineMessage: `speculative_ngram_external_sam_budget must be less than or equal to speculative_num_draft_tokens - 1 (${draft - 1}).`,
        fields: ["speculative_ngram_external_sam_budget", "speculative_num_draft_tokens"],
        fix: { speculative_ngram_external_sam_budget: draft - 1 }
      })
    }
    return undefined
  }
})

export const ngramOverlap = Rule.make({
  id: "R16.overlap",
  title: "NGRAM disables overlap scheduler and mixed chunked prefill",
  versions: rangeOf("R16.overlap"),
  order: { step: 17, sub: 55 },
  kind: "adjust",
  check: (input) =>
    isNgram(input)
      ? Rule.adjust(
          { disable_overlap_schedule: true, enable_mixed_chunk: false },
          "NGRAM runs without overlap scheduling and mixed chunked prefill",
          "The overlap scheduler and mixed chunked prefill are disabled because of using ngram speculative decoding."
        )
      : undefined
})

export const ngramPages = Rule.make({
  id: "R16.page-size",
  title: "NGRAM topk > 1 with page size > 1 only on flashinfer",
  versions: rangeOf("R16.page-size"),
  order: { step: 17, sub: 56 },
  kind: "fatal",
  check: (input) => {
    const { args } = input
    const topk = args.speculative_eagle_topk ?? 1
    const page = args.page_size ?? 1
    if (!isNgram(input) || topk <= 1 || page <= 1 || args.attention_backend === "flashinfer") return undefined
    // no backend given: 0.5.3–0.5.4 check before choosing one (None is not flashinfer: refused); from
    // 0.5.5 SGLang has chosen its default by now, which mlops models only from 0.5.11 (R29), so an
    // unchosen one is not refused on a guess (it is flashinfer on most CUDA GPUs, which passes)
    if (args.attention_backend === null && VersionRange.atLeast(input.version, "0.5.5")) return undefined
    return Rule.violation({
      errorType: "ValueError",
      message: `NGRAM with topk ${topk} and page size ${page} needs the flashinfer attention backend`,
      engineMessage: `speculative_eagle_topk(${topk}) > 1 with page_size(${page}) > 1 is unstable and produces incorrect results for paged attention backends. This combination is only supported for the 'flashinfer' backend.`,
      fields: ["speculative_ngram_max_bfs_breadth", "page_size", "attention_backend"],
      fix: { attention_backend: "flashinfer" },
      alternatives: [{ page_size: 1 }]
    })
  }
})

export const ngramDpAttention = Rule.make({
  id: "R16.dp-attention",
  title: "NGRAM without dp attention",
  versions: rangeOf("R16.dp-attention"),
  order: { step: 17, sub: 57 },
  kind: "fatal",
  check: (input) =>
    isNgram(input) && input.args.enable_dp_attention
      ? Rule.violation({
          errorType: "ValueError",
          message: "NGRAM speculative decoding cannot run with --enable-dp-attention",
          engineMessage: "Currently ngram speculative decoding does not support dp attention.",
          fields: ["enable_dp_attention"],
          fix: { enable_dp_attention: false }
        })
      : undefined
})

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  ngramDevice,
  ngramMaxRunning,
  ngramTopk,
  ngramDraftTokens,
  ngramCorpus,
  ngramOverlap,
  ngramPages,
  ngramDpAttention
]
