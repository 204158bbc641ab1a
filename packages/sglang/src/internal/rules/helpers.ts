/**
 * Small predicates shared by the rule families.
 *
 * @internal
 */

import type { Platform, RuleInput } from "../../Rule.js"
import * as Rule from "../../Rule.js"
import type { Field, ServerArgs } from "../../ServerArgs.js"
import { rangeOf } from "./ranges.js"

/** A rule at `step`/`sub` of SGLang's order, with its verified range (by id), for families of short checks. */
export const rule = (
  id: string,
  title: string,
  step: number,
  sub: number,
  kind: Rule.Kind,
  check: Rule.Rule["check"]
): Rule.Rule => Rule.make({ id, title, versions: rangeOf(id), order: { step, sub }, kind, check })

/** The largest divisor of `n` that is at most `limit` (at least 1): the nearest size that splits evenly. */
export const largestDivisorAtMost = (n: number, limit: number): number => {
  if (!Number.isSafeInteger(n) || n < 1 || limit < 1) return 1
  // O(min(limit, sqrt n)) steps, never O(n): a random command line can ask for 1e15 GPUs
  if (limit * limit <= n) {
    for (let d = Math.floor(limit); d > 1; d--) if (n % d === 0) return d
    return 1
  }
  // divisors come in pairs (d, n / d) with d <= sqrt(n)
  let best = 1
  for (let d = 1; d * d <= n; d++) {
    if (n % d !== 0) continue
    if (d <= limit && d > best) best = d
    const pair = n / d
    if (pair <= limit && pair > best) best = pair
  }
  return best
}

export const platformOf = (input: RuleInput): Platform => input.platform ?? "cuda"

/** Compute capability as numbers; undefined when the GPUs are unknown. */
export const capability = (
  input: RuleInput
): { readonly major: number; readonly minor: number } | undefined => {
  if (input.gpus === undefined || platformOf(input) !== "cuda") return undefined
  const [major, minor] = input.gpus.computeCapability.split(".").map(Number)
  if (major === undefined || Number.isNaN(major)) return undefined
  return { major, minor: minor === undefined || Number.isNaN(minor) ? 0 : minor }
}

export const isHopper = (input: RuleInput): boolean => capability(input)?.major === 9
export const isSm100 = (input: RuleInput): boolean => capability(input)?.major === 10
/** SM100 and SM12x. */
export const isBlackwell = (input: RuleInput): boolean => {
  const major = capability(input)?.major
  return major === 10 || major === 12
}

/** The EAGLE family of rules.md R10 (NEXTN is EAGLE after R1). */
export const isEagleFamily = (algorithm: ServerArgs["speculative_algorithm"]): boolean =>
  algorithm === "EAGLE" || algorithm === "EAGLE3" || algorithm === "STANDALONE" || algorithm === "NEXTN"

/**
 * A field of another release than 0.5.11, which the args' type (0.5.11's fields) does not name
 * (`mamba_radix_cache_strategy` from 0.5.14, `enable_ep_moe` before 0.5.0): the args hold every
 * field of the release checked.
 */
export const releaseField = (args: ServerArgs, field: string): unknown =>
  (args as unknown as Readonly<Record<string, unknown>>)[field]

/** The flag spelling of a field (`tp_size` -> `--tp-size`); canonical flags are named after their field. */
export const flagOf = (field: Field | string): string => `--${field.replaceAll("_", "-")}`

/** An environment flag the way SGLang's `get_bool_env_var` reads it. */
export const envBool = (input: RuleInput, name: string, fallback: boolean): boolean => {
  const raw = input.env[name]
  if (raw === undefined) return fallback
  return ["1", "true", "yes", "y", "on"].includes(raw.trim().toLowerCase())
}

/** The attention backends in use (main, prefill and decode overrides). */
export const attentionBackends = (args: ServerArgs): ReadonlyArray<string> =>
  [args.attention_backend, args.prefill_attention_backend, args.decode_attention_backend].filter(
    (b): b is NonNullable<typeof b> => b !== null
  )
