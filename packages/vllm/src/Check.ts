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
export interface CheckReport {
  readonly decoded: Argv.Decoded
  readonly errors: ReadonlyArray<Problem>
  readonly warnings: ReadonlyArray<Problem>
  /**
   * The words after `vllm serve` with every error's fix applied, which pass the checks; null
   * when there are no errors or one has no fix (see its `otherwise`).
   */
  readonly fixedArgv: ReadonlyArray<string> | null
  /** How many rules were tried (those of this release whose flags exist). */
  readonly rulesRun: number
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

const run = (
  rules: ReadonlyArray<Rule>,
  input: CheckInput,
  catalogue: Catalogue.Catalogue
): ReadonlyArray<Problem> =>
  rules
    .filter(
      (rule) => inRelease(rule, input.release) && rule.needs.every((dest) => catalogue.byDest.has(dest))
    )
    .flatMap((rule) => {
      const finding = rule.check(input)
      return finding === undefined ? [] : [{ ...finding, ruleId: rule.id, raisedIn: rule.raisedIn }]
    })

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
  const rules = context.rules ?? Rules.all
  const inputOf = (decoded: Argv.Decoded): CheckInput => ({
    values: decoded.values,
    given: new Set(decoded.given),
    model: context.model,
    gpus: context.gpus,
    env: context.env ?? {},
    release: catalogue.snapshot.near
  })
  const decoded = yield* Argv.decode(argv, catalogue)
  const problems = run(rules, inputOf(decoded), catalogue)
  const errors = problems.filter((p) => p.severity === "error")
  const warnings = problems.filter((p) => p.severity === "warning")
  let fixedArgv: ReadonlyArray<string> | null = null
  if (errors.length > 0 && errors.every((e) => Object.keys(e.fix).length > 0)) {
    let words = argv
    let remaining: ReadonlyArray<Problem> = errors
    for (let round = 0; round < 4 && remaining.length > 0; round++) {
      if (remaining.some((e) => Object.keys(e.fix).length === 0)) break
      words = Argv.withValues(words, Object.assign({}, ...remaining.map((e) => e.fix)), catalogue)
      const again = yield* Argv.decode(words, catalogue)
      remaining = run(rules, inputOf(again), catalogue).filter((p) => p.severity === "error")
    }
    fixedArgv = remaining.length === 0 ? words : null
  }
  return { decoded, errors, warnings, fixedArgv, rulesRun: rules.length }
})
