/**
 * Architecture-specific rules for hybrid models (rules.md R20, R27): radix cache support,
 * the SM100 default attention backend, backends a hybrid cannot use, and the
 * linear-attention (GDN) kernel backends.
 *
 * @since 0.1.0
 */
import { capability, isSm100 } from "../internal/rules/helpers.js"
import { mambaArchitectureOf, radixCacheUnsupported } from "../internal/rules/mambaArchitectures.js"
import { rangeOf } from "../internal/rules/ranges.js"
import * as Rule from "../Rule.js"

/** R20: KimiLinear and BailingMoeV2_5 run without radix cache. */
export const radixUnsupported = Rule.make({
  id: "R20.radix",
  title: "radix cache not supported for the architecture",
  versions: rangeOf("R20.radix"),
  order: { step: 12, sub: 1 },
  kind: "adjust",
  check: ({ args, traits }) =>
    traits !== undefined && radixCacheUnsupported.has(traits.architecture) && !args.disable_radix_cache
      ? Rule.adjust(
          { disable_radix_cache: true },
          `${traits.architecture} has no radix cache support`,
          `Disabling Radix Cache for ${traits.architecture} as it is not yet supported.`
        )
      : undefined
})

/** R20: hybrid architectures get their own default attention backend on SM100. */
export const sm100HybridAttention = Rule.make({
  id: "R20.sm100-attention",
  title: "SM100 default attention backend for hybrid models",
  versions: rangeOf("R20.sm100-attention"),
  order: { step: 12, sub: 2 },
  kind: "adjust",
  check: (input) => {
    const { args, explicit } = input
    const spec = mambaArchitectureOf(input.traits)
    if (spec === undefined || !isSm100(input) || args.attention_backend !== null) return undefined
    let backend: "triton" | "flashinfer" | "trtllm_mha" =
      spec.sm100Default === "qwen" ? "triton" : spec.sm100Default
    if (spec.sm100Default === "qwen") {
      const topk = args.speculative_eagle_topk
      const topkOneOrNone = topk === null || (topk === 1 && (args.page_size === null || args.page_size === 1))
      const spec = args.speculative_algorithm
      const genericWouldBeTrtllm = topkOneOrNone && (spec === null || explicit.has("speculative_eagle_topk"))
      const noBufferWithRadixNoSpec =
        args.mamba_scheduler_strategy === "no_buffer" && !args.disable_radix_cache && spec === null
      if (genericWouldBeTrtllm && !noBufferWithRadixNoSpec) backend = "trtllm_mha"
    }
    return Rule.adjust(
      { attention_backend: backend },
      `on SM100 SGLang picks the ${backend} attention backend for ${input.traits?.architecture}`,
      undefined
    )
  }
})

/** R20: NemotronH / Lfm2 cannot use triton attention. */
export const tritonForbidden = Rule.make({
  id: "R20.triton",
  title: "triton attention backend not supported by the hybrid architecture",
  versions: rangeOf("R20.triton"),
  order: { step: 12, sub: 3 },
  kind: "fatal",
  check: ({ args, traits }) => {
    const text = mambaArchitectureOf(traits)?.tritonForbidden
    if (text === undefined || args.attention_backend !== "triton") return undefined
    return Rule.violation({
      errorType: "AssertionError",
      message: `${traits?.architecture} cannot use the triton attention backend (its first layer may not be attention)`,
      engineMessage: text,
      fields: ["attention_backend"],
      fix: { attention_backend: "flashinfer" }
    })
  }
})

/** R27: SM100 with bf16 SSM state defaults the linear-attention decode kernel to flashinfer. */
export const linearAttnDecodeDefault = Rule.make({
  id: "R27.default",
  title: "SM100 linear-attention decode backend default",
  versions: rangeOf("R27.default"),
  order: { step: 13, sub: 20 },
  kind: "adjust",
  check: (input) => {
    const { args } = input
    const major = capability(input)?.major
    if (major === undefined || major < 10) return undefined
    if (args.linear_attn_decode_backend !== null || args.mamba_ssm_dtype !== "bfloat16") return undefined
    if (args.speculative_algorithm !== null) return undefined
    return Rule.adjust(
      { linear_attn_decode_backend: "flashinfer" },
      "SM100+ with bf16 SSM state uses the flashinfer linear-attention decode kernel",
      "SM100+ detected with mamba-ssm-dtype=bfloat16, defaulting --linear-attn-decode-backend to flashinfer."
    )
  }
})

/** R27: the flashinfer linear-attention decode kernel on SM100+ needs bf16 SSM state. */
export const linearAttnFlashinferDtype = Rule.make({
  id: "R27",
  title: "flashinfer linear-attention decode on SM100+ requires bf16 SSM state",
  versions: rangeOf("R27"),
  order: { step: 13, sub: 21 },
  kind: "fatal",
  check: (input) => {
    const { args } = input
    const major = capability(input)?.major
    const decode = args.linear_attn_decode_backend ?? args.linear_attn_backend
    if (major === undefined || major < 10 || decode !== "flashinfer" || args.mamba_ssm_dtype === "bfloat16") {
      return undefined
    }
    const dtype = args.mamba_ssm_dtype === null ? "None" : `'${args.mamba_ssm_dtype}'`
    return Rule.violation({
      errorType: "ValueError",
      message: "the flashinfer linear-attention decode kernel on SM100+ only handles a bfloat16 SSM state",
      engineMessage: `--linear-attn-decode-backend flashinfer on SM100+ requires --mamba-ssm-dtype bfloat16, got ${dtype}`,
      fields: ["linear_attn_decode_backend", "mamba_ssm_dtype"],
      fix: { mamba_ssm_dtype: "bfloat16" },
      alternatives: [{ linear_attn_decode_backend: "triton" }]
    })
  }
})

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  radixUnsupported,
  sm100HybridAttention,
  tritonForbidden,
  linearAttnDecodeDefault,
  linearAttnFlashinferDtype
]
