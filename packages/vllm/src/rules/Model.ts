/**
 * Checks of vllm/config/model.py: the model's shape against the parallel sizes, its context
 * length, its quantization.
 *
 * @since 0.1.0
 */
import { knownMethods } from "../internal/rules/quantizationMethods.js"
import { error, num, on, type Rule } from "../Rule.js"

/**
 * The largest tensor-parallel size not above `limit` that divides the heads and that the KV
 * heads split by or replicate to (vLLM's QKV layer needs one or the other).
 */
const largestTp = (heads: number, kvHeads: number, limit: number): number => {
  for (let d = Math.min(heads, limit); d > 1; d--)
    if (heads % d === 0 && (kvHeads % d === 0 || d % kvHeads === 0)) return d
  return 1
}

/** @category rules */
export const headsDivisibleByTp: Rule = {
  id: "model.heads-divisible-by-tp",
  raisedIn: "vllm/config/model.py (verify_with_parallel_config)",
  text: "Total number of attention heads ({}) must be divisible by tensor parallel size ({}).",
  releases: { from: "0.11", until: null },
  needs: ["tensor_parallel_size"],
  check: (input) => {
    const heads = input.model?.numAttentionHeads
    const tp = num(input, "tensor_parallel_size") ?? 1
    if (heads === undefined || heads % tp === 0) return undefined
    const fixed = largestTp(heads, input.model?.numKeyValueHeads ?? heads, tp)
    return error(
      `Total number of attention heads (${heads}) must be divisible by tensor parallel size (${tp}).`,
      `the model has ${heads} attention heads, which ${tp} GPUs cannot share evenly; ${fixed} can`,
      ["tensor_parallel_size"],
      { tensor_parallel_size: fixed }
    )
  }
}

/** @category rules */
export const expertsForExpertParallel: Rule = {
  id: "model.expert-parallel-needs-experts",
  raisedIn: "vllm/config/model.py (verify_with_parallel_config)",
  text: "Number of experts in the model must be greater than 0 when expert parallelism is enabled.",
  releases: { from: "0.11", until: null },
  needs: ["enable_expert_parallel"],
  check: (input) =>
    input.model === undefined || input.model.moe !== undefined || !on(input, "enable_expert_parallel")
      ? undefined
      : error(
          "Number of experts in the model must be greater than 0 when expert parallelism is enabled.",
          `${input.model.architecture} is not a mixture-of-experts model, so there are no experts to spread`,
          ["enable_expert_parallel"],
          { enable_expert_parallel: false }
        )
}

/** vLLM's quantization names compare after lower-casing; `compressed_tensors` is the same method. */
const normalised = (method: string) => method.toLowerCase().replaceAll("_", "-")

/** @category rules */
export const quantizationMatchesModel: Rule = {
  id: "model.quantization-matches-config",
  raisedIn: "vllm/config/model.py (_verify_quantization)",
  text: "Quantization method specified in the model config ({}) does not match the quantization method specified in the `quantization` argument ({}).",
  releases: { from: "0.11", until: null },
  needs: ["quantization"],
  check: (input) => {
    const inModel = input.model?.quantization
    const given = input.values.quantization
    if (inModel === undefined || typeof given !== "string") return undefined
    // vLLM lets a Marlin (or other kernel) variant override the checkpoint's method
    const compatible =
      normalised(given) === normalised(inModel) ||
      normalised(given).startsWith(`${normalised(inModel)}-`) ||
      normalised(given) === `${normalised(inModel)}marlin`
    if (compatible || given.endsWith("_marlin") || given === "bitblas") return undefined
    return error(
      `Quantization method specified in the model config (${inModel}) does not match the quantization method specified in the \`quantization\` argument (${given}).`,
      `the checkpoint is quantized with ${inModel}; --quantization ${given} cannot load it`,
      ["quantization"],
      { quantization: inModel }
    )
  }
}

/** @category rules */
export const knownQuantization: Rule = {
  id: "model.unknown-quantization",
  raisedIn: "vllm/config/model.py (_verify_quantization)",
  text: "Unknown quantization method: {}. Must be one of {}.",
  releases: { from: "0.11", until: null },
  needs: ["quantization"],
  check: (input) => {
    const given = input.values.quantization
    const methods = knownMethods(input.release)
    if (typeof given !== "string" || methods.includes(given)) return undefined
    const fromModel = input.model?.quantization
    return error(
      `Unknown quantization method: ${given}. Must be one of [${methods.map((m) => `'${m}'`).join(", ")}].`,
      `vLLM ${input.release} has no quantization method ${given}`,
      ["quantization"],
      // the checkpoint's own method when it has one, else none (load unquantized weights)
      { quantization: fromModel !== undefined && methods.includes(fromModel) ? fromModel : null }
    )
  }
}

const LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"

/** @category rules */
export const maxModelLenWithinModel: Rule = {
  id: "model.max-model-len-within-derived",
  raisedIn: "vllm/config/model.py (_get_and_verify_max_len)",
  text: "User-specified max_model_len ({}) is greater than the derived max_model_len ({}={} or model_max_length={} in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds error.",
  releases: { from: "0.11", until: null },
  needs: ["max_model_len"],
  check: (input) => {
    const given = num(input, "max_model_len")
    const derived = input.model?.contextLength
    if (given === undefined || given <= 0 || derived === undefined || given <= derived) return undefined
    if (input.env[LONG_ENV] === "1") return undefined
    return error(
      `User-specified max_model_len (${given}) is greater than the derived max_model_len (max_position_embeddings=${derived} or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var ${LONG_ENV}=1.`,
      `the model is trained for ${derived} tokens of context; ${given} is more`,
      ["max_model_len"],
      { max_model_len: derived },
      `set ${LONG_ENV}=1 in the server's environment to go past it (outputs beyond ${derived} tokens may be garbage)`
    )
  }
}
