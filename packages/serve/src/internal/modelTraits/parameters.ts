/**
 * Rough parameter count and weight size of a decoder-only checkpoint, from config fields only.
 * Good to a few percent for the supported families; norms, biases and vision towers are left out.
 *
 * @internal
 */
import type { HybridLinearAttention, Mla } from "../../ModelTraits.js"

export interface ShapeForEstimate {
  readonly hiddenSize: number
  readonly numLayers: number
  readonly numAttentionHeads: number
  readonly numKeyValueHeads: number
  readonly headDim: number
  readonly intermediateSize: number | undefined
  readonly vocabSize: number | undefined
  readonly tieWordEmbeddings: boolean
  readonly attentionOutputGate: boolean
  readonly mla: Mla | undefined
  readonly hybrid: HybridLinearAttention | undefined
  readonly experts:
    | {
        readonly count: number
        readonly intermediateSize: number
        readonly sharedIntermediateSize: number
        readonly firstDenseLayers: number
        readonly sparseStep: number
        readonly denseOnlyLayers: ReadonlyArray<number>
      }
    | undefined
  readonly mtpLayers: number
}

const fullAttentionParameters = (s: ShapeForEstimate): number => {
  const h = s.hiddenSize
  if (s.mla !== undefined) {
    const { kvLoraRank, qLoraRank, qkNopeHeadDim, qkRopeHeadDim, vHeadDim } = s.mla
    const qHead = qkNopeHeadDim + qkRopeHeadDim
    const q =
      qLoraRank === undefined
        ? h * s.numAttentionHeads * qHead
        : h * qLoraRank + qLoraRank * s.numAttentionHeads * qHead
    const kvA = h * (kvLoraRank + qkRopeHeadDim)
    const kvB = kvLoraRank * s.numAttentionHeads * (qkNopeHeadDim + vHeadDim)
    return q + kvA + kvB + s.numAttentionHeads * vHeadDim * h
  }
  const qOut = s.numAttentionHeads * s.headDim * (s.attentionOutputGate ? 2 : 1)
  const kv = 2 * s.numKeyValueHeads * s.headDim
  return h * qOut + h * kv + s.numAttentionHeads * s.headDim * h
}

const gdnParameters = (s: ShapeForEstimate, g: HybridLinearAttention): number => {
  const nk = g.numKeyHeads ?? 16
  const nv = g.numValueHeads ?? 32
  const qk = nk * (g.keyHeadDim ?? 128)
  const v = nv * (g.valueHeadDim ?? 128)
  const inProj = s.hiddenSize * (2 * qk + 2 * v) + s.hiddenSize * 2 * nv
  const conv = (2 * qk + v) * (g.convKernelDim ?? 4)
  return inProj + conv + v * s.hiddenSize + 2 * nv
}

const mlpParameters = (s: ShapeForEstimate, layer: number): number => {
  const h = s.hiddenSize
  const e = s.experts
  const sparse =
    e !== undefined &&
    layer >= e.firstDenseLayers &&
    !e.denseOnlyLayers.includes(layer) &&
    (layer + 1) % e.sparseStep === 0
  if (e !== undefined && sparse) {
    return e.count * 3 * h * e.intermediateSize + 3 * h * e.sharedIntermediateSize + h * e.count
  }
  return 3 * h * (s.intermediateSize ?? 4 * h)
}

/** Total and embedding parameter counts. */
export const estimateParameters = (
  s: ShapeForEstimate
): { readonly total: number; readonly embedding: number } => {
  const embedding = (s.vocabSize ?? 0) * s.hiddenSize * (s.tieWordEmbeddings ? 1 : 2)
  const linear = new Set(s.hybrid?.kind === "gdn" ? s.hybrid.layers : [])
  let body = 0
  for (let layer = 0; layer < s.numLayers; layer++) {
    const mixer = linear.has(layer) && s.hybrid ? gdnParameters(s, s.hybrid) : fullAttentionParameters(s)
    body += mixer + mlpParameters(s, layer)
  }
  // An MTP layer is one full-attention decoder layer plus the projection of [embedding; hidden].
  const lastLayer = Math.max(0, s.numLayers - 1)
  const mtpLayer = fullAttentionParameters(s) + mlpParameters(s, lastLayer) + 2 * s.hiddenSize * s.hiddenSize
  return { total: embedding + body + s.mtpLayers * mtpLayer, embedding }
}

const floatBytes: Readonly<Record<string, number>> = {
  bfloat16: 2,
  float16: 2,
  half: 2,
  bf16: 2,
  fp16: 2,
  float32: 4,
  float: 4,
  fp32: 4
}

const eightBit = new Set(["fp8", "modelopt_fp8", "w8a8_fp8", "w8a8_int8", "mxfp8", "fbgemm_fp8"])
const fourBit = new Set([
  "awq",
  "awq_marlin",
  "gptq",
  "gptq_marlin",
  "mxfp4",
  "modelopt_fp4",
  "petit_nvfp4",
  "w4afp8",
  "moe_wna16",
  "auto-round"
])

export const bytesPerParameter = (dtype: string | undefined): number => floatBytes[dtype ?? "bfloat16"] ?? 2

/** Bytes per quantized weight, or undefined when the method's width is unknown. */
export const quantizedBytes = (method: string | undefined, bits: number | undefined): number | undefined => {
  if (method === undefined) return undefined
  if (bits !== undefined && bits > 0) return bits / 8
  if (eightBit.has(method)) return 1
  if (fourBit.has(method)) return 0.5
  return undefined
}
