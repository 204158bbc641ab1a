/**
 * Parallelism rules (rules.md R36-R40): data-parallel attention, context parallelism, expert
 * parallelism, pipeline parallelism and the node-count checks of `check_server_args`.
 *
 * @since 0.1.0
 */
import { largestDivisorAtMost, releaseField, rule } from "../internal/rules/helpers.js"
import * as Rule from "../Rule.js"
import * as VersionRange from "../VersionRange.js"

/** R37: dp size 1 turns the dp-attention switches off. */
export const dpSizeOne = rule(
  "R37.dp-size-1",
  "dp attention off when dp size is 1",
  14,
  10,
  "adjust",
  ({ args }) =>
    args.dp_size === 1 && (args.enable_dp_attention || args.enable_dp_lm_head)
      ? Rule.adjust(
          { enable_dp_attention: false, enable_dp_lm_head: false },
          "dp attention needs --dp-size > 1; with dp size 1 it is ignored",
          undefined
        )
      : undefined
)

/** R37: dp attention needs tp divisible by dp (bare assert). */
export const dpDividesTp = rule(
  "R37.tp-dp",
  "tp size divisible by dp size under dp attention",
  14,
  11,
  "fatal",
  ({ args }) =>
    args.enable_dp_attention && args.tp_size % args.dp_size !== 0
      ? Rule.violation({
          errorType: "AssertionError",
          message: `--tp ${args.tp_size} is not a multiple of --dp ${args.dp_size} (dp attention splits the tp group)`,
          engineMessage: "",
          sourceLine: "assert self.tp_size % self.dp_size == 0",
          fields: ["tp_size", "dp_size"],
          fix: { dp_size: largestDivisorAtMost(args.tp_size, args.dp_size) }
        })
      : undefined
)

/** R37: dp attention divides the chunked prefill size by dp size. */
export const dpChunkedPrefill = rule(
  "R37.chunked-prefill",
  "dp attention divides chunked prefill size",
  14,
  12,
  "adjust",
  ({ args }) => {
    // SGLang floor-divides whatever is there, -1 (chunking off) included: -1 // dp is -1.
    if (!args.enable_dp_attention || args.chunked_prefill_size === null) return undefined
    const chunked = Math.floor(args.chunked_prefill_size / args.dp_size)
    return Rule.adjust(
      { chunked_prefill_size: chunked, schedule_conservativeness: args.schedule_conservativeness * 0.3 },
      `each dp-attention rank prefills ${chunked} tokens per chunk`,
      `DP attention is enabled. The chunked prefill size is adjusted to ${chunked} to avoid MoE kernel issues. `
    )
  }
)

/** R37: dp lm head needs dp attention. */
export const dpLmHead = rule("R37.lm-head", "dp lm head needs dp attention", 14, 13, "fatal", ({ args }) =>
  args.enable_dp_lm_head && !args.enable_dp_attention
    ? Rule.violation({
        errorType: "AssertionError",
        message: "--enable-dp-lm-head needs --enable-dp-attention",
        engineMessage: "Please enable dp attention when setting enable_dp_lm_head. ",
        fields: ["enable_dp_lm_head", "enable_dp_attention"],
        fix: { enable_dp_lm_head: false }
      })
    : undefined
)

/** R38: attention context parallelism divides tp. */
export const contextParallel = rule(
  "R38",
  "tp size divisible by attention context-parallel size",
  14,
  20,
  "fatal",
  ({ args }) => {
    const cp = args.attn_cp_size
    if (cp <= 1) return undefined
    if (args.tp_size % cp !== 0) {
      return Rule.violation({
        errorType: "AssertionError",
        message: `--tp ${args.tp_size} is not a multiple of --attn-cp-size ${cp}`,
        engineMessage: "tp_size must be divisible by attn_cp_size",
        fields: ["tp_size", "attn_cp_size"],
        fix: { attn_cp_size: largestDivisorAtMost(args.tp_size, cp) }
      })
    }
    if (args.tp_size % (args.dp_size * cp) !== 0) {
      return Rule.violation({
        errorType: "AssertionError",
        message: `--tp ${args.tp_size} is not a multiple of dp size x attn cp size (${args.dp_size * cp})`,
        engineMessage: "tp_size must be divisible by dp_size * attn_cp_size",
        fields: ["tp_size", "dp_size", "attn_cp_size"],
        fix: { dp_size: 1 }
      })
    }
    return undefined
  }
)

const a2aBackends = new Set(["deepep", "mooncake", "nixl", "ascend_fuseep", "flashinfer", "mori"])
/** ... and megamoe from main-2026-05-19. */
const a2aBackendsOf = (version: string): ReadonlySet<string> =>
  VersionRange.atLeast(version, "main-2026-05-19") ? new Set([...a2aBackends, "megamoe"]) : a2aBackends

/** R39: an all-to-all MoE backend sets ep size = tp size. */
export const a2aExpertParallel = rule(
  "R39.a2a",
  "MoE all-to-all sets ep size to tp size",
  15,
  1,
  "adjust",
  ({ args, version }) =>
    a2aBackendsOf(version).has(args.moe_a2a_backend) && args.ep_size !== args.tp_size
      ? Rule.adjust(
          { ep_size: args.tp_size },
          `--moe-a2a-backend ${args.moe_a2a_backend} runs experts over the whole tp group`,
          `${args.moe_a2a_backend === "deepep" && !VersionRange.atLeast(version, "0.5.10") ? "DeepEP MoE" : "MoE"} is enabled. The expert parallel size is adjusted to be the same as the tensor parallel size[${args.tp_size}].`
        )
      : undefined
)

/** R39: flashinfer cutlass / cutedsl MoE runners: ep in {1, tp}. */
export const flashinferMoeEp = rule(
  "R39.flashinfer-ep",
  "flashinfer MoE runners need ep 1 or tp",
  15,
  2,
  "fatal",
  ({ args }) =>
    (args.moe_runner_backend === "flashinfer_cutlass" || args.moe_runner_backend === "flashinfer_cutedsl") &&
    args.ep_size !== 1 &&
    args.ep_size !== args.tp_size
      ? Rule.violation({
          errorType: "AssertionError",
          message: `--moe-runner-backend ${args.moe_runner_backend} needs --ep-size 1 or ${args.tp_size} (= tp)`,
          engineMessage: "The expert parallel size must be 1 or the same as the tensor parallel size",
          fields: ["ep_size", "moe_runner_backend"],
          fix: { ep_size: args.tp_size },
          alternatives: [{ ep_size: 1 }]
        })
      : undefined
)

/**
 * R39: EPLB needs expert parallelism (bare assert), as each release words it: 0.4.10 the EP MoE
 * switches, 0.5.0rc2 an ep size over 1 or an all-to-all backend, from 0.5.1 an ep size over 1.
 */
export const eplbNeedsEp = rule("R39.eplb", "EPLB needs ep size > 1", 15, 3, "fatal", ({ args, version }) => {
  if (!args.enable_eplb) return undefined
  // a joiner that scales an elastic EP group out is let through from main-2026-07-20
  if (VersionRange.atLeast(version, "main-2026-07-20") && releaseField(args, "ep_join_mode") === "scale")
    return undefined
  const expertParallel = VersionRange.atLeast(version, "0.5.1")
    ? args.ep_size > 1
    : VersionRange.atLeast(version, "0.5.0rc2")
      ? args.ep_size > 1 || releaseField(args, "moe_a2a_backend") != null
      : releaseField(args, "enable_ep_moe") === true || releaseField(args, "enable_deepep_moe") === true
  if (expertParallel) return undefined
  return Rule.violation({
    errorType: "AssertionError",
    message: VersionRange.atLeast(version, "0.5.0rc2")
      ? "--enable-eplb balances experts across ranks, so it needs --ep-size > 1"
      : "--enable-eplb balances experts across ranks, so it needs --enable-ep-moe (or --enable-deepep-moe)",
    engineMessage: "",
    fields: ["enable_eplb", "ep_size"],
    // 0.4.10's assert reads the EP MoE switches, which no later release has: there the way out is without EPLB
    fix: VersionRange.atLeast(version, "0.5.0rc2")
      ? { ep_size: args.tp_size > 1 ? args.tp_size : 2 }
      : { enable_eplb: false },
    alternatives: [{ enable_eplb: false }]
  })
})

/** R40: pipeline parallelism turns the overlap scheduler off. */
export const pipelineOverlap = rule(
  "R40",
  "pipeline parallelism disables overlap schedule",
  16,
  1,
  "adjust",
  ({ args }) =>
    args.pp_size > 1 && !args.disable_overlap_schedule
      ? Rule.adjust(
          { disable_overlap_schedule: true },
          "pipeline parallelism runs without the overlap scheduler",
          "Pipeline parallelism is incompatible with overlap schedule."
        )
      : undefined
)

/** R36: tp x pp must spread evenly over the nodes. */
export const nodesDivideTpPp = rule(
  "R36",
  "tp x pp divisible by number of nodes",
  19,
  1,
  "fatal",
  ({ args }) =>
    (args.tp_size * args.pp_size) % args.nnodes !== 0
      ? Rule.violation({
          errorType: "AssertionError",
          message: `tp x pp = ${args.tp_size * args.pp_size} GPUs cannot be split evenly over --nnodes ${args.nnodes}`,
          engineMessage: "tp_size must be divisible by number of nodes",
          fields: ["tp_size", "pp_size", "nnodes"],
          fix: { nnodes: largestDivisorAtMost(args.tp_size * args.pp_size, args.nnodes) }
        })
      : undefined
)

/** R36: multi-node data parallelism needs dp attention. */
export const multiNodeDp = rule(
  "R36.multi-node-dp",
  "multi-node data parallel needs dp attention",
  19,
  2,
  "fatal",
  ({ args }) =>
    args.dp_size > 1 && args.nnodes !== 1 && !args.enable_dp_attention
      ? Rule.violation({
          errorType: "AssertionError",
          message: "--dp > 1 across several nodes works only with --enable-dp-attention",
          engineMessage: "multi-node data parallel is not supported unless dp attention!",
          fields: ["dp_size", "nnodes", "enable_dp_attention"],
          fix: { enable_dp_attention: true }
        })
      : undefined
)

/** R36: GPU id offsets. */
export const gpuIds = rule("R36.gpu-ids", "base GPU id and GPU id step", 19, 3, "fatal", ({ args }) => {
  if (args.base_gpu_id < 0) {
    return Rule.violation({
      errorType: "AssertionError",
      message: "--base-gpu-id must be >= 0",
      engineMessage: "base_gpu_id must be non-negative",
      fields: ["base_gpu_id"],
      fix: { base_gpu_id: 0 }
    })
  }
  if (args.gpu_id_step < 1) {
    return Rule.violation({
      errorType: "AssertionError",
      message: "--gpu-id-step must be >= 1",
      engineMessage: "gpu_id_step must be positive",
      fields: ["gpu_id_step"],
      fix: { gpu_id_step: 1 }
    })
  }
  return undefined
})

/** R18: pipeline parallelism needs overlap off and no speculative decoding. */
export const pipelineSpeculative = rule(
  "R18.pp",
  "pipeline parallelism without overlap schedule or speculative decoding",
  19,
  6,
  "fatal",
  ({ args }) =>
    args.pp_size > 1 && (!args.disable_overlap_schedule || args.speculative_algorithm !== null)
      ? Rule.violation({
          errorType: "AssertionError",
          message: "--pp-size > 1 cannot be combined with speculative decoding",
          engineMessage: "Pipeline parallelism is not compatible with overlap schedule, speculative decoding",
          fields: ["pp_size", "speculative_algorithm", "disable_overlap_schedule"],
          fix: { pp_size: 1 },
          alternatives: [{ speculative_algorithm: null, disable_overlap_schedule: true }]
        })
      : undefined
)

/** R37 before 0.5.2: dp attention with dp size 1 is refused, not turned off. */
export const dpSizeAsserted = rule(
  "R37.dp-size-assert",
  "dp attention needs dp size > 1",
  14,
  9,
  "fatal",
  ({ args }) =>
    args.enable_dp_attention && args.dp_size <= 1
      ? Rule.violation({
          errorType: "AssertionError",
          message: "--enable-dp-attention needs --dp-size > 1 (1 < dp size <= tp size)",
          engineMessage: "Please set a dp-size > 1. You can use 1 < dp-size <= tp-size ",
          fields: ["enable_dp_attention", "dp_size"],
          // with one tp rank there is nothing to split: dp attention goes
          fix: args.tp_size >= 2 ? { dp_size: args.tp_size } : { enable_dp_attention: false },
          alternatives: [{ enable_dp_attention: false }]
        })
      : undefined
)

/** R18 before 0.5.11: pipeline parallelism also excludes mixed chunked prefill. */
export const pipelineMixedChunk = rule(
  "R18.pp-mixed",
  "pipeline parallelism without overlap schedule, speculative decoding or mixed chunk",
  19,
  6,
  "fatal",
  ({ args }) =>
    args.pp_size > 1 &&
    (!args.disable_overlap_schedule || args.speculative_algorithm !== null || args.enable_mixed_chunk)
      ? Rule.violation({
          errorType: "AssertionError",
          message: "--pp-size > 1 cannot be combined with speculative decoding or --enable-mixed-chunk",
          engineMessage:
            "Pipeline parallelism is not compatible with overlap schedule, speculative decoding, mixed chunked prefill.",
          fields: ["pp_size", "speculative_algorithm", "enable_mixed_chunk", "disable_overlap_schedule"],
          fix: { pp_size: 1 },
          alternatives: [
            { speculative_algorithm: null, enable_mixed_chunk: false, disable_overlap_schedule: true }
          ]
        })
      : undefined
)

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  dpSizeAsserted,
  dpSizeOne,
  dpDividesTp,
  dpChunkedPrefill,
  dpLmHead,
  contextParallel,
  a2aExpertParallel,
  flashinferMoeEp,
  eplbNeedsEp,
  pipelineOverlap,
  nodesDivideTpPp,
  multiNodeDp,
  gpuIds,
  pipelineMixedChunk,
  pipelineSpeculative
]
