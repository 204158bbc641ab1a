/**
 * The `--quantization` names vLLM accepts (`QuantizationMethods` in
 * vllm/model_executor/layers/quantization/__init__.py), as of two points of its history.
 *
 * @internal
 */

/** About v0.11–v0.13 (late 2025). */
const late2025 = [
  "awq",
  "deepspeedfp",
  "tpu_int8",
  "fp8",
  "ptpc_fp8",
  "fbgemm_fp8",
  "fp_quant",
  "modelopt",
  "modelopt_fp4",
  "bitblas",
  "gguf",
  "gptq_marlin_24",
  "gptq_marlin",
  "gptq_bitblas",
  "awq_marlin",
  "gptq",
  "compressed-tensors",
  "bitsandbytes",
  "hqq",
  "experts_int8",
  "ipex",
  "quark",
  "moe_wna16",
  "torchao",
  "auto-round",
  "rtn",
  "inc",
  "mxfp4",
  "petit_nvfp4"
] as const

/** About v0.21 (main, 2026-05). */
const mid2026 = [
  "awq",
  "fp8",
  "fbgemm_fp8",
  "fp_quant",
  "modelopt",
  "modelopt_fp4",
  "modelopt_mxfp8",
  "modelopt_mixed",
  "gguf",
  "gptq_marlin",
  "awq_marlin",
  "gptq",
  "compressed-tensors",
  "bitsandbytes",
  "experts_int8",
  "quark",
  "moe_wna16",
  "torchao",
  "inc",
  "mxfp4",
  "gpt_oss_mxfp4",
  "online",
  "fp8_per_tensor",
  "fp8_per_block",
  "int8_per_channel_weight_only",
  "mxfp8"
] as const

const minorOf = (release: string) => Number(release.split(".")[1] ?? 0)

export const knownMethods = (release: string): ReadonlyArray<string> =>
  minorOf(release) >= 20 ? mid2026 : late2025
