/**
 * Architecture tables SGLang keys on (`config.architectures[0]`, exact string match), as read
 * from SGLang v0.5.11 (see model-config.md).
 *
 * @internal
 */

/** The kind of linear-attention / state-space mixer a hybrid model interleaves with full attention. */
export type HybridKind = "gdn" | "mamba2" | "kda" | "lightning"

/** Gated-DeltaNet hybrids (Qwen3-Next, Qwen3.5, Qwen3.6 and the Jet* family). */
const gdnArchitectures: ReadonlySet<string> = new Set([
  "Qwen3NextForCausalLM",
  "Qwen3_5ForConditionalGeneration",
  "Qwen3_5MoeForConditionalGeneration",
  "JetNemotronForCausalLM",
  "JetVLMForConditionalGeneration"
])

const gdnModelTypes: ReadonlySet<string> = new Set(["qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text"])

const mamba2Architectures: ReadonlySet<string> = new Set([
  "NemotronHForCausalLM",
  "FalconH1ForCausalLM",
  "GraniteMoeHybridForCausalLM",
  "Lfm2ForCausalLM"
])

export const hybridKindOf = (
  architecture: string,
  modelType: string | undefined,
  layerTypes: ReadonlyArray<string> | undefined
): HybridKind | undefined => {
  if (gdnArchitectures.has(architecture) || (modelType !== undefined && gdnModelTypes.has(modelType))) {
    return "gdn"
  }
  if (architecture === "GraniteMoeHybridForCausalLM") {
    // Granite hybrids count only when some layer really is a mamba layer.
    return layerTypes?.includes("mamba") ? "mamba2" : undefined
  }
  if (mamba2Architectures.has(architecture)) return "mamba2"
  if (architecture === "KimiLinearForCausalLM") return "kda"
  if (architecture === "BailingMoeV2_5ForCausalLM") return "lightning"
  return undefined
}

/**
 * Target architecture -> the draft architecture SGLang loads from the same checkpoint for
 * NEXTN/EAGLE without a draft path. Being in this table is what "MTP-capable" means to SGLang.
 */
export const mtpDraftArchitecture: Readonly<Record<string, string>> = {
  DeepseekV3ForCausalLM: "DeepseekV3ForCausalLMNextN",
  GlmMoeDsaForCausalLM: "DeepseekV3ForCausalLMNextN",
  Glm4MoeForCausalLM: "Glm4MoeForCausalLMNextN",
  Glm4MoeLiteForCausalLM: "Glm4MoeForCausalLMNextN",
  GlmOcrForConditionalGeneration: "GlmOcrForConditionalGenerationNextN",
  LongcatFlashForCausalLM: "LongcatFlashForCausalLMNextN",
  MiMoForCausalLM: "MiMoMTP",
  MiMoV2ForCausalLM: "MiMoV2MTP",
  MiMoV2FlashForCausalLM: "MiMoV2MTP",
  Step3p5ForCausalLM: "Step3p5MTP",
  BailingMoeForCausalLM: "BailingMoeForCausalLMNextN",
  BailingMoeV2ForCausalLM: "BailingMoeForCausalLMNextN",
  BailingMoeV2_5ForCausalLM: "BailingMoeForCausalLMNextN",
  Ernie4_5_MoeForCausalLM: "Ernie4_5_MoeForCausalLMMTP",
  Qwen3NextForCausalLM: "Qwen3NextForCausalLMMTP",
  Qwen3_5ForConditionalGeneration: "Qwen3_5ForCausalLMMTP",
  Qwen3_5MoeForConditionalGeneration: "Qwen3_5ForCausalLMMTP",
  ExaoneMoEForCausalLM: "ExaoneMoEForCausalLMMTP",
  NemotronHForCausalLM: "NemotronHForCausalLMMTP",
  HYV3ForCausalLM: "HYV3ForCausalLMNextN"
}

/** Draft architectures whose SGLang MTP module hard-codes exactly one layer. */
export const singleLayerMtpDrafts: ReadonlySet<string> = new Set([
  "Qwen3NextForCausalLMMTP",
  "Qwen3_5ForCausalLMMTP",
  "ExaoneMoEForCausalLMMTP",
  "NemotronHForCausalLMMTP"
])

/** Architectures SGLang lists as multimodal even when `vision_config` is missing. */
export const multimodalArchitectures: ReadonlySet<string> = new Set([
  "Qwen3_5ForConditionalGeneration",
  "Qwen3_5MoeForConditionalGeneration",
  "JetVLMForConditionalGeneration"
])
