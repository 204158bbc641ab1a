/**
 * Checks that SGLang only makes when the scheduler builds the model (after `ServerArgs`, in
 * every rank): head counts and GDN state shapes split over the attention TP group, and the
 * Blackwell attention backends for hybrid GDN models (rules.md R28, model-config.md §3).
 * Decidable offline from config.json, so they are reported with the launch-time rules.
 *
 * @since 0.1.0
 */
import { isBlackwell, largestDivisorAtMost } from "../internal/rules/helpers.js"
import { rangeOf } from "../internal/rules/ranges.js"
import * as Rule from "../Rule.js"

/** The size of the attention tensor-parallel group. */
const attentionTp = (args: Rule.RuleInput["args"]): number =>
  args.enable_dp_attention && args.dp_size > 1
    ? Math.max(1, Math.floor(args.tp_size / args.dp_size))
    : args.tp_size

const notDivisible = (
  count: number,
  tp: number,
  what: string,
  fields: ReadonlyArray<"tp_size">
): Rule.Violation =>
  Rule.violation({
    errorType: "AssertionError",
    message: `${what} (${count}) cannot be split over ${tp} attention-TP ranks; use a tp size that divides ${count}`,
    engineMessage: `${count} is not divisible by ${tp}`,
    fields,
    fix: { tp_size: largestDivisorAtMost(count, tp) }
  })

/** Attention heads must split evenly over the attention TP group. */
export const attentionHeads = Rule.make({
  id: "R37.heads",
  title: "attention heads divisible by attention TP size",
  versions: rangeOf("R37.heads"),
  order: { step: 20, sub: 1 },
  kind: "fatal",
  check: ({ args, traits }) => {
    const tp = attentionTp(args)
    if (traits === undefined || tp <= 1 || traits.numAttentionHeads % tp === 0) return undefined
    return notDivisible(traits.numAttentionHeads, tp, "the model's attention heads", ["tp_size"])
  }
})

/** GDN state shapes: value heads and the conv dimension must split evenly. */
export const gdnHeads = Rule.make({
  id: "R37.gdn-heads",
  title: "GDN value heads and conv dim divisible by attention TP size",
  versions: rangeOf("R37.gdn-heads"),
  order: { step: 20, sub: 2 },
  kind: "fatal",
  check: ({ args, traits }) => {
    const gdn = traits?.hybridLinearAttention
    const tp = attentionTp(args)
    if (gdn?.kind !== "gdn" || tp <= 1) return undefined
    const valueHeads = gdn.numValueHeads ?? 32
    if (valueHeads % tp !== 0) return notDivisible(valueHeads, tp, "the GDN value heads", ["tp_size"])
    const convDim =
      2 * (gdn.numKeyHeads ?? 16) * (gdn.keyHeadDim ?? 128) + valueHeads * (gdn.valueHeadDim ?? 128)
    if (convDim % tp !== 0) return notDivisible(convDim, tp, "the GDN conv dimension", ["tp_size"])
    return undefined
  }
})

const blackwellGdnBackends = new Set(["triton", "trtllm_mha", "fa4", "flashinfer"])

/** R28: hybrid GDN models on Blackwell need one of four attention backends. */
export const blackwellGdnBackend = Rule.make({
  id: "R28",
  title: "hybrid GDN attention backends on Blackwell",
  versions: rangeOf("R28"),
  order: { step: 20, sub: 3 },
  kind: "fatal",
  check: (input) => {
    const backend = input.args.attention_backend
    if (input.traits?.hybridLinearAttention?.kind !== "gdn" || !isBlackwell(input) || backend === null)
      return undefined
    if (blackwellGdnBackends.has(backend)) return undefined
    return Rule.violation({
      errorType: "AssertionError",
      message: `--attention-backend ${backend} cannot run a hybrid GDN model on Blackwell`,
      engineMessage:
        "triton, trtllm_mha, fa4, or flashinfer backend are the only supported backends on Blackwell GPUs for hybrid GDN models, use --attention-backend to specify the backend.",
      fields: ["attention_backend"],
      fix: { attention_backend: "triton" }
    })
  }
})

/** This family, in SGLang's order. */
export const rules: ReadonlyArray<Rule.Rule> = [attentionHeads, gdnHeads, blackwellGdnBackend]
