/**
 * Memory, scheduling and CUDA-graph auto-defaults (rules.md R32-R35): piecewise CUDA graph
 * auto-disable, chunked prefill / CUDA-graph batch by GPU memory, the mem_fraction_static
 * formula, and the scheduling sanity checks.
 *
 * @since 0.1.0
 */
import { platformOf } from "../internal/rules/helpers.js"
import { rangeOf } from "../internal/rules/ranges.js"
import * as Rule from "../Rule.js"

const GiB = 1024

/** R34: piecewise CUDA graph is switched off for many setups. */
export const piecewiseCudaGraph = Rule.make({
  id: "R34",
  title: "piecewise CUDA graph auto-disable",
  versions: rangeOf("R34"),
  order: { step: 10, sub: 2 },
  kind: "adjust",
  check: (input) => {
    const { args, traits } = input
    if (args.disable_piecewise_cuda_graph || args.enforce_piecewise_cuda_graph) return undefined
    const reasons: Array<[boolean, string]> = [
      [traits?.isMultimodal === true && !args.language_only, "multimodal model"],
      [args.enable_dp_attention, "dp attention"],
      [args.pp_size > 1, "pipeline parallelism"],
      [platformOf(input) !== "cuda", "non-CUDA platform"],
      [args.moe_a2a_backend !== "none", "MoE all-to-all backend"],
      [args.enable_lora === true || args.lora_paths !== null, "LoRA"],
      [args.enable_hierarchical_cache, "hierarchical cache"],
      [args.disaggregation_mode !== "null", "PD disaggregation"],
      [args.enable_eplb, "EPLB"],
      [args.attn_cp_size > 1, "attention context parallelism"],
      [args.enable_mis, "multi-item scoring"]
    ]
    const reason = reasons.find(([hit]) => hit)?.[1]
    return reason === undefined
      ? undefined
      : Rule.adjust(
          { disable_piecewise_cuda_graph: true },
          `piecewise CUDA graph is not used: ${reason}`,
          undefined
        )
  }
})

/** R32 table: (chunked_prefill_size, cuda_graph_max_bs) by per-GPU memory and tp size. */
export const memoryDefaults = (memoryMiB: number | undefined, tp: number): readonly [number, number] => {
  if (memoryMiB === undefined) return [4096, 160]
  if (memoryMiB < 20 * GiB) return [2048, 8]
  if (memoryMiB < 35 * GiB) return [2048, tp < 4 ? 24 : 80]
  if (memoryMiB < 60 * GiB) return [4096, tp < 4 ? 32 : 160]
  if (memoryMiB < 160 * GiB) return [8192, tp < 4 ? 256 : 512]
  return [16384, 512]
}

/** R32: chunked prefill size and CUDA-graph max batch by GPU memory. */
export const gpuMemoryDefaults = Rule.make({
  id: "R32",
  title: "chunked prefill size and CUDA-graph batch by GPU memory",
  versions: rangeOf("R32"),
  order: { step: 11, sub: 1 },
  kind: "adjust",
  check: ({ args, gpus }) => {
    const [chunked, maxBs] = memoryDefaults(gpus?.memoryMiB, args.tp_size)
    const set: { chunked_prefill_size?: number; cuda_graph_max_bs?: number } = {}
    if (args.chunked_prefill_size === null) set.chunked_prefill_size = chunked
    if (args.cuda_graph_bs !== null && args.cuda_graph_bs.length > 0) {
      const fromList = Math.max(...args.cuda_graph_bs)
      if (args.cuda_graph_max_bs !== fromList) set.cuda_graph_max_bs = fromList
    } else if (args.cuda_graph_max_bs === null) set.cuda_graph_max_bs = maxBs
    return Object.keys(set).length === 0
      ? undefined
      : Rule.adjust(
          set,
          `defaults for ${gpus === undefined ? "unknown" : `${gpus.memoryMiB} MiB`} GPUs`,
          undefined
        )
  }
})

/** R33: mem_fraction_static from what must stay free on the GPU. */
export const memFractionStatic = Rule.make({
  id: "R33",
  title: "mem_fraction_static auto value",
  versions: rangeOf("R33"),
  order: { step: 11, sub: 2 },
  kind: "adjust",
  check: ({ args, gpus, traits }) => {
    if (args.mem_fraction_static !== null) return undefined
    if (gpus === undefined) {
      return Rule.adjust(
        { mem_fraction_static: 0.88 },
        "GPU memory unknown: SGLang's fallback 0.88",
        undefined
      )
    }
    const gpuMem = gpus.memoryMiB
    const chunked = args.chunked_prefill_size ?? 0
    const maxBs = args.cuda_graph_max_bs ?? 160
    let reserved =
      512 +
      Math.max(chunked > 0 ? chunked : args.max_prefill_tokens, 2048) * 1.5 +
      maxBs * 2 +
      ((args.tp_size * args.pp_size) / 8) * 1024
    if (args.enable_dp_attention) {
      reserved += maxBs * args.dp_size * 3
      if (maxBs > 300) reserved += maxBs * args.dp_size * 1.5
    }
    // The generated piecewise token list is not reproduced here; only an explicit list counts.
    if (!args.disable_piecewise_cuda_graph && args.piecewise_cuda_graph_tokens !== null) {
      reserved += args.piecewise_cuda_graph_tokens.length * (traits?.isMla ? 1536 : 8)
    }
    if (gpuMem > 60 * GiB) reserved = Math.max(reserved, 10240)
    const algo = args.speculative_algorithm
    if (algo === "STANDALONE") reserved += 6144
    else if (algo !== null && algo !== "NGRAM") reserved += 4096
    let fraction = Math.round(((gpuMem - reserved) / gpuMem) * 1000) / 1000
    const vision = traits?.vision
    if (traits?.isMultimodal && !args.language_only && vision !== undefined) {
      const size = (vision.layers * vision.hiddenSize ** 2) / (24 * 1024 ** 2)
      fraction *= 0.95 * Math.min(1.05, Math.max(0.8, 1 - 0.1 * (size - 1)))
    }
    return Rule.adjust(
      { mem_fraction_static: fraction },
      `${Math.round(reserved)} MiB per GPU kept free for activations, CUDA graphs${algo === null ? "" : " and the draft model"}`,
      undefined
    )
  }
})

/** R35: priority scheduling only with fcfs / lof. */
export const priorityScheduling = Rule.make({
  id: "R35.priority",
  title: "priority scheduling needs fcfs or lof",
  versions: rangeOf("R35.priority"),
  order: { step: 19, sub: 20 },
  kind: "fatal",
  check: ({ args }) =>
    args.enable_priority_scheduling && args.schedule_policy !== "fcfs" && args.schedule_policy !== "lof"
      ? Rule.violation({
          errorType: "AssertionError",
          message: `--enable-priority-scheduling does not work with --schedule-policy ${args.schedule_policy}`,
          engineMessage: `To use priority scheduling, schedule_policy must be 'fcfs' or 'lof'. '${args.schedule_policy}' is not supported.`,
          fields: ["enable_priority_scheduling", "schedule_policy"],
          fix: { schedule_policy: "fcfs" }
        })
      : undefined
})

/** R35: SWA full-token ratio in (0, 1]. */
export const swaRatio = Rule.make({
  id: "R35.swa-ratio",
  title: "swa_full_tokens_ratio in (0, 1]",
  versions: rangeOf("R35.swa-ratio"),
  order: { step: 19, sub: 21 },
  kind: "fatal",
  check: ({ args }) =>
    args.swa_full_tokens_ratio <= 0 || args.swa_full_tokens_ratio > 1
      ? Rule.violation({
          errorType: "ValueError",
          message: `--swa-full-tokens-ratio ${args.swa_full_tokens_ratio} is outside (0, 1]`,
          engineMessage: "--swa-full-tokens-ratio should be in range (0, 1.0].",
          fields: ["swa_full_tokens_ratio"],
          fix: { swa_full_tokens_ratio: 0.8 }
        })
      : undefined
})

/** R35: at least one tokenizer worker. */
export const tokenizerWorkers = Rule.make({
  id: "R35.tokenizer-workers",
  title: "tokenizer worker num >= 1",
  versions: rangeOf("R35.tokenizer-workers"),
  order: { step: 19, sub: 22 },
  kind: "fatal",
  check: ({ args }) =>
    args.tokenizer_worker_num < 1
      ? Rule.violation({
          errorType: "AssertionError",
          message: "--tokenizer-worker-num must be at least 1",
          engineMessage: "Tokenizer worker num must >= 1",
          fields: ["tokenizer_worker_num"],
          fix: { tokenizer_worker_num: 1 }
        })
      : undefined
})

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  piecewiseCudaGraph,
  gpuMemoryDefaults,
  memFractionStatic,
  priorityScheduling,
  swaRatio,
  tokenizerWorkers
]
