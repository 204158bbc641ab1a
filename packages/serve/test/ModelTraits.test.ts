import { readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as ModelTraits from "../src/ModelTraits.js"
import { deepseekV3, llama3_8b, modelConfigs, qwen3Next80bA3b, qwen36_27b } from "../src/SampleModels.js"

const fixtureDir = new URL("./fixtures/models/", import.meta.url)
const traitsOf = (config: unknown) => Either.getOrThrow(ModelTraits.fromConfigEither(config))
const reason = (config: unknown) => {
  const result = ModelTraits.fromConfigEither(config, "/m/config.json")
  assert.isTrue(Either.isLeft(result))
  return Either.isLeft(result) ? result.left : undefined
}

describe("ModelTraits", () => {
  it("the fixture files hold exactly the exported fixture objects", () => {
    for (const [name, config] of Object.entries(modelConfigs)) {
      const file = JSON.parse(readFileSync(new URL(`${name}.json`, fixtureDir), "utf8"))
      assert.deepStrictEqual(file, JSON.parse(JSON.stringify(config)))
    }
  })

  it.effect("Qwen3.6-27B-like: VLM wrapper read through text_config, 3 of 4 layers GDN, one MTP layer", () =>
    Effect.gen(function* () {
      const text = readFileSync(new URL("qwen3.6-27b.json", fixtureDir), "utf8")
      const t = yield* ModelTraits.fromJson(text)
      assert.strictEqual(t.architecture, "Qwen3_5ForConditionalGeneration")
      assert.strictEqual(t.modelType, "qwen3_5")
      assert.strictEqual(t.numLayers, 64)
      assert.strictEqual(t.hiddenSize, 5120)
      assert.strictEqual(t.numAttentionHeads, 24)
      assert.strictEqual(t.numKeyValueHeads, 4)
      assert.strictEqual(t.headDim, 256)
      assert.strictEqual(t.contextLength, 262144)
      assert.strictEqual(t.dtype, "bfloat16")
      const gdn = t.hybridLinearAttention!
      assert.strictEqual(gdn.kind, "gdn")
      assert.strictEqual(gdn.layers.length, 48)
      assert.deepStrictEqual(gdn.fullAttentionLayers.slice(0, 3), [3, 7, 11])
      assert.deepStrictEqual(gdn.layers.slice(0, 4), [0, 1, 2, 4])
      assert.deepStrictEqual(
        [gdn.numKeyHeads, gdn.numValueHeads, gdn.keyHeadDim, gdn.valueHeadDim],
        [16, 48, 128, 128]
      )
      assert.deepStrictEqual(t.mtp, {
        numLayers: 1,
        declaredLayers: 1,
        draftArchitecture: "Qwen3_5ForCausalLMMTP"
      })
      assert.isTrue(t.isMultimodal)
      assert.deepStrictEqual(t.vision, { layers: 27, hiddenSize: 1152 })
      assert.isFalse(t.isMoe)
      assert.isFalse(t.isMla)
      assert.isTrue(
        t.estimatedParameters > 26e9 && t.estimatedParameters < 28.5e9,
        `${t.estimatedParameters}`
      )
      assert.isTrue(Math.abs(t.estimatedWeightBytes - 2 * t.estimatedParameters) < 1e6)
    })
  )

  it("Qwen3-Next-80B-A3B-like: text-only GDN MoE with 512 experts, MTP from the architecture", () => {
    const t = traitsOf(qwen3Next80bA3b)
    assert.strictEqual(t.hybridLinearAttention?.layers.length, 36)
    assert.strictEqual(t.hybridLinearAttention?.fullAttentionLayers.length, 12)
    assert.deepStrictEqual(t.moe, { numExperts: 512, expertsPerToken: 10, moeIntermediateSize: 512 })
    assert.deepStrictEqual(t.mtp, {
      numLayers: 1,
      declaredLayers: undefined,
      draftArchitecture: "Qwen3NextForCausalLMMTP"
    })
    assert.isFalse(t.isMultimodal)
    assert.isTrue(t.estimatedParameters > 78e9 && t.estimatedParameters < 83e9, `${t.estimatedParameters}`)
  })

  it("Llama-3-8B-like: dense GQA, no hybrid layers, no MTP, head_dim from hidden/heads", () => {
    const t = traitsOf(llama3_8b)
    assert.strictEqual(t.hybridLinearAttention, undefined)
    assert.strictEqual(t.mtp, undefined)
    assert.strictEqual(t.headDim, 128)
    assert.strictEqual(t.numKeyValueHeads, 8)
    assert.strictEqual(t.contextLength, 8192)
    assert.isTrue(t.estimatedParameters > 7.9e9 && t.estimatedParameters < 8.1e9, `${t.estimatedParameters}`)
  })

  it("DeepSeek-V3-like: MLA + MoE, FP8 checkpoint, yarn with original length keeps max_position_embeddings", () => {
    const t = traitsOf(deepseekV3)
    assert.isTrue(t.isMla)
    assert.strictEqual(t.mla?.kvLoraRank, 512)
    assert.strictEqual(t.moe?.numExperts, 256)
    assert.strictEqual(t.quantization, "fp8")
    assert.strictEqual(t.contextLength, 163840)
    assert.deepStrictEqual(t.mtp, {
      numLayers: 1,
      declaredLayers: 1,
      draftArchitecture: "DeepseekV3ForCausalLMNextN"
    })
    assert.isTrue(t.estimatedParameters > 660e9 && t.estimatedParameters < 700e9, `${t.estimatedParameters}`)
    // FP8 weights: about one byte per parameter (embeddings stay bf16)
    assert.isTrue(t.estimatedWeightBytes < 1.01 * t.estimatedParameters)
  })

  it("a rope factor without an original length scales the context length", () => {
    const t = traitsOf({ ...llama3_8b, rope_scaling: { type: "linear", factor: 4 } })
    assert.strictEqual(t.contextLength, 32768)
  })

  it("unknown keys are ignored and nulls are treated as absent", () => {
    const t = traitsOf({ ...llama3_8b, some_future_key: { nested: true }, head_dim: null })
    assert.strictEqual(t.headDim, 128)
  })

  it("a config without architectures is rejected with the path", () => {
    const { architectures: _, ...rest } = llama3_8b
    const error = reason(rest)
    assert.strictEqual(error?._tag, "InvalidModelConfig")
    assert.strictEqual(error?.path, "/m/config.json")
    assert.include(error?.reason, "architectures")
  })

  it("a hybrid GDN config without full_attention_interval is rejected", () => {
    const { full_attention_interval: _, ...rest } = qwen3Next80bA3b
    assert.include(reason(rest)?.reason, "full_attention_interval")
  })

  it("a wrongly typed field is rejected with the schema's explanation", () => {
    assert.include(reason({ ...llama3_8b, hidden_size: "4096" })?.reason, "hidden_size")
  })

  it("a missing required size is rejected", () => {
    const { num_attention_heads: _, ...rest } = llama3_8b
    assert.include(reason(rest)?.reason, "num_attention_heads")
  })

  it.effect("text that is not JSON fails with InvalidModelConfig", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(ModelTraits.fromJson("{not json", "/x/config.json"))
      assert.strictEqual(error._tag, "InvalidModelConfig")
      assert.include(error.message, "/x/config.json")
      assert.include(error.reason, "not valid JSON")
    })
  )

  it("the text config wins over the wrapper's top level", () => {
    const t = traitsOf({ ...qwen36_27b, hidden_size: 1, text_config: { ...qwen36_27b.text_config } })
    assert.strictEqual(t.hiddenSize, 5120)
  })

  describe("the other architectures of model-config.md", () => {
    const dense = { hidden_size: 2048, num_hidden_layers: 8, num_attention_heads: 16, num_key_value_heads: 4 }

    it("Qwen3.6-35B-A3B-like MoE wrapper: GDN, multimodal, Qwen3.5 MTP draft, experts from text_config", () => {
      const t = traitsOf({
        architectures: ["Qwen3_5MoeForConditionalGeneration"],
        model_type: "qwen3_5_moe",
        text_config: {
          ...dense,
          full_attention_interval: 4,
          linear_num_value_heads: 32,
          num_experts: 256,
          num_experts_per_tok: 8,
          moe_intermediate_size: 512
        }
      })
      assert.strictEqual(t.hybridLinearAttention?.kind, "gdn")
      assert.deepStrictEqual(t.hybridLinearAttention?.fullAttentionLayers, [3, 7])
      assert.isTrue(t.isMultimodal)
      assert.strictEqual(t.mtp?.draftArchitecture, "Qwen3_5ForCausalLMMTP")
      assert.strictEqual(t.moe?.numExperts, 256)
    })

    it("SGLang ignores layer_types and mtp_num_hidden_layers for the Qwen family", () => {
      const t = traitsOf({
        ...qwen3Next80bA3b,
        // disagrees with full_attention_interval 4: SGLang goes by the interval
        layer_types: Array.from({ length: 48 }, () => "linear_attention"),
        mtp_num_hidden_layers: 3
      })
      assert.strictEqual(t.hybridLinearAttention?.fullAttentionLayers.length, 12)
      assert.strictEqual(t.hybridLinearAttention?.fullAttentionLayers[0], 3)
      assert.deepStrictEqual(t.mtp, {
        numLayers: 1,
        declaredLayers: 3,
        draftArchitecture: "Qwen3NextForCausalLMMTP"
      })
    })

    it("GraniteMoeHybrid is a mamba hybrid only when some layer_types entry is mamba", () => {
      const granite = { ...dense, architectures: ["GraniteMoeHybridForCausalLM"] }
      const hybrid = traitsOf({ ...granite, layer_types: ["mamba", "mamba", "attention", "mamba"] })
      assert.strictEqual(hybrid.hybridLinearAttention?.kind, "mamba2")
      assert.deepStrictEqual(hybrid.hybridLinearAttention?.layers, [0, 1, 3])
      assert.deepStrictEqual(hybrid.hybridLinearAttention?.fullAttentionLayers, [2])
      assert.isUndefined(
        traitsOf({ ...granite, layer_types: ["attention", "attention"] }).hybridLinearAttention
      )
    })

    it("NemotronH reads its hybrid_override_pattern and drafts with its own MTP module", () => {
      const t = traitsOf({
        ...dense,
        architectures: ["NemotronHForCausalLM"],
        hybrid_override_pattern: "M-M*-M"
      })
      assert.strictEqual(t.hybridLinearAttention?.kind, "mamba2")
      assert.deepStrictEqual(t.hybridLinearAttention?.fullAttentionLayers, [2])
      assert.strictEqual(t.mtp?.draftArchitecture, "NemotronHForCausalLMMTP")
      assert.strictEqual(t.mtp?.numLayers, 1)
    })

    it("FalconH1 and Lfm2 are mamba2 hybrids; KimiLinear is KDA; BailingMoeV2_5 is lightning with an MTP draft", () => {
      assert.strictEqual(
        traitsOf({ ...dense, architectures: ["FalconH1ForCausalLM"] }).hybridLinearAttention?.kind,
        "mamba2"
      )
      assert.strictEqual(
        traitsOf({ ...dense, architectures: ["Lfm2ForCausalLM"] }).hybridLinearAttention?.kind,
        "mamba2"
      )
      assert.strictEqual(
        traitsOf({ ...dense, architectures: ["KimiLinearForCausalLM"] }).hybridLinearAttention?.kind,
        "kda"
      )
      const bailing = traitsOf({
        ...dense,
        architectures: ["BailingMoeV2_5ForCausalLM"],
        num_nextn_predict_layers: 1
      })
      assert.strictEqual(bailing.hybridLinearAttention?.kind, "lightning")
      assert.deepStrictEqual(bailing.mtp, {
        numLayers: 1,
        declaredLayers: 1,
        draftArchitecture: "BailingMoeForCausalLMNextN"
      })
    })

    it("an architecture outside SGLang's MTP table has no MTP even if the config declares layers", () => {
      const t = traitsOf({ ...dense, architectures: ["Qwen3ForCausalLM"], num_nextn_predict_layers: 1 })
      assert.isUndefined(t.mtp)
      assert.isUndefined(t.hybridLinearAttention)
    })
  })
})
