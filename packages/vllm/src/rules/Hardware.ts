/**
 * Checks against the GPUs: bfloat16 and quantization kernels by compute capability
 * (vllm/platforms/cuda.py, vllm/config/model.py), and the memory fraction's bounds
 * (vllm/config/cache.py).
 *
 * @since 0.1.0
 */
import { error, num, type Rule } from "../Rule.js"

const capability = (cc: string): number => {
  const [major, minor] = cc.split(".").map(Number)
  return (major ?? 0) * 10 + (minor ?? 0)
}

/** @category rules */
export const bf16NeedsAmpere: Rule = {
  id: "platform.bfloat16-needs-compute-8",
  raisedIn: "vllm/platforms/cuda.py (check_if_supports_dtype)",
  text: "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {} GPU has compute capability {}. You can use float16 instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.",
  releases: { from: "0.11", until: null },
  needs: ["dtype"],
  check: (input) => {
    if (input.gpus === undefined || capability(input.gpus.computeCapability) >= 80) return undefined
    // `auto` picks a supported type on its own; only an explicit bfloat16 is refused
    if (input.values.dtype !== "bfloat16") return undefined
    const name = input.gpus.name ?? "current"
    return error(
      `Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your ${name} GPU has compute capability ${input.gpus.computeCapability}. You can use float16 instead by explicitly setting the \`dtype\` flag in CLI, for example: --dtype=half.`,
      `compute capability ${input.gpus.computeCapability} has no bfloat16 arithmetic`,
      ["dtype"],
      { dtype: "half" }
    )
  }
}

/** Minimum compute capability (×10) of the quantization kernels vLLM checks at start. */
const minimumCapability: Readonly<Record<string, number>> = {
  awq: 75,
  awq_marlin: 80,
  gptq_marlin: 80,
  fp8: 80,
  modelopt_fp4: 100,
  mxfp4: 80
}

/** @category rules */
export const quantizationOnThisGpu: Rule = {
  id: "model.quantization-supported-on-gpu",
  raisedIn: "vllm/config/model.py (_verify_quantization) via QuantizationConfig.get_min_capability",
  text: "The quantization method {} is not supported for the current GPU. Minimum capability: {}. Current capability: {}.",
  releases: { from: "0.11", until: null },
  needs: ["quantization"],
  check: (input) => {
    const method =
      typeof input.values.quantization === "string" ? input.values.quantization : input.model?.quantization
    if (input.gpus === undefined || method === undefined) return undefined
    const minimum = minimumCapability[method]
    const current = capability(input.gpus.computeCapability)
    if (minimum === undefined || current >= minimum) return undefined
    return error(
      `The quantization method ${method} is not supported for the current GPU. Minimum capability: ${minimum}. Current capability: ${current}.`,
      `${method} kernels need compute capability ${minimum / 10} or newer; this GPU is ${input.gpus.computeCapability}`,
      ["quantization"],
      // the unquantized path of an fp8 request; a pre-quantized checkpoint needs another GPU
      input.model?.quantization === method ? {} : { quantization: null },
      input.model?.quantization === method
        ? "the checkpoint itself is quantized this way: use a GPU with that capability or another checkpoint"
        : undefined
    )
  }
}

/** @category rules */
export const memoryFractionInRange: Rule = {
  id: "cache.gpu-memory-utilization-range",
  raisedIn: "vllm/config/cache.py (pydantic Field(gt=0, le=1))",
  text: "1 validation error for CacheConfig\ngpu_memory_utilization\n  Input should be less than or equal to 1",
  releases: { from: "0.11", until: null },
  needs: ["gpu_memory_utilization"],
  check: (input) => {
    const fraction = num(input, "gpu_memory_utilization")
    if (fraction === undefined || (fraction > 0 && fraction <= 1)) return undefined
    const which = fraction > 1 ? "less than or equal to 1" : "greater than 0"
    return error(
      `1 validation error for CacheConfig\ngpu_memory_utilization\n  Input should be ${which}`,
      `--gpu-memory-utilization is the fraction of each GPU's memory vLLM may use (0 < x ≤ 1), not ${fraction}`,
      ["gpu_memory_utilization"],
      { gpu_memory_utilization: fraction > 1 && fraction <= 100 ? Math.min(0.95, fraction / 100) : null }
    )
  }
}
