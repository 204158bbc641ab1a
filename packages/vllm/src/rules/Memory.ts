/**
 * The KV-cache estimate: whether the memory left after the weights holds one sequence of
 * max_model_len. vLLM finds out only after loading and profiling (vllm/v1/core/kv_cache_utils.py)
 * and refuses then; this estimate warns before anything loads, with the numbers.
 *
 * @since 0.1.0
 */
import { maxModelLen } from "../internal/rules/effective.js"
import { type CheckInput, num, type Rule, warning } from "../Rule.js"

const GiB = 1024 ** 3

/** CUDA context, activations of one step, CUDA graphs: what the weights leave that is not cache. */
const OVERHEAD_BYTES = 2 * GiB

const cacheWidth = (input: CheckInput): number => {
  const kv = String(input.values.kv_cache_dtype ?? "auto")
  if (kv.startsWith("fp8")) return 1
  const dtype = String(input.values.dtype ?? "auto")
  return dtype === "float32" || dtype === "float" || (dtype === "auto" && input.model?.dtype === "float32")
    ? 4
    : 2
}

/** KV bytes one token takes on one GPU. */
export const bytesPerToken = (input: CheckInput): number | undefined => {
  const model = input.model
  if (model === undefined) return undefined
  const tp = num(input, "tensor_parallel_size") ?? 1
  const pp = num(input, "pipeline_parallel_size") ?? 1
  const attentionLayers = model.hybridLinearAttention?.fullAttentionLayers.length ?? model.numLayers
  const layers = Math.ceil(attentionLayers / pp)
  const width = cacheWidth(input)
  if (model.mla !== undefined) return layers * (model.mla.kvLoraRank + model.mla.qkRopeHeadDim) * width
  const headsPerGpu = Math.max(1, Math.ceil(model.numKeyValueHeads / tp))
  return 2 * layers * headsPerGpu * model.headDim * width
}

/** Cache memory on one GPU: the given byte budget, else the fraction of memory minus weights and overhead. */
export const availableBytes = (input: CheckInput): number | undefined => {
  const explicit = num(input, "kv_cache_memory_bytes")
  if (explicit !== undefined) return explicit
  if (input.model === undefined || input.gpus === undefined) return undefined
  const fraction = num(input, "gpu_memory_utilization") ?? 0.9
  const shards = (num(input, "tensor_parallel_size") ?? 1) * (num(input, "pipeline_parallel_size") ?? 1)
  return (
    input.gpus.memoryMiB * 1024 * 1024 * fraction - input.model.estimatedWeightBytes / shards - OVERHEAD_BYTES
  )
}

const gib = (bytes: number) => (bytes / GiB).toFixed(2)

/** @category rules */
export const cacheHoldsOneSequence: Rule = {
  id: "kv_cache_utils.cache-holds-max-model-len",
  raisedIn: "vllm/v1/core/kv_cache_utils.py (check_enough_kv_cache_memory; at runtime, after profiling)",
  text: "To serve at least one request with the models's max seq len ({}), ({} GiB KV cache is needed, which is larger than the available KV cache memory ({} GiB). Based on the available memory, the estimated maximum model length is {}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
  releases: { from: "0.11", until: null },
  needs: ["max_model_len"],
  check: (input) => {
    const perToken = bytesPerToken(input)
    const available = availableBytes(input)
    const len = maxModelLen(input)
    if (perToken === undefined || available === undefined || len === undefined) return undefined
    const needed = perToken * len
    if (needed <= available) return undefined
    const fits = Math.max(0, Math.floor(available / perToken / 16) * 16)
    const fraction = num(input, "gpu_memory_utilization") ?? 0.9
    const vllmText =
      available <= 0
        ? "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
        : `To serve at least one request with the models's max seq len (${len}), (${gib(needed)} GiB KV cache is needed, which is larger than the available KV cache memory (${gib(available)} GiB). Based on the available memory, the estimated maximum model length is ${fits}. Try increasing \`gpu_memory_utilization\` or decreasing \`max_model_len\` when initializing the engine.`
    return warning(
      vllmText,
      `estimate: one ${len}-token sequence needs ${gib(needed)} GiB of KV cache per GPU (${perToken} bytes a token); about ${gib(Math.max(0, available))} GiB is left at --gpu-memory-utilization ${fraction} after ${gib((input.model?.estimatedWeightBytes ?? 0) / ((num(input, "tensor_parallel_size") ?? 1) * (num(input, "pipeline_parallel_size") ?? 1)))} GiB of weights per GPU and ~2 GiB of overhead`,
      ["max_model_len"],
      fits > 0 ? { max_model_len: fits } : {}
    )
  }
}
