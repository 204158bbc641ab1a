/**
 * Run every pre-load check on a `vllm serve` command line: every problem at once, each with
 * vLLM's own words, and the fixed command (the user's words with the fixes applied, checked
 * again until it passes).
 *
 * @since 0.1.0
 */
import type { ModelTraits } from "@mlops/serve/ModelTraits"
import { Effect } from "effect"
import * as Argv from "./Argv.js"
import type { VllmArgvError } from "./ArgvErrors.js"
import * as Catalogue from "./Catalogue.js"
import { type CheckInput, type Finding, type GpuFacts, inRelease, type Rule } from "./Rule.js"
import * as Rules from "./Rules.js"

/** A finding with the rule that made it. @category models */
export interface Problem extends Finding {
  readonly ruleId: string
  readonly raisedIn: string
}

/** @category models */
export interface CheckContext {
  readonly model: ModelTraits | undefined
  readonly gpus: GpuFacts | undefined
  readonly env?: Readonly<Record<string, string>>
  readonly catalogue?: Catalogue.Catalogue
  /** Rules to run (default: all). */
  readonly rules?: ReadonlyArray<Rule>
}

/** What the checks say about a set of values. @category models */
export interface Verdict {
  readonly errors: ReadonlyArray<Problem>
  readonly warnings: ReadonlyArray<Problem>
  /** Every error's fix merged (dest → value); empty when there are no errors. */
  readonly fix: Readonly<Record<string, unknown>>
  /** The dests given, with the fixes applied. */
  readonly fixedValues: Readonly<Record<string, unknown>>
  readonly fixedGiven: ReadonlyArray<string>
  /** Whether the values with `fix` pass every check (false when an error has no fix). */
  readonly resolves: boolean
  /** How many rules applied (this release's, whose flags exist). */
  readonly rulesRun: number
}

const applicable = (context: CheckContext) => {
  const catalogue = context.catalogue ?? Catalogue.latest
  return (context.rules ?? Rules.all).filter(
    (rule) =>
      inRelease(rule, catalogue.snapshot.near) && rule.needs.every((dest) => catalogue.byDest.has(dest))
  )
}

const findings = (
  rules: ReadonlyArray<Rule>,
  values: Readonly<Record<string, unknown>>,
  given: ReadonlyArray<string>,
  context: CheckContext
): ReadonlyArray<Problem> => {
  const input: CheckInput = {
    values,
    given: new Set(given),
    model: context.model,
    gpus: context.gpus,
    env: context.env ?? {},
    release: (context.catalogue ?? Catalogue.latest).snapshot.near
  }
  return rules.flatMap((rule) => {
    const finding = rule.check(input)
    return finding === undefined ? [] : [{ ...finding, ruleId: rule.id, raisedIn: rule.raisedIn }]
  })
}

/**
 * Check decoded values: the problems, and the fix that clears the errors (applied and checked
 * again, up to four rounds: one fix can reveal the next problem).
 *
 * @category checking
 */
export const verdict = (decoded: Argv.Decoded, context: CheckContext): Verdict => {
  const rules = applicable(context)
  const first = findings(rules, decoded.values, decoded.given, context)
  const errors = first.filter((p) => p.severity === "error")
  const warnings = first.filter((p) => p.severity === "warning")
  let values = decoded.values
  let given = decoded.given
  let fix: Record<string, unknown> = {}
  let remaining: ReadonlyArray<Problem> = errors
  for (let round = 0; round < 4 && remaining.length > 0; round++) {
    if (remaining.some((e) => Object.keys(e.fix).length === 0)) break
    const step = Object.assign({}, ...remaining.map((e) => e.fix)) as Record<string, unknown>
    fix = { ...fix, ...step }
    values = { ...values, ...step }
    given = [...given, ...Object.keys(step).filter((dest) => !given.includes(dest))]
    remaining = findings(rules, values, given, context).filter((p) => p.severity === "error")
  }
  return {
    errors,
    warnings,
    fix,
    fixedValues: values,
    fixedGiven: given,
    resolves: remaining.length === 0,
    rulesRun: rules.length
  }
}

/** @category models */
export interface CheckReport extends Verdict {
  readonly decoded: Argv.Decoded
  /**
   * The words after `vllm serve` with `fix` applied (the rest as typed), when there are errors
   * and the fix clears them; null otherwise.
   */
  readonly fixedArgv: ReadonlyArray<string> | null
}

/**
 * Check the words after `vllm serve`. Fails only when vLLM's parser would refuse them
 * (`VllmArgvError`); rule problems are in the report.
 *
 * @category checking
 */
export const check = Effect.fn("vllm.Check.check")(function* (
  argv: ReadonlyArray<string>,
  context: CheckContext
): Effect.fn.Return<CheckReport, VllmArgvError> {
  const catalogue = context.catalogue ?? Catalogue.latest
  const decoded = yield* Argv.decode(argv, catalogue)
  const result = verdict(decoded, context)
  const fixedArgv =
    result.errors.length > 0 && result.resolves ? Argv.withValues(argv, result.fix, catalogue) : null
  return { ...result, decoded, fixedArgv }
})
