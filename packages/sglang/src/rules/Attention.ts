/**
 * Attention backend and page size rules (rules.md R29-R31): the default backend by GPU and
 * model, backend-forced page sizes and hardware limits, the page size default.
 *
 * @since 0.1.0
 */
import { attentionBackendDefault } from "../internal/lifecycle/messages.js"
import { capability, isBlackwell, isHopper, isSm100, platformOf } from "../internal/rules/helpers.js"
import { rangeOf } from "../internal/rules/ranges.js"
import * as Rule from "../Rule.js"
import * as VersionRange from "../VersionRange.js"

/** R29: pick a backend when `--attention-backend` is unset. */
export const defaultBackend = Rule.make({
  id: "R29",
  title: "default attention backend",
  versions: rangeOf("R29"),
  order: { step: 13, sub: 1 },
  kind: "adjust",
  check: (input) => {
    const { args, traits, explicit } = input
    if (args.attention_backend !== null) return undefined
    const { prefill_attention_backend: prefill, decode_attention_backend: decode } = args
    if (prefill !== null && prefill === decode) {
      return Rule.adjust(
        { attention_backend: prefill },
        "prefill and decode backends agree, so they are the main one",
        undefined
      )
    }
    const platform = platformOf(input)
    if (platform === "cuda" && capability(input) === undefined) return undefined // unknown GPU: undecidable
    let backend: "fa3" | "flashinfer" | "trtllm_mha" | "aiter" | "triton"
    if (traits?.isMla) {
      backend = isHopper(input)
        ? "fa3"
        : isSm100(input)
          ? "flashinfer"
          : platform === "rocm"
            ? traits.numKeyValueHeads === 16 || traits.numKeyValueHeads === 128
              ? "aiter"
              : "triton"
            : "triton"
    } else {
      const topk = args.speculative_eagle_topk
      const topkOneOrNone = topk === null || (topk === 1 && (args.page_size === null || args.page_size === 1))
      const attentionSinks = traits?.architecture === "GptOssForCausalLM"
      if (isHopper(input) && topkOneOrNone) backend = "fa3"
      else if (
        isSm100(input) &&
        topkOneOrNone &&
        (args.speculative_algorithm === null || explicit.has("speculative_eagle_topk"))
      ) {
        backend = "trtllm_mha"
      } else if (platform === "rocm") backend = "aiter"
      else backend = attentionSinks ? "triton" : "flashinfer"
    }
    return Rule.adjust(
      { attention_backend: backend },
      `no --attention-backend given; SGLang picks ${backend} for this GPU and model`,
      attentionBackendDefault(backend)
    )
  }
})

const forcePage = (id: string, sub: number, backend: string, page: number, sglang: string): Rule.Rule =>
  Rule.make({
    id,
    title: `${backend} forces page size ${page}`,
    versions: rangeOf(id),
    order: { step: 13, sub },
    kind: "adjust",
    check: ({ args, version }) =>
      // a decode backend of its own from 0.4.10 on
      (args.attention_backend === backend ||
        (VersionRange.atLeast(version, "0.4.10") && args.decode_attention_backend === backend)) &&
      args.page_size !== page
        ? Rule.adjust({ page_size: page }, `${backend} works on pages of ${page} tokens`, sglang)
        : undefined
  })

/** R30: FlashMLA pages are 64 tokens. */
export const flashmlaPage = forcePage(
  "R30.flashmla",
  2,
  "flashmla",
  64,
  "FlashMLA only supports a page_size of 64, change page_size to 64."
)

/** R30: Cutlass MLA pages are 128 tokens. */
export const cutlassMlaPage = forcePage(
  "R30.cutlass-mla",
  3,
  "cutlass_mla",
  128,
  "Cutlass MLA only supports a page_size of 128, change page_size to 128."
)

/** R30: TRTLLM MLA is Blackwell-only, pages 32/64, limited KV dtypes. */
export const trtllmMla = Rule.make({
  id: "R30.trtllm-mla",
  title: "trtllm_mla backend constraints",
  versions: rangeOf("R30.trtllm-mla"),
  order: { step: 13, sub: 4 },
  kind: "fatal",
  check: (input) => {
    const { args } = input
    if (args.attention_backend !== "trtllm_mla") return undefined
    if (input.gpus !== undefined && !isBlackwell(input)) {
      return Rule.violation({
        errorType: "ValueError",
        message: "the trtllm_mla attention backend needs a Blackwell GPU (SM100/SM12x)",
        engineMessage:
          "TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). Please use a different backend.",
        fields: ["attention_backend"],
        fix: { attention_backend: isHopper(input) ? "fa3" : "triton" }
      })
    }
    if (!["fp8_e4m3", "fp4_e2m1", "bf16", "auto"].includes(args.kv_cache_dtype)) {
      return Rule.violation({
        errorType: "ValueError",
        message: `trtllm_mla cannot use --kv-cache-dtype ${args.kv_cache_dtype}`,
        engineMessage:
          "TensorRT-LLM MLA backend only supports kv-cache-dtype of fp8_e4m3, fp4_e2m1, bf16, or auto.",
        fields: ["kv_cache_dtype"],
        fix: { kv_cache_dtype: "auto" }
      })
    }
    if (args.page_size !== 32 && args.page_size !== 64) {
      return Rule.adjust(
        { page_size: 64 },
        "trtllm_mla works on pages of 32 or 64 tokens",
        `TensorRT-LLM MLA only supports page_size of 32 or 64, changing page_size from ${args.page_size ?? "None"} to 64.`
      )
    }
    return undefined
  }
})

/** R30: TRTLLM MHA hardware limits and page sizes. */
export const trtllmMha = Rule.make({
  id: "R30.trtllm-mha",
  title: "trtllm_mha backend constraints",
  versions: rangeOf("R30.trtllm-mha"),
  order: { step: 13, sub: 5 },
  kind: "fatal",
  check: (input) => {
    const { args } = input
    const prefill = args.prefill_attention_backend ?? args.attention_backend
    const decode = args.decode_attention_backend ?? args.attention_backend
    const major = capability(input)?.major
    // before 0.5.10 one check for any use of it (before 0.5.5 the main backend's even when prefill and
    // decode have their own): Blackwell (SM100) only
    const anyUse =
      prefill === "trtllm_mha" ||
      decode === "trtllm_mha" ||
      (!VersionRange.atLeast(input.version, "0.5.5") && args.attention_backend === "trtllm_mha")
    if (!anyUse) return undefined
    if (!VersionRange.atLeast(input.version, "0.5.10") && major !== undefined && major !== 10)
      return Rule.violation({
        errorType: "ValueError",
        message: "the trtllm_mha attention backend needs an SM100 (Blackwell) GPU",
        engineMessage:
          "TRTLLM MHA backend is only supported on Blackwell GPUs (SM100). Please use a different backend.",
        fields: ["attention_backend", "prefill_attention_backend", "decode_attention_backend"],
        fix: {
          attention_backend: "flashinfer",
          prefill_attention_backend: null,
          decode_attention_backend: null
        }
      })
    // from 0.5.10 the prefill and decode backends as resolved
    if (prefill !== "trtllm_mha" && decode !== "trtllm_mha") return undefined
    if (major !== undefined && prefill === "trtllm_mha" && major !== 10) {
      return Rule.violation({
        errorType: "ValueError",
        message: "trtllm_mha prefill needs an SM100 (Blackwell) GPU",
        engineMessage:
          "TRTLLM MHA backend for prefill is only supported on Blackwell GPUs (SM100). Please use a different prefill backend.",
        fields: ["attention_backend", "prefill_attention_backend"],
        fix:
          args.prefill_attention_backend === null
            ? { attention_backend: "flashinfer" }
            : { prefill_attention_backend: "flashinfer" }
      })
    }
    if (major !== undefined && decode === "trtllm_mha" && ![9, 10, 12].includes(major)) {
      return Rule.violation({
        errorType: "ValueError",
        message: "trtllm_mha decode needs Hopper (SM90) or Blackwell (SM100/SM120)",
        engineMessage:
          "TRTLLM MHA backend for decode is only supported on Hopper (SM90), Blackwell (SM100) and (SM120) GPUs. Please use a different decode backend.",
        fields: ["attention_backend", "decode_attention_backend"],
        fix:
          args.decode_attention_backend === null
            ? { attention_backend: "flashinfer" }
            : { decode_attention_backend: "flashinfer" }
      })
    }
    if (args.page_size !== 16 && args.page_size !== 32 && args.page_size !== 64) {
      return Rule.adjust(
        { page_size: 64 },
        "trtllm_mha works on pages of 16, 32 or 64 tokens",
        `TensorRT-LLM MHA only supports page_size of 16, 32 or 64, changing page_size from ${args.page_size ?? "None"} to 64.`
      )
    }
    return undefined
  }
})

/** R30: FA3 cannot use an fp8_e5m2 KV cache. */
export const fa3Fp8E5m2 = Rule.make({
  id: "R30.fa3-fp8",
  title: "fa3 with fp8_e5m2 KV cache falls back to triton",
  versions: rangeOf("R30.fa3-fp8"),
  order: { step: 13, sub: 6 },
  kind: "adjust",
  check: ({ args }) =>
    args.attention_backend === "fa3" && args.kv_cache_dtype === "fp8_e5m2"
      ? Rule.adjust(
          { attention_backend: "triton" },
          "FlashAttention3 reads FP8 KV only as e4m3",
          "FlashAttention3 only supports fp8_e4m3 if using FP8; Setting attention backend to triton."
        )
      : undefined
})

/** R31: page size default. */
export const defaultPageSize = Rule.make({
  id: "R31",
  title: "page size defaults to 1",
  versions: rangeOf("R31"),
  order: { step: 13, sub: 30 },
  kind: "adjust",
  check: (input) =>
    input.args.page_size === null
      ? Rule.adjust(
          { page_size: platformOf(input) === "musa" ? 64 : 1 },
          "no --page-size given and no backend forced one",
          undefined
        )
      : undefined
})

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [
  defaultBackend,
  flashmlaPage,
  cutlassMlaPage,
  trtllmMla,
  trtllmMha,
  fa3Fp8E5m2,
  defaultPageSize
]
