/**
 * Defaults and launch-aborting checks outside the other families (rules.md section 1 step
 * 7-8, R35 context length, section 7 and section 8): missing-value defaults, `unquant`,
 * context length, hierarchical cache, served model name, chunked prefill vs page size, LoRA.
 *
 * @since 0.1.0
 */
import { envBool, platformOf, rule } from "../internal/rules/helpers.js"
import * as Rule from "../Rule.js"
import * as VersionRange from "../VersionRange.js"

/** `--quantization unquant` means "no quantization, and do not detect one". */
export const unquant = rule("S7.unquant", "--quantization unquant -> None", 7, 1, "adjust", ({ args }) =>
  args.quantization === "unquant"
    ? Rule.adjust(
        { quantization: null },
        "unquant disables quantization and checkpoint auto-detection",
        undefined
      )
    : undefined
)

/** `_handle_missing_default_values`: tokenizer path, served model name, device. */
export const missingDefaults = rule(
  "S8.defaults",
  "tokenizer path, served model name and device defaults",
  8,
  1,
  "adjust",
  (input) => {
    const { args } = input
    const set: { tokenizer_path?: string; served_model_name?: string; device?: string } = {}
    if (args.tokenizer_path === null) set.tokenizer_path = args.model_path
    if (args.served_model_name === null) set.served_model_name = args.model_path
    if (args.device === null) set.device = platformOf(input) === "musa" ? "musa" : "cuda"
    return Object.keys(set).length === 0
      ? undefined
      : Rule.adjust(set, "defaults filled from --model-path and the platform", undefined)
  }
)

/** R35: `--context-length` may not exceed what the model config derives. */
export const contextLength = rule(
  "R35.context-length",
  "context length within the model's limit",
  10,
  1,
  "fatal",
  (input) => {
    const { args, traits } = input
    if (traits === undefined || args.context_length === null || args.context_length <= traits.contextLength)
      return undefined
    if (envBool(input, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", false)) return undefined
    return Rule.violation({
      errorType: "ValueError",
      message: `--context-length ${args.context_length} is longer than the model's ${traits.contextLength}`,
      engineMessage: `User-specified context_length (${args.context_length}) is greater than the derived context_length (${traits.contextLength}).`,
      fields: ["context_length"],
      fix: { context_length: traits.contextLength },
      alternatives: [{ context_length: null }]
    })
  }
)

/** CLI methods SGLang accepts for a checkpoint quantized with another method's name. */
const compatibleQuantization: Readonly<Record<string, ReadonlyArray<string>>> = {
  modelopt_fp8: ["modelopt"],
  modelopt_fp4: ["modelopt"],
  modelopt_mixed: ["modelopt"],
  petit_nvfp4: ["modelopt"],
  w8a8_int8: ["compressed-tensors", "compressed_tensors"],
  w8a8_fp8: ["compressed-tensors", "compressed_tensors"]
}

/** ... and from 0.5.14 online NVFP4 over an fp8 checkpoint and auto-round int8 over compressed tensors. */
const compatibleFrom0514: Readonly<Record<string, ReadonlyArray<string>>> = {
  nvfp4_online: ["fp8"],
  "auto-round-int8": ["compressed-tensors", "compressed_tensors"]
}

/**
 * R35.quantization: a pre-quantized checkpoint's `quant_method` and `--quantization` must be the
 * same or compatible. Kernels that take over a checkpoint of their family (`awq_marlin` for awq,
 * `gptq_marlin` for gptq, `marlin`, `moe_wna16`) are let through: their override is decided by
 * the method, not modelled here.
 */
export const quantizationMatches = rule(
  "R35.quantization",
  "--quantization matches the checkpoint's",
  10,
  2,
  "fatal",
  ({ args, traits, version }) => {
    const checkpoint = traits?.quantization?.toLowerCase()
    const asked = args.quantization?.toLowerCase()
    if (checkpoint === undefined || checkpoint === "" || asked === undefined || asked === checkpoint)
      return undefined
    // before 0.5.5 the model config is read here only to compute a --mem-fraction-static not given
    if (!VersionRange.atLeast(version, "0.5.5") && args.mem_fraction_static !== null) return undefined
    if (compatibleQuantization[asked]?.includes(checkpoint)) return undefined
    if (VersionRange.atLeast(version, "0.5.14") && compatibleFrom0514[asked]?.includes(checkpoint))
      return undefined
    if (asked.startsWith(checkpoint) || asked === "marlin" || asked === "moe_wna16") return undefined
    return Rule.violation({
      errorType: "ValueError",
      message: `--quantization ${asked} does not match the checkpoint, which is quantized with ${checkpoint} (its config.json's quantization_config)`,
      engineMessage: `Quantization method specified in the model config (${checkpoint}) does not match the quantization method specified in the \`quantization\` argument (${asked}).`,
      fields: ["quantization"],
      fix: { quantization: null }
    })
  }
)

/** Section 7: hierarchical cache and no radix cache exclude each other. */
export const hicacheRadix = rule(
  "S7.hicache",
  "hierarchical cache needs radix cache",
  14,
  1,
  "fatal",
  ({ args }) =>
    args.enable_hierarchical_cache && args.disable_radix_cache
      ? Rule.violation({
          errorType: "ValueError",
          message:
            "--enable-hierarchical-cache extends the radix cache, so it cannot be used with --disable-radix-cache",
          engineMessage:
            "The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive and cannot be used at the same time. Please use only one of them.",
          fields: ["enable_hierarchical_cache", "disable_radix_cache"],
          fix: { enable_hierarchical_cache: false },
          alternatives: [{ disable_radix_cache: false }]
        })
      : undefined
)

/** R31: chunked prefill size must be a multiple of the page size. */
export const chunkedPrefillPages = rule(
  "R31.chunked-prefill",
  "chunked prefill size divisible by page size",
  19,
  4,
  "fatal",
  ({ args }) => {
    const chunked = args.chunked_prefill_size
    const page = args.page_size ?? 1
    if (chunked === null || chunked <= 0 || args.disaggregation_mode === "decode" || chunked % page === 0)
      return undefined
    return Rule.violation({
      errorType: "AssertionError",
      message: `--chunked-prefill-size ${chunked} is not a multiple of the page size ${page}`,
      engineMessage: "chunked_prefill_size must be divisible by page_size",
      fields: ["chunked_prefill_size", "page_size"],
      fix: { chunked_prefill_size: Math.max(page, Math.floor(chunked / page) * page) }
    })
  }
)

/** R18: speculative decoding needs mixed chunk off (normally guaranteed by R8/R10/R16). */
export const mixedChunkSpeculative = rule(
  "R18.mixed-chunk",
  "no mixed chunk with speculative decoding",
  19,
  5,
  "fatal",
  ({ args }) =>
    args.speculative_algorithm !== null && args.enable_mixed_chunk
      ? Rule.violation({
          errorType: "AssertionError",
          message: "--enable-mixed-chunk cannot be used with speculative decoding",
          engineMessage: "enable_mixed_chunk is required for speculative decoding",
          fields: ["enable_mixed_chunk", "speculative_algorithm"],
          fix: { enable_mixed_chunk: false }
        })
      : undefined
)

/** Section 8: the served model name (default: model path) may not contain ':'. */
export const servedModelNameColon = rule(
  "S8.served-model-name",
  "served model name without ':'",
  19,
  7,
  "fatal",
  ({ args, explicit }) => {
    const name = args.served_model_name ?? args.model_path
    if (!name.includes(":")) return undefined
    return Rule.violation({
      errorType: "AssertionError",
      message: `the served model name "${name}" contains ':'${explicit.has("served_model_name") ? "" : " (it defaults to --model-path)"}`,
      engineMessage: "served_model_name cannot contain a colon (':') character.",
      fields: ["served_model_name"],
      fix: { served_model_name: name.replaceAll(":", "-") }
    })
  }
)

/** R18: LoRA only with NGRAM speculative decoding. */
export const loraSpeculative = rule(
  "R18.lora",
  "LoRA only with NGRAM speculative decoding",
  19,
  10,
  "fatal",
  ({ args }) => {
    const lora = args.enable_lora === true || (args.lora_paths !== null && args.lora_paths.length > 0)
    const algo = args.speculative_algorithm
    if (!lora || algo === null || algo === "NGRAM") return undefined
    return Rule.violation({
      errorType: "ValueError",
      message: `LoRA adapters cannot be served with ${algo} speculative decoding`,
      engineMessage: "Currently LoRA is only compatible with NGRAM speculative decoding.",
      fields: ["enable_lora", "lora_paths", "speculative_algorithm"],
      fix: { speculative_algorithm: null },
      alternatives: [{ enable_lora: null, lora_paths: null }]
    })
  }
)

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  unquant,
  missingDefaults,
  contextLength,
  quantizationMatches,
  hicacheRadix,
  chunkedPrefillPages,
  mixedChunkSpeculative,
  servedModelNameColon,
  loraSpeculative
]
