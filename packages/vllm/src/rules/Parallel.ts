/**
 * Checks of vllm/config/parallel.py and the parallel part of vllm/engine/arg_utils.py: data,
 * expert, context and multi-node parallelism, and the GPUs they need.
 *
 * @since 0.1.0
 */
import { gpusOnNode, jsonOf, worldSize } from "../internal/rules/effective.js"
import { error, num, on, type Rule } from "../Rule.js"

/** @category rules */
export const localDataParallelWithinTotal: Rule = {
  id: "parallel.data-parallel-local-within-total",
  raisedIn: "vllm/config/parallel.py (__post_init__)",
  text: "data_parallel_size_local ({}) must be <= data_parallel_size ({})",
  releases: { from: "0.11", until: null },
  needs: ["data_parallel_size_local", "data_parallel_size"],
  check: (input) => {
    const local = num(input, "data_parallel_size_local")
    const total = num(input, "data_parallel_size") ?? 1
    if (local === undefined || local <= total) return undefined
    return error(
      `data_parallel_size_local (${local}) must be <= data_parallel_size (${total})`,
      `this node cannot run ${local} of ${total} data-parallel replicas`,
      ["data_parallel_size"],
      { data_parallel_size: local }
    )
  }
}

/** @category rules */
export const eplbNeedsExpertParallel: Rule = {
  id: "parallel.eplb-needs-expert-parallel",
  raisedIn: "vllm/config/parallel.py (_validate_parallel_config)",
  text: "enable_expert_parallel must be True to use EPLB.",
  releases: { from: "0.11", until: null },
  needs: ["enable_eplb", "enable_expert_parallel"],
  check: (input) =>
    on(input, "enable_eplb") && !on(input, "enable_expert_parallel")
      ? error(
          "enable_expert_parallel must be True to use EPLB.",
          "expert-parallel load balancing moves experts between expert-parallel ranks, and there are none",
          ["enable_expert_parallel"],
          { enable_expert_parallel: true }
        )
      : undefined
}

/** num_redundant_experts: its own flag about v0.11, a key of --eplb-config later. */
const redundantExperts = (input: Parameters<Rule["check"]>[0]): number =>
  num(input, "num_redundant_experts") ??
  (typeof jsonOf(input, "eplb_config").num_redundant_experts === "number"
    ? (jsonOf(input, "eplb_config").num_redundant_experts as number)
    : 0)

/** @category rules */
export const redundantExpertsNeedEplb: Rule = {
  id: "parallel.redundant-experts-need-eplb",
  raisedIn: "vllm/config/parallel.py (_validate_parallel_config)",
  text: "num_redundant_experts is set to {} but EPLB is not enabled. Either enable EPLB or unset num_redundant_experts.",
  releases: { from: "0.11", until: null },
  needs: ["enable_eplb"],
  check: (input) => {
    const n = redundantExperts(input)
    if (n <= 0 || on(input, "enable_eplb")) return undefined
    return error(
      `num_redundant_experts is set to ${n} but EPLB is not enabled. Either enable EPLB or unset num_redundant_experts.`,
      `redundant experts are copies that EPLB places; without --enable-eplb the ${n} copies are never used`,
      ["enable_eplb"],
      input.values.enable_expert_parallel === true
        ? { enable_eplb: true }
        : { enable_eplb: true, enable_expert_parallel: true }
    )
  }
}

/** @category rules */
export const worldSizeDivisibleByNodes: Rule = {
  id: "arg_utils.world-size-divisible-by-nnodes",
  raisedIn: "vllm/engine/arg_utils.py (create_engine_config)",
  text: "world_size={} must be divisible by nnodes={}.",
  releases: { from: "0.13", until: null },
  needs: ["nnodes"],
  check: (input) => {
    const nodes = num(input, "nnodes") ?? 1
    const world = worldSize(input)
    if (nodes <= 1 || world % nodes === 0) return undefined
    let fixed = nodes
    while (fixed > 1 && world % fixed !== 0) fixed--
    return error(
      `world_size=${world} must be divisible by nnodes=${nodes}.`,
      `${world} GPUs (tensor × pipeline parallel) cannot be split evenly over ${nodes} nodes`,
      ["nnodes"],
      { nnodes: fixed }
    )
  }
}

/** @category rules */
export const multiNodeBackend: Rule = {
  id: "parallel.nnodes-needs-mp-backend",
  raisedIn: "vllm/config/parallel.py (__post_init__)",
  text: "nnodes > 1 can only be set when distributed executor backend is mp, uni or external_launcher.",
  releases: { from: "0.13", until: null },
  needs: ["nnodes", "distributed_executor_backend"],
  check: (input) => {
    const nodes = num(input, "nnodes") ?? 1
    const backend = input.values.distributed_executor_backend
    if (
      nodes <= 1 ||
      backend === null ||
      backend === undefined ||
      ["mp", "uni", "external_launcher"].includes(String(backend))
    )
      return undefined
    return error(
      "nnodes > 1 can only be set when distributed executor backend is mp, uni or external_launcher.",
      `--nnodes ${nodes} starts one vLLM per node itself; the ${String(backend)} backend places workers its own way`,
      ["distributed_executor_backend"],
      { distributed_executor_backend: "mp" }
    )
  }
}

/** @category rules */
export const tpDivisibleByDcp: Rule = {
  id: "arg_utils.tp-divisible-by-dcp",
  raisedIn: "vllm/engine/arg_utils.py (create_engine_config)",
  // sic: vLLM's message has no space in "bydcp_size"
  text: "tp_size={} must be divisible bydcp_size={}.",
  releases: { from: "0.11", until: null },
  needs: ["decode_context_parallel_size"],
  check: (input) => {
    const tp = num(input, "tensor_parallel_size") ?? 1
    const dcp = num(input, "decode_context_parallel_size") ?? 1
    if (tp % dcp === 0) return undefined
    let fixed = dcp
    while (fixed > 1 && tp % fixed !== 0) fixed--
    return error(
      `tp_size=${tp} must be divisible bydcp_size=${dcp}.`,
      `decode context parallelism splits each of the ${tp} tensor-parallel ranks' KV cache into ${dcp} parts, which must divide ${tp}`,
      ["decode_context_parallel_size"],
      { decode_context_parallel_size: fixed }
    )
  }
}

/** @category rules */
export const enoughGpus: Rule = {
  id: "parallel.world-size-within-gpus",
  raisedIn: "vllm/config/parallel.py (__post_init__, mp backend)",
  text: "please set tensor_parallel_size ({}) to less than max local gpu count ({})",
  releases: { from: "0.11", until: null },
  needs: ["tensor_parallel_size"],
  check: (input) => {
    if (input.gpus === undefined) return undefined
    const nodes = num(input, "nnodes") ?? 1
    const needed = Math.ceil(gpusOnNode(input) / nodes)
    const have = input.gpus.count
    if (needed <= have) return undefined
    const tp = num(input, "tensor_parallel_size") ?? 1
    const others = needed / tp
    const fixedTp = Math.max(1, Math.floor(have / others))
    const heads = input.model?.numAttentionHeads
    let tpFix = fixedTp
    while (heads !== undefined && tpFix > 1 && heads % tpFix !== 0) tpFix--
    return error(
      `please set tensor_parallel_size (${tp}) to less than max local gpu count (${have})`,
      `this command needs ${needed} GPUs on the host, which has ${have}`,
      ["tensor_parallel_size"],
      others > have
        ? { tensor_parallel_size: 1, pipeline_parallel_size: 1, data_parallel_size: 1 }
        : { tensor_parallel_size: tpFix }
    )
  }
}
