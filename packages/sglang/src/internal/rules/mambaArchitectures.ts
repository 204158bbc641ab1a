/**
 * Which architectures take SGLang's mamba radix-cache path (rules.md R20), keyed on
 * `architectures[0]` exactly as SGLang v0.5.11 does.
 *
 * @internal
 */
import type { ModelTraits } from "@mlops/serve/ModelTraits"

export interface MambaArchitecture {
  readonly extraBufferAllowed: boolean
  /** Default attention backend on SM100 when `--attention-backend` is unset; "qwen" = triton or trtllm_mha. */
  readonly sm100Default: "qwen" | "triton" | "flashinfer"
  /** SGLang's assertion text when the arch cannot use the triton attention backend. */
  readonly tritonForbidden: string | undefined
}

const qwen: MambaArchitecture = { extraBufferAllowed: true, sm100Default: "qwen", tritonForbidden: undefined }
const plain = (sm100Default: "triton" | "flashinfer"): MambaArchitecture => ({
  extraBufferAllowed: false,
  sm100Default,
  tritonForbidden: undefined
})

export const mambaArchitectures: Readonly<Record<string, MambaArchitecture>> = {
  Qwen3NextForCausalLM: qwen,
  Qwen3_5MoeForConditionalGeneration: qwen,
  Qwen3_5ForConditionalGeneration: qwen,
  NemotronHForCausalLM: {
    ...plain("flashinfer"),
    tritonForbidden:
      "NemotronHForCausalLM does not support triton attention backend,as the first layer might not be an attention layer"
  },
  FalconH1ForCausalLM: plain("triton"),
  JetNemotronForCausalLM: plain("triton"),
  JetVLMForConditionalGeneration: plain("triton"),
  GraniteMoeHybridForCausalLM: plain("triton"),
  Lfm2ForCausalLM: {
    ...plain("flashinfer"),
    tritonForbidden:
      "Lfm2ForCausalLM does not support triton attention backend, as the first layer might not be an attention layer"
  }
}

/** Archs whose radix cache SGLang switches off ("not yet supported"). */
export const radixCacheUnsupported: ReadonlySet<string> = new Set([
  "KimiLinearForCausalLM",
  "BailingMoeV2_5ForCausalLM"
])

/** The mamba radix-cache spec of the model, if it takes that path. */
export const mambaArchitectureOf = (traits: ModelTraits | undefined): MambaArchitecture | undefined => {
  if (traits === undefined) return undefined
  const spec = mambaArchitectures[traits.architecture]
  // GraniteMoeHybrid only counts when some layer is a mamba layer.
  if (traits.architecture === "GraniteMoeHybridForCausalLM" && traits.hybridLinearAttention === undefined) {
    return undefined
  }
  return spec
}
