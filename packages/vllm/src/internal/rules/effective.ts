/**
 * The values vLLM settles on for flags left at None, as far as the checks need them.
 *
 * @internal
 */
import { type CheckInput, num, on } from "../../Rule.js"

/** max_model_len: the given one, else the model's derived maximum (undefined when unknown). */
export const maxModelLen = (input: CheckInput): number | undefined => {
  const given = num(input, "max_model_len")
  return given !== undefined && given > 0 ? given : input.model?.contextLength
}

/** Large GPUs (≥ 70 GiB, not an A100) get vLLM's larger scheduler defaults for the API server. */
const bigGpu = (input: CheckInput) =>
  input.gpus !== undefined && input.gpus.memoryMiB >= 70 * 1024 && input.gpus.computeCapability !== "8.0"

/** max_num_seqs: given, else 1024 on a big GPU and 256 otherwise (vLLM's API-server defaults). */
export const maxNumSeqs = (input: CheckInput): number =>
  num(input, "max_num_seqs") ?? (bigGpu(input) ? 1024 : 256)

/** Chunked prefill is on unless turned off (`--no-enable-chunked-prefill`). */
export const chunkedPrefill = (input: CheckInput): boolean => input.values.enable_chunked_prefill !== false

/**
 * max_num_batched_tokens: given; else with chunked prefill 8192 on a big GPU and 2048
 * otherwise, without it the larger of that and max_model_len.
 */
export const maxNumBatchedTokens = (input: CheckInput): number => {
  const given = num(input, "max_num_batched_tokens")
  if (given !== undefined) return given
  const base = bigGpu(input) ? 8192 : 2048
  return chunkedPrefill(input) ? base : Math.max(base, maxModelLen(input) ?? 0)
}

/** GPUs one replica uses: tensor × pipeline × prefill-context parallel. */
export const worldSize = (input: CheckInput): number =>
  (num(input, "tensor_parallel_size") ?? 1) *
  (num(input, "pipeline_parallel_size") ?? 1) *
  (num(input, "prefill_context_parallel_size") ?? 1)

/** GPUs this node runs: world size × local data-parallel replicas. */
export const gpusOnNode = (input: CheckInput): number => {
  const dp = num(input, "data_parallel_size") ?? 1
  const local = num(input, "data_parallel_size_local") ?? (on(input, "headless") ? 0 : dp)
  return worldSize(input) * Math.max(1, Math.min(local, dp))
}

/** A JSON-valued flag as a record (empty when unset). */
export const jsonOf = (input: CheckInput, dest: string): Readonly<Record<string, unknown>> => {
  const v = input.values[dest]
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
}
