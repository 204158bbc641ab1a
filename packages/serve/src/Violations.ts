/**
 * An engine refusing a launch before anything runs: every rule violation its offline rules
 * found, each with the engine's own words and a fix, the combined fix and the fixed command.
 * Engines build it (they know their flags); the launch program, auto-fix and the CLI read it.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { argumentFailureTags } from "./ArgumentFailure.js"
import { LaunchFailure } from "./Failures.js"

/** A fix as data: fields to set (`null` = drop the flag), and other ways out. @category schemas */
export const FixRecord = Schema.Struct({
  set: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  alternatives: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})

/**
 * A violation found by a rule, as data. `_tag` is the typed failure the engine's exception would
 * be classified as at runtime, so one vocabulary serves the offline check and the log.
 * @category schemas
 */
export const ViolationRecord = Schema.Struct({
  _tag: Schema.Literal(...argumentFailureTags),
  ruleId: Schema.String,
  title: Schema.String,
  /** Where in the engine's argument handling it is raised (engine-specific names). */
  stage: Schema.String,
  errorType: Schema.Literal("ValueError", "AssertionError", "TypeError", "RuntimeError", "AttributeError"),
  message: Schema.String,
  /** The engine's own message ("" for a bare assert). */
  engineMessage: Schema.String,
  sourceLine: Schema.optional(Schema.String),
  fields: Schema.Array(Schema.String),
  fix: FixRecord,
  /** The fix as flags, as the engine's command line spells them (`--a 1  or  --b`). */
  shownFix: Schema.optional(Schema.String)
})
export type ViolationRecord = typeof ViolationRecord.Type

/** The engine would refuse this launch. @category errors */
export class LaunchRulesViolated extends Schema.TaggedError<LaunchRulesViolated>()("LaunchRulesViolated", {
  /** The engine's display name (`SGLang`, `vLLM`). */
  engine: Schema.String,
  version: Schema.String,
  /** Every independent problem, in the order the engine meets them. */
  violations: Schema.Array(ViolationRecord),
  /** All fixes combined (field -> value; null = drop the flag). */
  fix: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  /** `fix` as flags. */
  shownFix: Schema.optional(Schema.String),
  /** The user's explicit flags with the combined fix applied. */
  fixedArgv: Schema.optional(Schema.Array(Schema.String)),
  /** Whether the args with the combined fix pass every rule. */
  resolvesAfterFix: Schema.Boolean,
  /** The model's architecture, when known (named by `MissingSchedulerStrategy`). */
  architecture: Schema.optional(Schema.String),
  /**
   * Each violation as the typed failure the engine would raise for it at runtime, in its order
   * (each with `ruleId` set). The first is what one launch would fail with.
   */
  failures: Schema.Array(LaunchFailure)
}) {
  override get message() {
    const n = this.violations.length
    const lines = [
      `${this.engine} ${this.version} would refuse this launch: ${n} problem${n === 1 ? "" : "s"}, in the order ${this.engine} meets them:`
    ]
    this.violations.forEach((v, i) => {
      const said =
        v.engineMessage === "" ? `bare ${v.errorType} (no message)` : `${v.errorType}: ${v.engineMessage}`
      lines.push(`  ${i + 1}. ${v._tag} [${v.ruleId}]: ${v.message}`)
      lines.push(`     ${this.engine}: ${said}`)
      if (v.shownFix !== undefined) lines.push(`     fix: ${v.shownFix}`)
    })
    if (this.shownFix !== undefined) {
      lines.push(`combined fix: ${this.shownFix}${this.resolvesAfterFix ? "" : " (more changes needed)"}`)
    }
    if (this.fixedArgv !== undefined) lines.push(`fixed command: ${this.fixedArgv.join(" ")}`)
    return lines.join("\n")
  }
}

/**
 * The typed failure the engine would meet first (the first violation), with `ruleId` set: what
 * a launch without preflight would fail with.
 * @category errors
 */
export const firstFailure = (error: LaunchRulesViolated): LaunchFailure => error.failures[0]!
/**
 * One vocabulary before and after the start: turns a `LaunchRulesViolated` in the error channel
 * into its first typed failure, so `Effect.catchTag("MissingSchedulerStrategy", ...)` handles the
 * problem whether preflight predicted it or SGLang's log showed it. The failure's `ruleId` tells
 * the two apart; the other violations stay on `LaunchRulesViolated.failures` for callers that
 * want them all.
 *
 * ```ts
 * Launch.launchDeployment(request).pipe(
 *   Resolve.asLaunchFailure,
 *   Effect.catchTag("MissingSchedulerStrategy", (failure) => relaunchWith(failure.fix))
 * )
 * ```
 * @category errors
 */
export const asLaunchFailure = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, Extract<E, LaunchRulesViolated>> | LaunchFailure, R> =>
  Effect.catchIf(
    self,
    (error): error is Extract<E, LaunchRulesViolated> => error instanceof LaunchRulesViolated,
    (error) => Effect.fail(firstFailure(error))
  )
