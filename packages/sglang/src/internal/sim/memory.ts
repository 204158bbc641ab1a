/**
 * The simulator's memory model: a deliberately simple per-GPU budget that decides whether a
 * launch fits, and which of SGLang's memory failures it meets when it does not.
 *
 * - other processes' memory on the GPU (`otherGiB`, the busiest of the server's GPUs) is simply
 *   not there: SGLang sizes from what is free when it starts;
 * - weights: `estimatedWeightBytes / tp` must fit in what is free (else CUDA OOM while loading);
 * - static pool: `total × mem_fraction_static`, less what others hold, must hold the weights plus a KV pool of at least
 *   `requiredTokens` (one request of an explicit `--context-length`, else 4096 tokens; SGLang
 *   shrinks the pool otherwise) (else "Not enough memory" when the KV pool is sized);
 * - the rest (`total × (1 - mem_fraction_static)`) must hold activations and CUDA graphs,
 *   which grow with max_running_requests (else CUDA OOM while capturing graphs).
 *
 * @internal
 */
import type { ModelTraits } from "@mlops/serve/ModelTraits"

const GiB = 1024 ** 3

export interface MemoryPlan {
  readonly totalGiB: number
  readonly weightsGiB: number
  readonly staticGiB: number
  readonly kvGiB: number
  readonly kvTokens: number
  /** Activations + CUDA graphs. */
  readonly runtimeGiB: number
  /** What this server holds once its pools are allocated (weights + KV), per GPU. */
  readonly heldGiB: number
  readonly outcome: "fits" | "weights-oom" | "kv-pool" | "graph-oom"
}

/** KV bytes per token on one GPU: K and V for every full-attention layer (bf16). */
const kvBytesPerToken = (traits: ModelTraits, tp: number): number => {
  const linear = traits.hybridLinearAttention?.layers.length ?? 0
  const fullLayers = Math.max(1, traits.numLayers - linear)
  const kvHeads = Math.max(1, Math.ceil(traits.numKeyValueHeads / tp))
  return 2 * kvHeads * traits.headDim * 2 * fullLayers
}

export const plan = (o: {
  readonly traits: ModelTraits
  readonly tp: number
  readonly gpuMiB: number
  readonly memFractionStatic: number
  readonly requiredTokens: number
  readonly maxRunningRequests: number
  readonly speculative: boolean
  /** GiB other processes hold on the busiest of this server's GPUs. */
  readonly otherGiB?: number
}): MemoryPlan => {
  const otherGiB = o.otherGiB ?? 0
  const totalGiB = o.gpuMiB / 1024
  const draft = o.speculative && o.traits.mtp !== undefined ? 1 / Math.max(1, o.traits.numLayers) : 0
  const weightsGiB = (o.traits.estimatedWeightBytes * (1 + draft)) / o.tp / GiB
  const staticGiB = totalGiB * o.memFractionStatic
  // SGLang: rest = free after weights − total × (1 − mem_fraction_static)
  const kvGiB = Math.max(0, staticGiB - otherGiB - weightsGiB)
  const kvTokens = Math.floor((kvGiB * GiB) / kvBytesPerToken(o.traits, o.tp))
  const runtimeGiB = 1.5 + o.maxRunningRequests * 0.02
  const outcome =
    weightsGiB > totalGiB - otherGiB - 0.5
      ? "weights-oom"
      : kvTokens < o.requiredTokens
        ? "kv-pool"
        : totalGiB - staticGiB < runtimeGiB
          ? "graph-oom"
          : "fits"
  const heldGiB = Math.max(0, Math.min(totalGiB - otherGiB, weightsGiB + kvGiB))
  return { totalGiB, weightsGiB, staticGiB, kvGiB, kvTokens, runtimeGiB, heldGiB, outcome }
}
