/**
 * Out of GPU memory: a CUDA allocation (torch's wordings since 1.x, ROCm/XPU/NPU too), the KV
 * cache that does not fit (SGLang's pool, vLLM's blocks and max-model-len checks), memory held
 * by other processes at start, and SGLang's rank imbalance check.
 * @internal
 */
import type { Fix } from "../../../Failures.js"
import * as F from "../../../Failures.js"
import type { Phase } from "../../../LaunchEvent.js"
import {
  base,
  type Context,
  reasonOf,
  type Signature,
  type Subject,
  says,
  Tier
} from "../../../LogSignature.js"

const round2 = (n: number) => Math.round(n * 100) / 100
const toGiB = (value: string, unit: string) =>
  round2(
    /^bytes$/i.test(unit)
      ? Number(value) / 1073741824
      : /^M/i.test(unit)
        ? Number(value) / 1024
        : /^K/i.test(unit)
          ? Number(value) / 1048576
          : Number(value)
  )

const CAPTURE =
  /Capture cuda graph failed|Piecewise CUDA Graph|capture_model|Capturing (?:CUDA|cuda) ?graphs?|cuda_graph_runner/i

const allocationFix = (ctx: Context, phase: Phase, capture: boolean): Fix => {
  if (ctx.engine === "vllm")
    return capture
      ? { flags: { "--gpu-memory-utilization": 0.85 }, action: "or --enforce-eager to skip CUDA graphs" }
      : {
          action:
            "lower --gpu-memory-utilization or --max-model-len, or use more GPUs (--tensor-parallel-size)"
        }
  const lower = round2(Math.max(0.5, (ctx.memFractionStatic ?? 0.85) - 0.05))
  if (capture || phase === "cuda-graph" || phase === "draft-cuda-graph")
    return { flags: { "--cuda-graph-max-bs": 16, "--mem-fraction-static": lower } }
  if (phase === "weights-loading" || phase === "distributed-init" || phase === "draft-weights")
    return { action: "the weights do not fit: use more GPUs (--tp-size) or a quantized checkpoint" }
  return { flags: { "--mem-fraction-static": lower } }
}

const ALLOCATION =
  /CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|(?:HIP|XPU|NPU|MPS) out of memory|out of memory on device|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation|Failed to allocate memory|Ran out of memory in memory space|RESOURCE_EXHAUSTED: .*memory|CUDA_ERROR_OUT_OF_MEMORY|Cuda failure '?out of memory/i
// Ray's memory monitor raises an `OutOfMemoryError` too, for the host's RAM (the jobs signatures')
const HOST_MEMORY_MONITOR = /running low on memory|memory usage threshold/i

// the allocator's numbers, in torch >= 2.1's and torch 1.x's words (`0 bytes` free included)
const SIZE = String.raw`([\d.]+)\s*([GMK]i?B|bytes)`
const NUMBERS = {
  tried: new RegExp(`Tried to allocate ${SIZE}`, "i"),
  total: new RegExp(String.raw`GPU (\d+) has a total capac\w* of ${SIZE}`, "i"),
  totalOld: new RegExp(String.raw`\(GPU (\d+);\s*${SIZE} total`, "i"),
  free: new RegExp(`of which ${SIZE} (?:is )?free`, "i"),
  freeOld: new RegExp(`${SIZE} free;`, "i"),
  allocated: new RegExp(`Of the allocated memory ${SIZE} is allocated by PyTorch`, "i"),
  allocatedOld: new RegExp(`${SIZE} already allocated`, "i"),
  unallocated: new RegExp(`${SIZE} is reserved by PyTorch but unallocated`, "i"),
  reservedOld: new RegExp(String.raw`${SIZE} (?:reserved in total by PyTorch|cached\))`, "i")
} as const

/** The numbers a CUDA OOM message states (GiB), the missing one of allocated/reserved/unallocated derived. */
export const oomNumbers = (
  text: string
): {
  readonly gpu?: number
  readonly triedGiB?: number
  readonly totalGiB?: number
  readonly freeGiB?: number
  readonly allocatedGiB?: number
  readonly reservedGiB?: number
  readonly reservedUnallocatedGiB?: number
} => {
  const gib = (m: RegExpExecArray | null, at = 1) => (m === null ? undefined : toGiB(m[at]!, m[at + 1]!))
  const total = NUMBERS.total.exec(text) ?? NUMBERS.totalOld.exec(text)
  const tried = gib(NUMBERS.tried.exec(text))
  const free = gib(NUMBERS.free.exec(text) ?? NUMBERS.freeOld.exec(text))
  const allocated = gib(NUMBERS.allocated.exec(text) ?? NUMBERS.allocatedOld.exec(text))
  const stated = {
    unallocated: gib(NUMBERS.unallocated.exec(text)),
    reserved: gib(NUMBERS.reservedOld.exec(text))
  }
  const reserved =
    stated.reserved ??
    (allocated !== undefined && stated.unallocated !== undefined
      ? round2(allocated + stated.unallocated)
      : undefined)
  const unallocated =
    stated.unallocated ??
    (allocated !== undefined && stated.reserved !== undefined
      ? round2(Math.max(0, stated.reserved - allocated))
      : undefined)
  return {
    ...(total === null ? {} : { gpu: Number(total[1]), totalGiB: toGiB(total[2]!, total[3]!) }),
    ...(tried === undefined ? {} : { triedGiB: tried }),
    ...(free === undefined ? {} : { freeGiB: free }),
    ...(allocated === undefined ? {} : { allocatedGiB: allocated }),
    ...(reserved === undefined ? {} : { reservedGiB: reserved }),
    ...(unallocated === undefined ? {} : { reservedUnallocatedGiB: unallocated })
  }
}

// a training step's frames: a trainer, backward, an optimizer, DeepSpeed's engine, FSDP, a train script
const TRAINING_FRAMES =
  /(?:^|\/)train\w*(?:\.py|\/)|trainer\.py|_training_loop|training_step|\bbackward\b|optimizer|epoch|\brun_(?:sft|pt|rm|ppo|dpo|kto)\b|deepspeed\/runtime|\/accelerate\/|fsdp|lightning|finetun|update_(?:policy|actor|critic)|compute_log_prob/i
const ENGINE_FRAMES = /\/(?:sglang|vllm)\//

/** Whether the subject is a training step's OOM: its frames say so, or the log is a job's and the frames are not an engine's. */
const trainingStep = (s: Subject, ctx: Context): boolean => {
  const frames = s.record?.frames.map((f) => `${f.file} ${f.func}`).join("\n") ?? ""
  if (TRAINING_FRAMES.test(frames)) return true
  return ctx.job && !ENGINE_FRAMES.test(frames)
}

/**
 * A training job's fix: memory reserved but unallocated (fragmentation) first, an allocation larger
 * than the GPU, else less activation memory per step.
 */
export const trainingFix = (n: Pick<F.OOM, "triedGiB" | "totalGiB" | "reservedUnallocatedGiB">): Fix => {
  const smaller =
    "lower the per-device batch size (raise gradient accumulation to keep the effective batch), turn on activation (gradient) checkpointing, or shard/offload more (ZeRO-3 or FSDP, CPU offload) or use more GPUs"
  const unallocated = n.reservedUnallocatedGiB
  if (unallocated !== undefined && unallocated >= 0.5 && unallocated >= (n.triedGiB ?? 0))
    return {
      action: `set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: ${unallocated} GiB is reserved by PyTorch but unallocated (fragmentation), ${n.triedGiB === undefined ? "enough" : `more than the ${n.triedGiB} GiB asked`}; if it still does not fit, ${smaller}`
    }
  if (n.triedGiB !== undefined && n.totalGiB !== undefined && n.triedGiB > n.totalGiB)
    return {
      action: `one allocation asks for ${n.triedGiB} GiB, more than the whole GPU (${n.totalGiB} GiB): lower the batch size or the sequence/image size of a step`
    }
  return { action: smaller }
}

const allocation: Signature = {
  id: "cuda-allocation",
  tag: "OOM",
  tier: Tier.Root,
  variants: [
    {
      from: "torch >= 2.5",
      text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 MiB. GPU 0 has a total capacity of 31.35 GiB of which 25.50 MiB is free."
    },
    {
      from: "torch 2.0-2.4",
      text: "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 518.00 MiB. GPU 0 has a total capacty of 21.67 GiB of which 4.06 MiB is free."
    },
    {
      from: "torch 1.x",
      text: "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.21 GiB already allocated)"
    },
    { from: "CUDA runtime", text: "RuntimeError: CUDA error: out of memory" },
    { from: "Ray", text: "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task()" },
    { from: "ROCm torch", text: "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB." }
  ],
  match: (s) => says(ALLOCATION)(s) && !HOST_MEMORY_MONITOR.test(s.flat),
  build: (s, ctx) => {
    const text = s.flat
    const numbers = oomNumbers(text)
    const capture =
      CAPTURE.test(text) ||
      s.record?.frames.some((f) => CAPTURE.test(f.func) || CAPTURE.test(f.file)) === true
    return new F.OOM({
      ...base(
        s,
        reasonOf(s, ALLOCATION).replace(/ Including non-PyTorch.*$/, ""),
        !capture && trainingStep(s, ctx) ? trainingFix(numbers) : allocationFix(ctx, s.phase, capture)
      ),
      kind: capture ? "cuda-graph" : "cuda-alloc",
      ...numbers,
      ...(ctx.memFractionStatic === undefined ? {} : { memFractionStatic: ctx.memFractionStatic })
    })
  }
}

/**
 * A CUDA allocation's OOM with a server's fix, in a log that turned out to be a training job's
 * (its launcher's lines came after the OOM): the training fix instead. Others are returned as
 * they are.
 */
export const asTrainingOom = (failure: F.OOM): F.OOM =>
  failure.kind === "cuda-alloc" && failure.fix?.flags !== undefined
    ? new F.OOM({ ...failure, fix: trainingFix(failure) })
    : failure

const KV_POOL =
  /Not enough memory\. Please try to increase --mem-fraction-static|no GPU memory for the KV cache|is larger than the profiled value -\d|No available memory for the cache blocks|KV cache is needed, which is larger than the available KV cache memory|To serve at least one request with the models?'?s? max seq len|larger than the maximum number of tokens that can be stored in KV cache|Insufficient memory for (?:the )?KV cache|not enough (?:GPU )?memory (?:for|to allocate) (?:the )?KV cache|Memory pool size is too small|Available KV cache memory: -[\d.]+ ?GiB|pool needs ~?[\d.]+ ?GB but only [\d.]+ ?GB (?:HBM )?is free|Cannot auto-fit max_model_len: not enough GPU memory/i

const kvFix = (s: Subject, ctx: Context): Fix => {
  if (ctx.engine === "vllm" || /gpu_memory_utilization|max_model_len|max seq len|cache blocks/i.test(s.flat))
    return {
      action:
        "raise --gpu-memory-utilization, lower --max-model-len, or use more GPUs (--tensor-parallel-size)"
    }
  const current = /mem_fraction_static=([\d.]+)/.exec(s.flat)
  const value = current ? Number(current[1]) : ctx.memFractionStatic
  if (value === undefined)
    return {
      action: "raise --mem-fraction-static (e.g. 0.85), or use more GPUs (--tp-size) or a smaller model"
    }
  return value >= 0.95
    ? {
        action:
          "the KV cache does not fit even at 0.95: use more GPUs (--tp-size) or a smaller/quantized model"
      }
    : { flags: { "--mem-fraction-static": round2(Math.min(0.95, value + 0.05)) } }
}

const kvPool: Signature = {
  id: "kv-cache-does-not-fit",
  tag: "OOM",
  tier: Tier.Root,
  variants: [
    {
      from: "SGLang 0.3-0.5.x",
      text: "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    },
    {
      from: "SGLang 0.5.x (XPU)",
      text: "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5016."
    },
    {
      from: "SGLang 0.4.x",
      text: "max_total_tokens=131072 is larger than the profiled value -561981. Use the profiled value instead."
    },
    {
      from: "vLLM V0",
      text: "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
    },
    {
      from: "vLLM V0 0.4-0.6",
      text: "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (7344)."
    },
    {
      from: "vLLM V1",
      text: "ValueError: To serve at least one request with the models's max seq len (100000), (4.26 GiB KV cache is needed, which is larger than the available KV cache memory (2.1 GiB)."
    }
  ],
  match: says(KV_POOL),
  build: (s, ctx) => {
    const current = /mem_fraction_static=([\d.]+)/.exec(s.flat)
    const value = current ? Number(current[1]) : ctx.memFractionStatic
    return new F.OOM({
      ...base(s, reasonOf(s, KV_POOL), kvFix(s, ctx)),
      kind: "kv-pool",
      ...(value === undefined ? {} : { memFractionStatic: value })
    })
  }
}

const BUSY =
  /on startup is less than desired GPU memory utilization|The memory capacity is unbalanced|Some GPUs may be occupied by other processes/i

const busy: Signature = {
  id: "gpu-memory-held-at-start",
  tag: "OOM",
  tier: Tier.Root,
  variants: [
    {
      from: "vLLM V1 0.8+",
      text: "ValueError: Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU memory utilization (0.9, 125.75 GiB)."
    },
    {
      from: "SGLang 0.4-0.5.x",
      text: "The memory capacity is unbalanced. Some GPUs may be occupied by other processes."
    }
  ],
  match: says(BUSY),
  build: (s, ctx) =>
    new F.OOM({
      ...base(
        s,
        reasonOf(s, BUSY),
        ctx.engine === "vllm" || /GPU memory utilization/i.test(s.flat)
          ? {
              action: "free the GPUs held by other processes (nvidia-smi), or lower --gpu-memory-utilization"
            }
          : {
              action:
                "free the GPUs held by other processes (nvidia-smi), or pick idle GPUs with --base-gpu-id"
            }
      ),
      kind: "unbalanced"
    })
}

export const memory: ReadonlyArray<Signature> = [allocation, kvPool, busy]
