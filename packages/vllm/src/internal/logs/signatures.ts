/**
 * vLLM's own failure signatures: the ones whose message carries the numbers of an exact fix
 * in vLLM's flags (the neutral signatures name the class, these add the value to use). Each
 * sits before the neutral signature it refines. The cause is what vLLM prints above `Engine
 * core initialization failed`; that line itself is a consequence (neutral).
 *
 * @internal
 */
import type { PlacedSignature } from "@mlops/serve/Classifier"
import * as F from "@mlops/serve/Failures"
import { base, reasonOf, type Signature, says, Tier } from "@mlops/serve/LogSignature"

// before about v0.9 the message stops after the two sizes; the length that fits is then computed
const ESTIMATED =
  /max seq len \((\d+)\), \(([\d.]+) GiB KV cache is needed, which is larger than the available KV cache memory \(([\d.]+) GiB\)(?:\. Based on the available memory, the estimated maximum model length is (\d+))?/

const kvCacheMaxLen: Signature = {
  id: "vllm-kv-cache-max-model-len",
  tag: "OOM",
  tier: Tier.Root,
  variants: [
    {
      from: "vLLM V1 0.8+ (vllm/v1/core/kv_cache_utils.py)",
      text: "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (5.81 GiB). Based on the available memory, the estimated maximum model length is 47584. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
    }
  ],
  match: says(ESTIMATED),
  build: (s) => {
    const m = ESTIMATED.exec(s.flat) ?? ESTIMATED.exec(s.text)
    const [len, needed, available] = [Number(m?.[1] ?? 0), Number(m?.[2] ?? 1), Number(m?.[3] ?? 0)]
    // vLLM's own estimate, else the same proportion rounded down to a 16-token block
    const fits = m?.[4] !== undefined ? Number(m[4]) : Math.floor((len * available) / needed / 16) * 16
    return new F.OOM({
      ...base(s, reasonOf(s, ESTIMATED), {
        flags: { "--max-model-len": fits },
        action:
          "or raise --gpu-memory-utilization, or spread the model over more GPUs (--tensor-parallel-size)"
      }),
      kind: "kv-pool"
    })
  }
}

const BUSY =
  /Free memory on device \(([\d.]+)\/([\d.]+) GiB\) on startup is less than desired GPU memory utilization \(([\d.]+)/

const gpuBusy: Signature = {
  id: "vllm-free-memory-below-utilization",
  tag: "OOM",
  tier: Tier.Root,
  variants: [
    {
      from: "vLLM V1 0.8+ (vllm/v1/worker/gpu_worker.py)",
      text: "ValueError: Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU memory utilization (0.9, 125.75 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
    }
  ],
  match: says(BUSY),
  build: (s) => {
    const m = BUSY.exec(s.flat) ?? BUSY.exec(s.text)
    const free = Number(m?.[1] ?? 0)
    const total = Number(m?.[2] ?? 1)
    // what is free now, less a margin for the CUDA context
    const fraction = Math.floor((free / total) * 100 - 2) / 100
    return new F.OOM({
      ...base(
        s,
        reasonOf(s, BUSY),
        fraction >= 0.1
          ? {
              flags: { "--gpu-memory-utilization": fraction },
              action: "or free the GPU: another process holds its memory (nvidia-smi)"
            }
          : { action: "free the GPU: another process holds almost all of its memory (nvidia-smi)" }
      ),
      kind: "unbalanced",
      freeGiB: free,
      totalGiB: total
    })
  }
}

const HEADS = /Total number of attention heads \((\d+)\) must be divisible by tensor parallel size \((\d+)\)/

const headsVsTp: Signature = {
  id: "vllm-heads-divisible-by-tp",
  tag: "InvalidArgument",
  tier: Tier.Root,
  variants: [
    {
      from: "vLLM 0.2+ (vllm/config/model.py)",
      text: "ValueError: Total number of attention heads (52) must be divisible by tensor parallel size (8)."
    }
  ],
  match: says(HEADS),
  build: (s) => {
    const m = HEADS.exec(s.flat) ?? HEADS.exec(s.text)
    const heads = Number(m?.[1] ?? 1)
    const tp = Number(m?.[2] ?? 1)
    let fixed = tp
    while (fixed > 1 && heads % fixed !== 0) fixed--
    return new F.InvalidArgument({
      ...base(s, reasonOf(s, HEADS), { flags: { "--tensor-parallel-size": fixed } }),
      flags: ["--tensor-parallel-size"]
    })
  }
}

const LONG = /User-specified max_model_len \((\d+)\) is greater than the derived max_model_len \(\w+=([\d.]+)/

const longerThanModel: Signature = {
  id: "vllm-max-model-len-above-derived",
  tag: "InvalidArgument",
  tier: Tier.Root,
  variants: [
    {
      from: "vLLM 0.4+ (vllm/config/model.py)",
      text: "User-specified max_model_len (131072) is greater than the derived max_model_len (max_position_embeddings=32768.0 or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
    }
  ],
  match: says(LONG),
  build: (s) => {
    const m = LONG.exec(s.flat) ?? LONG.exec(s.text)
    return new F.InvalidArgument({
      ...base(s, reasonOf(s, LONG), {
        flags: { "--max-model-len": Math.floor(Number(m?.[2] ?? 0)) },
        action: "or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to go past what the model was trained for"
      }),
      flags: ["--max-model-len"]
    })
  }
}

const NO_BUDGET =
  /max_num_scheduled_tokens is set to (-?\d+), which does not allow any tokens to be scheduled/

const noTokenBudget: Signature = {
  id: "vllm-no-token-budget",
  tag: "InvalidArgument",
  tier: Tier.Root,
  variants: [
    {
      from: "vLLM 0.2x (vllm/config/scheduler.py, speculative decoding)",
      text: "max_num_scheduled_tokens is set to -1792, which does not allow any tokens to be scheduled"
    }
  ],
  match: says(NO_BUDGET),
  build: (s) =>
    new F.InvalidArgument({
      ...base(s, reasonOf(s, NO_BUDGET), {
        action:
          "speculative tokens for every sequence exceed the step's token budget: raise --max-num-batched-tokens, or lower --max-num-seqs or num_speculative_tokens"
      }),
      flags: ["--max-num-batched-tokens", "--max-num-seqs"]
    })
}

const QUANT =
  /Quantization method specified in the model config \(([\w-]+)\) does not match the quantization method specified in the `quantization` argument \(([\w-]+)\)/

const quantizationMismatch: Signature = {
  id: "vllm-quantization-mismatch",
  tag: "InvalidArgument",
  tier: Tier.Root,
  variants: [
    {
      from: "vLLM 0.2+ (vllm/config/model.py)",
      text: "ValueError: Quantization method specified in the model config (compressed-tensors) does not match the quantization method specified in the `quantization` argument (awq)."
    }
  ],
  match: says(QUANT),
  build: (s) => {
    const m = QUANT.exec(s.flat) ?? QUANT.exec(s.text)
    return new F.InvalidArgument({
      ...base(s, reasonOf(s, QUANT), {
        flags: { "--quantization": m?.[1] ?? "" },
        action: "or leave --quantization out: vLLM reads the method from the checkpoint"
      }),
      flags: ["--quantization"]
    })
  }
}

export const signatures: ReadonlyArray<PlacedSignature> = [
  { before: "kv-cache-does-not-fit", signature: kvCacheMaxLen },
  { before: "gpu-memory-held-at-start", signature: gpuBusy },
  { before: "known-invalid-argument", signature: headsVsTp },
  { before: "known-invalid-argument", signature: longerThanModel },
  { before: "known-invalid-argument", signature: noTokenBudget },
  { before: "known-invalid-argument", signature: quantizationMismatch }
]
