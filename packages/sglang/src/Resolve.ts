/**
 * Run SGLang's launch rules offline: on a working copy of the args, in SGLang's order, exactly
 * as `ServerArgs.__post_init__` + `check_server_args` (+ model init checks) mutate and validate
 * them. The result is either the effective args with SGLang's adjustments and warnings, or
 * every independent violation, ordered as SGLang would meet them, with one combined fix.
 *
 * @since 0.1.0
 */
import { LaunchRulesViolated } from "@mlops/serve/Violations"
import { Effect, Either } from "effect"
import { argvFor, describePatch } from "./internal/resolve/flags.js"
import { violationFailure } from "./internal/violationFailure.js"
import * as Rule from "./Rule.js"
import * as Rules from "./Rules.js"
import type { ServerArgs } from "./ServerArgs.js"

/** One changed field. @category models */
export interface Change {
  readonly field: string
  readonly from: unknown
  readonly to: unknown
}

/** A value SGLang changed, with the warning it logs (undefined = silent). @category models */
export interface Adjustment {
  readonly ruleId: string
  readonly title: string
  readonly changes: ReadonlyArray<Change>
  readonly message: string
  readonly engineMessage: string | undefined
}

/** A warning SGLang logs without changing anything. @category models */
export interface Notice {
  readonly ruleId: string
  readonly title: string
  readonly message: string
  readonly engineMessage: string
}

/** @category models */
export interface Resolved {
  /** The args SGLang ends up with (what `server_args=ServerArgs(...)` would print). */
  readonly effective: ServerArgs
  readonly adjustments: ReadonlyArray<Adjustment>
  readonly warnings: ReadonlyArray<Notice>
  /** SGLang's log lines from argument handling, in order (adjustment warnings and notices). */
  readonly logLines: ReadonlyArray<string>
  /** The version whose rules were used (differs from the requested one when it was unknown). */
  readonly rulesVersion: string
}

/** A violation's fixes as flags (`fix: ...` in the refusal). */
const shownFixOf = (v: Rule.ViolationRecord): { readonly shownFix?: string } => {
  const alternatives = v.fix.alternatives.map((a) => describePatch(a))
  const fix = Object.keys(v.fix.set).length > 0 ? describePatch(v.fix.set) : undefined
  return fix === undefined && alternatives.length === 0
    ? {}
    : { shownFix: [fix ?? "(manual)", ...alternatives].join("  or  ") }
}

/** @category models */
export type ResolveContext = Rule.ResolveContext

// ---- one pass ------------------------------------------------------------------------------

interface Pass {
  readonly effective: ServerArgs
  readonly adjustments: ReadonlyArray<Adjustment>
  readonly warnings: ReadonlyArray<Notice>
  readonly logLines: ReadonlyArray<string>
  readonly violations: ReadonlyArray<Rule.ViolationRecord>
  /** The fix of the violation that ended the pass (later rules would see a different world). */
  readonly stoppedWith: Rule.Patch | undefined
}

const skipsModelRules = (args: ServerArgs) =>
  ["none", "dummy"].includes(String(args.model_path).toLowerCase())

const runPass = (
  rules: ReadonlyArray<Rule.Rule>,
  args: ServerArgs,
  explicit: ReadonlySet<string>,
  ctx: ResolveContext
): Pass => {
  let working = args
  const adjustments: Array<Adjustment> = []
  const warnings: Array<Notice> = []
  const logLines: Array<string> = []
  const violations: Array<Rule.ViolationRecord> = []
  // SGLang returns early for a "none"/"dummy" model path: steps 7-18 never run.
  const early = skipsModelRules(args)
  for (const rule of rules) {
    if (early && rule.order.step >= 7 && rule.order.step <= 18) continue
    const outcome = rule.check({ ...ctx, args: working, explicit })
    if (outcome === undefined) continue
    switch (outcome._tag) {
      case "Adjust": {
        const before = working as unknown as Record<string, unknown>
        const changes = Object.entries(outcome.set)
          .filter(([field, value]) => !Object.is(before[field], value))
          .map(([field, to]) => ({ field, from: before[field], to }))
        working = { ...working, ...outcome.set } as ServerArgs
        if (changes.length > 0) {
          adjustments.push({
            ruleId: rule.id,
            title: rule.title,
            changes,
            message: outcome.message,
            engineMessage: outcome.engineMessage
          })
        } else if (outcome.engineMessage !== undefined) {
          warnings.push({
            ruleId: rule.id,
            title: rule.title,
            message: outcome.message,
            engineMessage: outcome.engineMessage
          })
        }
        if (outcome.engineMessage !== undefined) logLines.push(outcome.engineMessage)
        break
      }
      case "Warning":
        warnings.push({
          ruleId: rule.id,
          title: rule.title,
          message: outcome.message,
          engineMessage: outcome.engineMessage
        })
        logLines.push(outcome.engineMessage)
        break
      case "Violation":
        violations.push(Rule.toRecord(rule, outcome))
        if (Object.keys(outcome.fix.set).length > 0) {
          return {
            effective: working,
            adjustments,
            warnings,
            logLines,
            violations,
            stoppedWith: outcome.fix.set
          }
        }
        break
    }
  }
  return { effective: working, adjustments, warnings, logLines, violations, stoppedWith: undefined }
}

// ---- resolve -------------------------------------------------------------------------------

const MAX_PASSES = 32

/** The args with every violation's fix applied (later fixes win on the same field). @category combinators */
export const applyFixes = (args: ServerArgs, violations: ReadonlyArray<Rule.ViolationRecord>): ServerArgs =>
  ({ ...args, ...Object.assign({}, ...violations.map((v) => v.fix.set)) }) as ServerArgs

/**
 * Pure resolution. A fatal violation is recorded and resolution continues from the start with
 * its fix applied (as if the user had fixed it and relaunched), so every independent problem is
 * found, in the order SGLang would report them one launch at a time.
 *
 * @category resolve
 */
export const resolveEither = (
  args: ServerArgs,
  explicit: ReadonlySet<string>,
  ctx: ResolveContext,
  rules?: ReadonlyArray<Rule.Rule>
): Either.Either<Resolved, LaunchRulesViolated> => {
  const set =
    rules === undefined ? Rules.forVersion(ctx.version) : { version: ctx.version, verified: true, rules }
  const ordered = [...set.rules].sort(Rule.compare)
  const found: Array<Rule.ViolationRecord> = []
  const seen = new Set<string>()
  let fixes: Record<string, unknown> = {}
  let last: Pass | undefined
  for (let i = 0; i < MAX_PASSES; i++) {
    const input = { ...args, ...fixes } as ServerArgs
    const pass = runPass(ordered, input, new Set([...explicit, ...Object.keys(fixes)]), ctx)
    last = pass
    for (const v of pass.violations) {
      const key = `${v.ruleId}\u0000${v.engineMessage}\u0000${v.message}`
      if (!seen.has(key)) {
        seen.add(key)
        found.push(v)
      }
    }
    if (pass.stoppedWith === undefined) break
    const next = { ...fixes, ...pass.stoppedWith }
    const progressed = Object.entries(pass.stoppedWith).some(([k, v]) => !Object.is(fixes[k], v))
    fixes = next
    if (!progressed) break
  }
  if (found.length === 0 && last !== undefined) {
    return Either.right({
      effective: last.effective,
      adjustments: last.adjustments,
      warnings: last.warnings,
      logLines: last.logLines,
      rulesVersion: set.version
    })
  }
  const resolvesAfterFix = last !== undefined && last.violations.length === 0
  return Either.left(
    new LaunchRulesViolated({
      engine: "SGLang",
      version: set.version,
      violations: found.map((v) => ({ ...v, ...shownFixOf(v) })),
      fix: fixes,
      ...(Object.keys(fixes).length > 0 ? { shownFix: describePatch(fixes) } : {}),
      failures: found.map((v) =>
        violationFailure(
          v,
          ctx.traits?.architecture === undefined ? {} : { architecture: ctx.traits.architecture }
        )
      ),
      fixedArgv: argvFor(args as unknown as Record<string, unknown>, explicit, fixes),
      resolvesAfterFix,
      ...(ctx.traits?.architecture === undefined ? {} : { architecture: ctx.traits.architecture })
    })
  )
}

/** Resolve the args SGLang would run with, or fail with every violation. @category resolve */
export const resolve: (
  args: ServerArgs,
  explicit: ReadonlySet<string>,
  ctx: ResolveContext
) => Effect.Effect<Resolved, LaunchRulesViolated> = Effect.fn("Resolve.resolve")(function* (
  args: ServerArgs,
  explicit: ReadonlySet<string>,
  ctx: ResolveContext
) {
  return yield* resolveEither(args, explicit, ctx)
})
