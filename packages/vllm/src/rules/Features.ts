/**
 * Checks of optional features: CUDA-graph sizes (vllm/engine/arg_utils.py), LoRA
 * (vllm/config/lora.py), speculative decoding (vllm/config/speculative.py), and two refusals
 * of about v0.11 that later releases lifted.
 *
 * @since 0.1.0
 */
import { jsonOf } from "../internal/rules/effective.js"
import { error, num, on, type Rule } from "../Rule.js"

/** @category rules */
export const captureSizesOnce: Rule = {
  id: "arg_utils.cudagraph-capture-sizes-once",
  raisedIn: "vllm/engine/arg_utils.py (create_engine_config)",
  text: "cudagraph_capture_sizes and compilation_config.cudagraph_capture_sizes are mutually exclusive",
  releases: { from: "0.13", until: null },
  needs: ["cudagraph_capture_sizes", "compilation_config"],
  check: (input) => {
    const flag = input.values.cudagraph_capture_sizes
    const inConfig = jsonOf(input, "compilation_config").cudagraph_capture_sizes
    if (flag === null || flag === undefined || inConfig === null || inConfig === undefined) return undefined
    if (!input.given.has("compilation_config")) return undefined
    return error(
      "cudagraph_capture_sizes and compilation_config.cudagraph_capture_sizes are mutually exclusive",
      "the CUDA-graph batch sizes are given twice: by --cudagraph-capture-sizes and inside --compilation-config",
      ["cudagraph_capture_sizes"],
      { cudagraph_capture_sizes: null }
    )
  }
}

/** @category rules */
export const cpuLorasCoverLoras: Rule = {
  id: "lora.max-cpu-loras-at-least-max-loras",
  raisedIn: "vllm/config/lora.py (__post_init__)",
  text: "max_cpu_loras ({}) must be >= max_loras ({})",
  releases: { from: "0.11", until: null },
  needs: ["max_cpu_loras", "max_loras"],
  check: (input) => {
    const cpu = num(input, "max_cpu_loras")
    const gpu = num(input, "max_loras") ?? 1
    if (cpu === undefined || cpu >= gpu || input.values.enable_lora !== true) return undefined
    return error(
      `max_cpu_loras (${cpu}) must be >= max_loras (${gpu})`,
      `the CPU cache of adapters must hold at least the ${gpu} adapters that can be on the GPU at once`,
      ["max_cpu_loras"],
      { max_cpu_loras: gpu }
    )
  }
}

/** @category rules */
export const draftTensorParallel: Rule = {
  id: "speculative.draft-tp-one-or-target",
  raisedIn: "vllm/config/speculative.py (_verify_and_get_draft_tp)",
  text: "speculative_draft_tensor_parallel_size={} cannot be other value than 1 or target model tensor_parallel_size={}",
  releases: { from: "0.11", until: null },
  needs: ["speculative_config"],
  check: (input) => {
    const spec = jsonOf(input, "speculative_config")
    const draftTp = spec.draft_tensor_parallel_size
    const tp = num(input, "tensor_parallel_size") ?? 1
    if (typeof draftTp !== "number" || draftTp === 1 || draftTp === tp) return undefined
    return error(
      `speculative_draft_tensor_parallel_size=${draftTp} cannot be other value than 1 or target model tensor_parallel_size=${tp}`,
      `the draft model runs on one GPU or on the target's ${tp}, not on ${draftTp}`,
      ["speculative_config"],
      { speculative_config: { ...spec, draft_tensor_parallel_size: 1 } }
    )
  }
}

/** @category rules */
export const asyncSchedulingWithoutPp: Rule = {
  id: "scheduler.async-scheduling-without-pp",
  raisedIn: "vllm/config/vllm.py (about v0.11; lifted by v0.13)",
  text: "Async scheduling is not supported with pipeline-parallel-size > 1.",
  releases: { from: "0.11", until: "0.11" },
  needs: ["async_scheduling"],
  check: (input) => {
    const pp = num(input, "pipeline_parallel_size") ?? 1
    if (!on(input, "async_scheduling") || pp <= 1) return undefined
    return error(
      "Async scheduling is not supported with pipeline-parallel-size > 1.",
      `this vLLM (${input.release}) cannot overlap scheduling with ${pp} pipeline stages; later releases can`,
      ["async_scheduling"],
      { async_scheduling: false }
    )
  }
}

/** @category rules */
export const draftModelSpeculation: Rule = {
  id: "speculative.draft-model-unsupported",
  raisedIn: "vllm/config/speculative.py (about v0.11; lifted later)",
  text: "Draft model speculative decoding is not supported yet.",
  releases: { from: "0.11", until: "0.11" },
  needs: ["speculative_config"],
  check: (input) => {
    const spec = jsonOf(input, "speculative_config")
    const method = spec.method
    const isDraftModel = method === "draft_model" || (method === undefined && typeof spec.model === "string")
    if (!isDraftModel) return undefined
    return error(
      "Draft model speculative decoding is not supported yet.",
      `this vLLM (${input.release}) speculates only with built-in methods (ngram, eagle, medusa, mtp), not a separate draft model`,
      ["speculative_config"],
      { speculative_config: null }
    )
  }
}
