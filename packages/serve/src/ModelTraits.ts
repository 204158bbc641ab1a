/**
 * What SGLang needs to know about a checkpoint, read from its Hugging Face `config.json`:
 * architecture (the launch rules key on `architectures[0]`), hybrid linear-attention layout,
 * MTP capability, head counts, context length, MoE/MLA shape and a size estimate.
 *
 * @since 0.1.0
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import type { HybridKind } from "./internal/modelTraits/architectures.js"
import { deriveTraits } from "./internal/modelTraits/derive.js"

// ---- config.json subset ------------------------------------------------------------------

const OptNum = Schema.optional(Schema.NullOr(Schema.Number))
const OptStr = Schema.optional(Schema.NullOr(Schema.String))
const OptBool = Schema.optional(Schema.NullOr(Schema.Boolean))

/** Fields of a (text) model config that SGLang reads. Unknown keys are allowed and ignored. */
export const HfTextConfig = Schema.Struct({
  architectures: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  model_type: OptStr,
  torch_dtype: OptStr,
  dtype: OptStr,
  hidden_size: OptNum,
  num_hidden_layers: OptNum,
  num_attention_heads: OptNum,
  num_key_value_heads: OptNum,
  head_dim: OptNum,
  intermediate_size: OptNum,
  vocab_size: OptNum,
  tie_word_embeddings: OptBool,
  max_position_embeddings: OptNum,
  max_sequence_length: OptNum,
  seq_length: OptNum,
  max_seq_len: OptNum,
  model_max_length: OptNum,
  rope_scaling: Schema.optional(Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown }))),
  // hybrid linear attention (Qwen3-Next / Qwen3.5 / Qwen3.6)
  full_attention_interval: OptNum,
  layer_types: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  hybrid_override_pattern: OptStr,
  attn_output_gate: OptBool,
  linear_conv_kernel_dim: OptNum,
  linear_key_head_dim: OptNum,
  linear_value_head_dim: OptNum,
  linear_num_key_heads: OptNum,
  linear_num_value_heads: OptNum,
  // MoE
  num_experts: OptNum,
  num_local_experts: OptNum,
  n_routed_experts: OptNum,
  num_experts_per_tok: OptNum,
  moe_intermediate_size: OptNum,
  shared_expert_intermediate_size: OptNum,
  n_shared_experts: OptNum,
  first_k_dense_replace: OptNum,
  decoder_sparse_step: OptNum,
  mlp_only_layers: Schema.optional(Schema.NullOr(Schema.Array(Schema.Number))),
  // MLA
  kv_lora_rank: OptNum,
  q_lora_rank: OptNum,
  qk_nope_head_dim: OptNum,
  qk_rope_head_dim: OptNum,
  v_head_dim: OptNum,
  // MTP
  num_nextn_predict_layers: OptNum,
  mtp_num_hidden_layers: OptNum
})
export type HfTextConfig = typeof HfTextConfig.Type

/** The vision tower fields used by the memory rules (R33). */
export const HfVisionConfig = Schema.Struct({
  depth: OptNum,
  num_hidden_layers: OptNum,
  hidden_size: OptNum
})

export const HfQuantizationConfig = Schema.Struct({
  quant_method: OptStr,
  bits: OptNum
})

/** A `config.json`: text fields at the top level, or nested under `text_config` (VLM wrappers). */
export const HfConfig = Schema.Struct({
  ...HfTextConfig.fields,
  text_config: Schema.optional(Schema.NullOr(HfTextConfig)),
  vision_config: Schema.optional(Schema.NullOr(HfVisionConfig)),
  quantization_config: Schema.optional(Schema.NullOr(HfQuantizationConfig))
})
export type HfConfig = typeof HfConfig.Type

// ---- traits ------------------------------------------------------------------------------

export type { HybridKind }

/** Layout of a hybrid model's linear-attention (state-space) layers. */
export interface HybridLinearAttention {
  readonly kind: HybridKind
  /** 0-based ids of linear-attention (mamba/GDN) layers. */
  readonly layers: ReadonlyArray<number>
  /** 0-based ids of full-attention layers. */
  readonly fullAttentionLayers: ReadonlyArray<number>
  /** GDN only (undefined otherwise): key/value head counts and dims of the linear layers. */
  readonly numKeyHeads: number | undefined
  readonly numValueHeads: number | undefined
  readonly keyHeadDim: number | undefined
  readonly valueHeadDim: number | undefined
  readonly convKernelDim: number | undefined
}

export interface Mtp {
  /** Layers SGLang's draft module uses (1 for the Qwen families whatever the config says). */
  readonly numLayers: number
  /** Layers the config declares (`mtp_num_hidden_layers` / `num_nextn_predict_layers`), if any. */
  readonly declaredLayers: number | undefined
  readonly draftArchitecture: string
}

export interface Moe {
  readonly numExperts: number
  readonly expertsPerToken: number | undefined
  readonly moeIntermediateSize: number | undefined
}

export interface Mla {
  readonly kvLoraRank: number
  readonly qLoraRank: number | undefined
  readonly qkNopeHeadDim: number
  readonly qkRopeHeadDim: number
  readonly vHeadDim: number
}

export interface Vision {
  readonly layers: number
  readonly hiddenSize: number
}

export interface ModelTraits {
  /** `architectures[0]`: the string SGLang's launch rules compare against. */
  readonly architecture: string
  readonly architectures: ReadonlyArray<string>
  readonly modelType: string | undefined
  readonly hiddenSize: number
  readonly numLayers: number
  readonly numAttentionHeads: number
  readonly numKeyValueHeads: number
  readonly headDim: number
  readonly intermediateSize: number | undefined
  readonly vocabSize: number | undefined
  /** Derived maximum context length (what `--context-length` may not exceed). */
  readonly contextLength: number
  readonly dtype: string | undefined
  /** `quantization_config.quant_method`, if the checkpoint is pre-quantized. */
  readonly quantization: string | undefined
  readonly isMla: boolean
  readonly mla: Mla | undefined
  readonly isMoe: boolean
  readonly moe: Moe | undefined
  readonly isMultimodal: boolean
  readonly vision: Vision | undefined
  readonly hybridLinearAttention: HybridLinearAttention | undefined
  readonly mtp: Mtp | undefined
  /** Rough parameter count (embeddings, attention/GDN/MLA, MLP/experts, MTP layers; no vision tower). */
  readonly estimatedParameters: number
  /** Rough checkpoint weight size in bytes from dtype / quantization. */
  readonly estimatedWeightBytes: number
}

// ---- errors ------------------------------------------------------------------------------

/** A config.json that cannot describe a model SGLang could load. @category errors */
export class InvalidModelConfig extends Schema.TaggedError<InvalidModelConfig>()("InvalidModelConfig", {
  path: Schema.optional(Schema.String),
  reason: Schema.String
}) {
  override get message() {
    return `${this.path ?? "config.json"}: ${this.reason}`
  }
}

// ---- constructors ------------------------------------------------------------------------

const decodeConfig = Schema.decodeUnknownEither(HfConfig)

/** Pure decode: a parsed config.json object -> traits, or why it is unusable. */
export const fromConfigEither = (
  config: unknown,
  path?: string
): Either.Either<ModelTraits, InvalidModelConfig> =>
  Either.flatMap(
    Either.mapLeft(
      decodeConfig(config),
      (error) =>
        new InvalidModelConfig({
          ...(path === undefined ? {} : { path }),
          reason: ParseResult.TreeFormatter.formatErrorSync(error)
        })
    ),
    (decoded) =>
      Either.mapLeft(
        deriveTraits(decoded),
        (reason) => new InvalidModelConfig({ ...(path === undefined ? {} : { path }), reason })
      )
  )

/** A parsed config.json object -> traits. */
export const fromConfig: (config: unknown, path?: string) => Effect.Effect<ModelTraits, InvalidModelConfig> =
  Effect.fn("ModelTraits.fromConfig")(function* (config: unknown, path?: string) {
    return yield* fromConfigEither(config, path)
  })

/** The text of a config.json -> traits. */
export const fromJson: (text: string, path?: string) => Effect.Effect<ModelTraits, InvalidModelConfig> =
  Effect.fn("ModelTraits.fromJson")(function* (text: string, path?: string) {
    const parsed = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (error) =>
        new InvalidModelConfig({
          ...(path === undefined ? {} : { path }),
          reason: `not valid JSON: ${error instanceof Error ? error.message : String(error)}`
        })
    })
    return yield* fromConfigEither(parsed, path)
  })
