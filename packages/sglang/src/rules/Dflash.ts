/**
 * DFLASH speculative decoding rules (rules.md R5-R8 and its R15 reset).
 *
 * @since 0.1.0
 */
import { resetMaxRunningRequests } from "../internal/rules/maxRunningRequests.js"
import { rangeOf } from "../internal/rules/ranges.js"
import * as Rule from "../Rule.js"

type Input = Rule.RuleInput
const isDflash = ({ args }: Input) => args.speculative_algorithm === "DFLASH"

const dflashFatal = (
  id: string,
  sub: number,
  title: string,
  when: (input: Input) => boolean,
  build: (input: Input) => Rule.Violation
): Rule.Rule =>
  Rule.make({
    id,
    title,
    versions: rangeOf(id),
    order: { step: 17, sub },
    kind: "fatal",
    check: (input) => (isDflash(input) && when(input) ? build(input) : undefined)
  })

export const dflashDpAttention = dflashFatal(
  "R5.dp-attention",
  10,
  "DFLASH without dp attention",
  ({ args }) => args.enable_dp_attention,
  () =>
    Rule.violation({
      errorType: "ValueError",
      message: "DFLASH cannot run with --enable-dp-attention",
      engineMessage: "Currently DFLASH speculative decoding does not support dp attention.",
      fields: ["enable_dp_attention"],
      fix: { enable_dp_attention: false }
    })
)

export const dflashPipeline = dflashFatal(
  "R5.pp",
  11,
  "DFLASH only with pp size 1",
  ({ args }) => args.pp_size !== 1,
  () =>
    Rule.violation({
      errorType: "ValueError",
      message: "DFLASH needs --pp-size 1",
      engineMessage: "Currently DFLASH speculative decoding only supports pp_size == 1.",
      fields: ["pp_size"],
      fix: { pp_size: 1 }
    })
)

export const dflashDraftPath = dflashFatal(
  "R5.draft-path",
  12,
  "DFLASH needs a draft model",
  ({ args }) => args.speculative_draft_model_path === null,
  () =>
    Rule.violation({
      errorType: "ValueError",
      message: "DFLASH needs a draft model: pass --speculative-draft-model-path <dflash draft checkpoint>",
      engineMessage: "DFLASH speculative decoding requires setting --speculative-draft-model-path.",
      fields: ["speculative_draft_model_path"],
      fix: {},
      alternatives: [{ speculative_algorithm: null }]
    })
)

const forceOne = (field: "speculative_num_steps" | "speculative_eagle_topk", sub: number): Rule.Rule => {
  const id = field === "speculative_num_steps" ? "R6.steps" : "R6.topk"
  return Rule.make({
    id,
    title: `DFLASH forces ${field} = 1`,
    versions: rangeOf(id),
    order: { step: 17, sub },
    kind: "adjust",
    check: (input) => {
      const value = input.args[field]
      if (!isDflash(input) || value === 1) return undefined
      return Rule.adjust(
        { [field]: 1 },
        `DFLASH runs with ${field} 1`,
        value === null ? undefined : `DFLASH only supports ${field} == 1; overriding ${field}=${value} to 1.`
      )
    }
  })
}

export const dflashSteps = forceOne("speculative_num_steps", 13)
export const dflashTopk = forceOne("speculative_eagle_topk", 14)

export const dflashBlockPositive = dflashFatal(
  "R7.block-size",
  15,
  "DFLASH block size positive",
  ({ args }) => args.speculative_dflash_block_size !== null && args.speculative_dflash_block_size <= 0,
  ({ args }) =>
    Rule.violation({
      errorType: "ValueError",
      message: "--speculative-dflash-block-size must be positive",
      engineMessage: `DFLASH requires --speculative-dflash-block-size to be positive, got ${args.speculative_dflash_block_size}.`,
      fields: ["speculative_dflash_block_size"],
      fix: { speculative_dflash_block_size: null }
    })
)

export const dflashBlockMatchesDraft = dflashFatal(
  "R7.block-vs-draft",
  16,
  "DFLASH block size equals draft tokens",
  ({ args }) =>
    args.speculative_dflash_block_size !== null &&
    args.speculative_num_draft_tokens !== null &&
    args.speculative_dflash_block_size !== args.speculative_num_draft_tokens,
  ({ args }) =>
    Rule.violation({
      errorType: "ValueError",
      message: "for DFLASH --speculative-num-draft-tokens and --speculative-dflash-block-size must be equal",
      engineMessage: `Both --speculative-num-draft-tokens and --speculative-dflash-block-size are set but they differ. For DFLASH they must match. speculative_num_draft_tokens=${args.speculative_num_draft_tokens}, speculative_dflash_block_size=${args.speculative_dflash_block_size}.`,
      fields: ["speculative_num_draft_tokens", "speculative_dflash_block_size"],
      fix: { speculative_num_draft_tokens: args.speculative_dflash_block_size }
    })
)

export const dflashDraftFromBlock = Rule.make({
  id: "R7.draft-tokens",
  title: "DFLASH draft tokens from block size (default 16)",
  versions: rangeOf("R7.draft-tokens"),
  order: { step: 17, sub: 17 },
  kind: "adjust",
  check: (input) => {
    const { args } = input
    if (!isDflash(input)) return undefined
    if (args.speculative_dflash_block_size !== null && args.speculative_num_draft_tokens === null) {
      return Rule.adjust(
        { speculative_num_draft_tokens: args.speculative_dflash_block_size },
        "DFLASH drafts one block",
        undefined
      )
    }
    if (args.speculative_num_draft_tokens !== null) return undefined
    // SGLang reads the block size from the draft config first; offline we assume its fallback.
    return Rule.adjust(
      { speculative_num_draft_tokens: 16 },
      "DFLASH draft tokens come from the draft model's block size; assumed 16 (SGLang's fallback) since the draft config is not read here",
      undefined
    )
  }
})

export const dflashWindowPositive = dflashFatal(
  "R7.window",
  18,
  "DFLASH draft window positive",
  ({ args }) =>
    args.speculative_dflash_draft_window_size !== null && args.speculative_dflash_draft_window_size <= 0,
  ({ args }) =>
    Rule.violation({
      errorType: "ValueError",
      message: "--speculative-dflash-draft-window-size must be positive",
      engineMessage: `DFLASH requires --speculative-dflash-draft-window-size to be positive, got ${args.speculative_dflash_draft_window_size}.`,
      fields: ["speculative_dflash_draft_window_size"],
      fix: { speculative_dflash_draft_window_size: null }
    })
)

export const dflashWindowCoversBlock = dflashFatal(
  "R7.window-vs-block",
  19,
  "DFLASH draft window >= draft tokens",
  ({ args }) =>
    args.speculative_dflash_draft_window_size !== null &&
    args.speculative_num_draft_tokens !== null &&
    args.speculative_dflash_draft_window_size < args.speculative_num_draft_tokens,
  ({ args }) =>
    Rule.violation({
      errorType: "ValueError",
      message: "--speculative-dflash-draft-window-size must be at least the block size",
      engineMessage: `DFLASH --speculative-dflash-draft-window-size must be >= --speculative-num-draft-tokens (block_size). window_size=${args.speculative_dflash_draft_window_size}, block_size=${args.speculative_num_draft_tokens}.`,
      fields: ["speculative_dflash_draft_window_size", "speculative_num_draft_tokens"],
      fix: { speculative_dflash_draft_window_size: args.speculative_num_draft_tokens }
    })
)

export const dflashMaxRunning = resetMaxRunningRequests("R15.dflash", 20, isDflash)

export const dflashOverlap = Rule.make({
  id: "R8.overlap",
  title: "DFLASH disables the overlap scheduler",
  versions: rangeOf("R8.overlap"),
  order: { step: 17, sub: 21 },
  kind: "adjust",
  check: (input) =>
    isDflash(input)
      ? Rule.adjust(
          { disable_overlap_schedule: true },
          "DFLASH has no spec v2 worker, so overlap scheduling is off",
          "Overlap scheduler is disabled when using DFLASH speculative decoding (spec v2 is not supported yet)."
        )
      : undefined
})

export const dflashMixedChunk = Rule.make({
  id: "R8.mixed-chunk",
  title: "DFLASH disables mixed chunked prefill",
  versions: rangeOf("R8.mixed-chunk"),
  order: { step: 17, sub: 22 },
  kind: "adjust",
  check: (input) =>
    isDflash(input) && input.args.enable_mixed_chunk
      ? Rule.adjust(
          { enable_mixed_chunk: false },
          "mixed chunked prefill is not used with DFLASH",
          "Mixed chunked prefill is disabled because of using dflash speculative decoding."
        )
      : undefined
})

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  dflashDpAttention,
  dflashPipeline,
  dflashDraftPath,
  dflashSteps,
  dflashTopk,
  dflashBlockPositive,
  dflashBlockMatchesDraft,
  dflashDraftFromBlock,
  dflashWindowPositive,
  dflashWindowCoversBlock,
  dflashMaxRunning,
  dflashOverlap,
  dflashMixedChunk
]
