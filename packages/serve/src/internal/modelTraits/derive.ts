/**
 * Decoded config.json -> ModelTraits, following how SGLang v0.5.11 reads the fields
 * (text config first, `full_attention_interval` for the GDN layer split, `architectures[0]`).
 *
 * @internal
 */
import { Either } from "effect"
import type {
  HfConfig,
  HfTextConfig,
  HybridLinearAttention,
  Mla,
  ModelTraits,
  Moe,
  Mtp
} from "../../ModelTraits.js"
import {
  hybridKindOf,
  mtpDraftArchitecture,
  multimodalArchitectures,
  singleLayerMtpDrafts
} from "./architectures.js"
import { bytesPerParameter, estimateParameters, quantizedBytes } from "./parameters.js"

type TextKey = keyof HfTextConfig

const contextLengthKeys = [
  "max_sequence_length",
  "seq_length",
  "max_seq_len",
  "model_max_length",
  "max_position_embeddings"
] as const

const range = (n: number): Array<number> => Array.from({ length: n }, (_, i) => i)

export const deriveTraits = (config: HfConfig): Either.Either<ModelTraits, string> => {
  const text = config.text_config ?? undefined
  // The text config wins; the wrapper's top level fills what it lacks (e.g. tie_word_embeddings).
  const pick = <K extends TextKey>(key: K): NonNullable<HfTextConfig[K]> | undefined =>
    (text?.[key] ?? config[key] ?? undefined) as NonNullable<HfTextConfig[K]> | undefined

  const architectures = config.architectures ?? text?.architectures ?? []
  const architecture = architectures[0]
  if (architecture === undefined) return Either.left("`architectures` is missing or empty")
  const modelType = config.model_type ?? text?.model_type ?? undefined

  const required = (key: "hidden_size" | "num_hidden_layers" | "num_attention_heads"): number | string => {
    const value = pick(key)
    if (value === undefined) return `\`${key}\` is missing`
    if (!Number.isInteger(value) || value <= 0) return `\`${key}\` must be a positive integer, got ${value}`
    return value
  }
  const hiddenSize = required("hidden_size")
  const numLayers = required("num_hidden_layers")
  const numAttentionHeads = required("num_attention_heads")
  for (const v of [hiddenSize, numLayers, numAttentionHeads]) if (typeof v === "string") return Either.left(v)
  const h = hiddenSize as number
  const layers = numLayers as number
  const heads = numAttentionHeads as number
  const numKeyValueHeads = pick("num_key_value_heads") ?? heads
  const headDim = pick("head_dim") ?? Math.floor(h / heads)

  // Context length: first length key found, scaled by a rope factor unless the scaling already
  // records the original length (yarn with original_max_position_embeddings, llama3).
  const rope = pick("rope_scaling")
  let ropeFactor = 1
  if (rope !== undefined) {
    const factor = typeof rope.factor === "number" ? rope.factor : 1
    const keepsOriginal = "original_max_position_embeddings" in rope || rope.rope_type === "llama3"
    ropeFactor = keepsOriginal ? 1 : factor
  }
  const baseLength = contextLengthKeys.map((k) => pick(k)).find((v) => v !== undefined) ?? 2048
  const contextLength = Math.floor(ropeFactor * baseLength)

  const layerTypes = pick("layer_types")
  const kind = hybridKindOf(architecture, modelType, layerTypes)
  let hybridLinearAttention: HybridLinearAttention | undefined
  if (kind === "gdn") {
    const interval = pick("full_attention_interval")
    if (interval === undefined || !Number.isInteger(interval) || interval <= 0) {
      return Either.left(
        `${architecture} is a hybrid GDN model but \`full_attention_interval\` is missing or invalid (SGLang derives the layer split from it)`
      )
    }
    const full = range(layers).filter((i) => (i + 1) % interval === 0)
    hybridLinearAttention = {
      kind,
      layers: range(layers).filter((i) => (i + 1) % interval !== 0),
      fullAttentionLayers: full,
      numKeyHeads: pick("linear_num_key_heads") ?? 16,
      numValueHeads: pick("linear_num_value_heads") ?? 32,
      keyHeadDim: pick("linear_key_head_dim") ?? 128,
      valueHeadDim: pick("linear_value_head_dim") ?? 128,
      convKernelDim: pick("linear_conv_kernel_dim") ?? 4
    }
  } else if (kind !== undefined) {
    const pattern = pick("hybrid_override_pattern")
    const isAttention = (t: string) => t === "attention" || t === "full_attention" || t === "*"
    const types = pattern !== undefined ? [...pattern].filter((c) => c !== "-") : (layerTypes ?? [])
    hybridLinearAttention = {
      kind,
      layers: range(types.length).filter((i) => !isAttention(types[i]!)),
      fullAttentionLayers: range(types.length).filter((i) => isAttention(types[i]!)),
      numKeyHeads: undefined,
      numValueHeads: undefined,
      keyHeadDim: undefined,
      valueHeadDim: undefined,
      convKernelDim: undefined
    }
  }

  const draftArchitecture = mtpDraftArchitecture[architecture]
  const declaredLayers = pick("mtp_num_hidden_layers") ?? pick("num_nextn_predict_layers")
  const mtp: Mtp | undefined =
    draftArchitecture === undefined
      ? undefined
      : {
          numLayers: singleLayerMtpDrafts.has(draftArchitecture) ? 1 : (declaredLayers ?? 1),
          declaredLayers,
          draftArchitecture
        }

  const numExperts = pick("num_experts") ?? pick("n_routed_experts") ?? pick("num_local_experts") ?? 0
  const moe: Moe | undefined =
    numExperts > 0
      ? {
          numExperts,
          expertsPerToken: pick("num_experts_per_tok"),
          moeIntermediateSize: pick("moe_intermediate_size")
        }
      : undefined

  const kvLoraRank = pick("kv_lora_rank")
  const mla: Mla | undefined =
    kvLoraRank !== undefined && kvLoraRank > 0
      ? {
          kvLoraRank,
          qLoraRank: pick("q_lora_rank"),
          qkNopeHeadDim: pick("qk_nope_head_dim") ?? 128,
          qkRopeHeadDim: pick("qk_rope_head_dim") ?? 64,
          vHeadDim: pick("v_head_dim") ?? 128
        }
      : undefined

  const visionConfig = config.vision_config ?? undefined
  const visionLayers = visionConfig?.depth ?? visionConfig?.num_hidden_layers ?? undefined
  const visionHidden = visionConfig?.hidden_size ?? undefined
  const vision =
    visionLayers !== undefined && visionHidden !== undefined
      ? { layers: visionLayers, hiddenSize: visionHidden }
      : undefined

  const moeIntermediate = moe?.moeIntermediateSize ?? pick("intermediate_size") ?? 4 * h
  const estimate = estimateParameters({
    hiddenSize: h,
    numLayers: layers,
    numAttentionHeads: heads,
    numKeyValueHeads,
    headDim,
    intermediateSize: pick("intermediate_size"),
    vocabSize: pick("vocab_size"),
    tieWordEmbeddings: pick("tie_word_embeddings") ?? false,
    attentionOutputGate: pick("attn_output_gate") ?? kind === "gdn",
    mla,
    hybrid: hybridLinearAttention,
    experts:
      moe === undefined
        ? undefined
        : {
            count: moe.numExperts,
            intermediateSize: moeIntermediate,
            sharedIntermediateSize:
              pick("shared_expert_intermediate_size") ?? (pick("n_shared_experts") ?? 0) * moeIntermediate,
            firstDenseLayers: pick("first_k_dense_replace") ?? 0,
            sparseStep: pick("decoder_sparse_step") ?? 1,
            denseOnlyLayers: pick("mlp_only_layers") ?? []
          },
    mtpLayers: mtp?.numLayers ?? 0
  })

  const dtype = pick("torch_dtype") ?? pick("dtype")
  const quantConfig = config.quantization_config ?? undefined
  const quantization = quantConfig?.quant_method ?? undefined
  const floatWidth = bytesPerParameter(dtype)
  const weightWidth = quantizedBytes(quantization, quantConfig?.bits ?? undefined) ?? floatWidth
  const estimatedWeightBytes = Math.round(
    estimate.embedding * floatWidth + (estimate.total - estimate.embedding) * weightWidth
  )

  return Either.right({
    architecture,
    architectures,
    modelType,
    hiddenSize: h,
    numLayers: layers,
    numAttentionHeads: heads,
    numKeyValueHeads,
    headDim,
    intermediateSize: pick("intermediate_size"),
    vocabSize: pick("vocab_size"),
    contextLength,
    dtype,
    quantization,
    isMla: mla !== undefined,
    mla,
    isMoe: moe !== undefined,
    moe,
    isMultimodal: visionConfig !== undefined || multimodalArchitectures.has(architecture),
    vision,
    hybridLinearAttention,
    mtp,
    estimatedParameters: estimate.total,
    estimatedWeightBytes
  })
}
