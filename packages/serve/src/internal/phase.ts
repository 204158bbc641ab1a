/**
 * The lifecycle phases of an SGLang launch, in the order a normal launch reaches them. Lives in
 * internal/ so that Failures and LaunchEvent can both use it; the public home is LaunchEvent.
 * @internal
 */
import { Schema } from "effect"

export const phases = [
  "starting",
  "args-resolved",
  "distributed-init",
  "weights-loading",
  "weights-loaded",
  "mamba-cache",
  "kv-cache",
  "cuda-graph",
  "draft-weights",
  "draft-cuda-graph",
  "http-up",
  "warmup",
  "ready"
] as const

export const Phase = Schema.Literal(...phases)
export type Phase = typeof Phase.Type

const order: Record<Phase, number> = Object.fromEntries(phases.map((phase, i) => [phase, i])) as Record<
  Phase,
  number
>

/** Position of a phase in lifecycle order (0 = "starting"). */
export const phaseIndex = (phase: Phase): number => order[phase]
