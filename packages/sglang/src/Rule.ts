/**
 * One of SGLang's launch-time argument rules (a cross-field check or an auto-adjustment in
 * `ServerArgs.__post_init__` / `check_server_args`), as a value: where it sits in SGLang's
 * processing order, which versions have it, and what it says about a working set of args.
 *
 * @since 0.1.0
 */
import { type ArgumentFailureTag, argumentFailureTag } from "@mlops/serve/ArgumentFailure"
import type { ModelTraits } from "@mlops/serve/ModelTraits"
import type { ViolationRecord } from "@mlops/serve/Violations"
import type { Field, ServerArgs } from "./ServerArgs.js"
import * as VersionRange from "./VersionRange.js"

// ---- context -----------------------------------------------------------------------------

/** The GPUs SGLang will run on (one host). @category models */
export interface Gpus {
  readonly count: number
  /** CUDA compute capability, e.g. `"8.6"` (A6000), `"9.0"` (H100), `"10.0"` (B200). */
  readonly computeCapability: string
  /** Memory of one device in MiB. */
  readonly memoryMiB: number
}

/** @category models */
export type Platform = "cuda" | "rocm" | "musa"

/** Everything outside the flags that SGLang's rules look at. @category models */
export interface ResolveContext {
  /** From the checkpoint's config.json; undefined = unknown (model-dependent rules are skipped). */
  readonly traits: ModelTraits | undefined
  /** Undefined = unknown (hardware-dependent rules are skipped, memory defaults use "unknown"). */
  readonly gpus: Gpus | undefined
  /** Environment of the SGLang process (`SGLANG_ENABLE_SPEC_V2`, ...). */
  readonly env: Readonly<Record<string, string>>
  /** SGLang version, e.g. `"0.5.11"`. */
  readonly version: string
  /** Defaults to `"cuda"`. */
  readonly platform?: Platform
}

/** What a rule sees: the context plus the working copy of the args at its turn. @category models */
export interface RuleInput extends ResolveContext {
  /** The args as SGLang has mutated them so far (earlier rules already applied). */
  readonly args: ServerArgs
  /** Fields the user set on the command line (SGLang sometimes distinguishes "set" from "default"). */
  readonly explicit: ReadonlySet<string>
}

// ---- outcomes ----------------------------------------------------------------------------

/** Some fields with new values; `null` means "unset the flag" (Python None). @category models */
export type Patch = { readonly [K in Field]?: ServerArgs[K] }

/** A fix expressed as flags to set; alternatives are other ways out. @category models */
export interface Fix {
  readonly set: Patch
  readonly alternatives: ReadonlyArray<Patch>
}

/** The Python exception SGLang raises. @category models */
export type ErrorType = "ValueError" | "AssertionError" | "TypeError" | "RuntimeError" | "AttributeError"

/**
 * The typed failure (`Failures`) SGLang's exception is when it happens at runtime: the same tag
 * the log classifier gives. @category models
 */
export type FailureTag = ArgumentFailureTag

/** The launch aborts. @category models */
export interface Violation {
  readonly _tag: "Violation"
  readonly errorType: ErrorType
  /** What the runtime failure is called (`MissingSchedulerStrategy`, `AssertionFailure`, ...). */
  readonly failure: FailureTag
  /** Our explanation. */
  readonly message: string
  /** SGLang's literal message ("" for a bare assert; a fragment where the source elides text). */
  readonly engineMessage: string
  /** For bare asserts: the source line Python prints in the traceback. */
  readonly sourceLine: string | undefined
  readonly fields: ReadonlyArray<Field>
  readonly fix: Fix
}

/** SGLang changes values (maybe silently). @category models */
export interface Adjust {
  readonly _tag: "Adjust"
  readonly set: Patch
  readonly message: string
  /** The warning SGLang logs, or undefined when the change is silent. */
  readonly engineMessage: string | undefined
  readonly fields: ReadonlyArray<Field>
}

/** SGLang logs a warning and changes nothing. @category models */
export interface Warning {
  readonly _tag: "Warning"
  readonly message: string
  readonly engineMessage: string
  readonly fields: ReadonlyArray<Field>
}

/** @category models */
export type Outcome = Violation | Adjust | Warning

/** @category constructors */
export const violation = (v: {
  readonly errorType: ErrorType
  /** Only when the message's words do not say it (derived like the classifier does otherwise). */
  readonly failure?: FailureTag
  readonly message: string
  readonly engineMessage: string
  readonly sourceLine?: string
  readonly fields: ReadonlyArray<Field>
  readonly fix: Patch
  readonly alternatives?: ReadonlyArray<Patch>
}): Violation => ({
  _tag: "Violation",
  errorType: v.errorType,
  failure: v.failure ?? argumentFailureTag(v.errorType, v.engineMessage),
  message: v.message,
  engineMessage: v.engineMessage,
  sourceLine: v.sourceLine,
  fields: v.fields,
  fix: { set: v.fix, alternatives: v.alternatives ?? [] }
})

/** @category constructors */
export const adjust = (
  set: Patch,
  message: string,
  engineMessage: string | undefined,
  fields: ReadonlyArray<Field> = Object.keys(set) as Array<Field>
): Adjust => ({ _tag: "Adjust", set, message, engineMessage, fields })

/** @category constructors */
export const warning = (message: string, engineMessage: string, fields: ReadonlyArray<Field>): Warning => ({
  _tag: "Warning",
  message,
  engineMessage,
  fields
})

// ---- rules -------------------------------------------------------------------------------

/** @category models */
export type Kind = "fatal" | "adjust" | "warning"

/**
 * The place of a rule in SGLang's processing: `step` is the numbered step of rules.md section 1
 * (12 = `_handle_model_specific_adjustments`, 17 = `_handle_speculative_decoding`,
 * 19 = `check_server_args`, 20 = model initialisation in the scheduler), `sub` orders rules
 * inside one step as the source does.
 *
 * @category models
 */
export interface Order {
  readonly step: number
  readonly sub: number
}

/** @category models */
export interface Rule {
  /** Id from rules.md, e.g. `"R12"`; a suffix distinguishes several checks of one rule (`"R23.page"`). */
  readonly id: string
  readonly title: string
  /** The SGLang releases with this rule as modelled, and how that was verified. */
  readonly versions: VersionRange.VersionRange
  readonly order: Order
  readonly kind: Kind
  /** Undefined when the rule does not fire. */
  readonly check: (input: RuleInput) => Outcome | undefined
}

/** @category constructors */
export const make = (rule: Rule): Rule => rule

/** Where a failure of a rule at this step shows up. @category models */
export type Stage = "server-args" | "check-server-args" | "model-init"

/** @category getters */
export const stageOf = (order: Order): Stage =>
  order.step <= 18 ? "server-args" : order.step === 19 ? "check-server-args" : "model-init"

/** Whether the rule holds in this SGLang version (see `versions`). @category predicates */
export const appliesTo = (rule: Rule, version: string): boolean =>
  VersionRange.contains(rule.versions, version)

/** SGLang's order: step, then sub-order. @category ordering */
export const compare = (a: Rule, b: Rule): number => a.order.step - b.order.step || a.order.sub - b.order.sub

// ---- serialisable records (for errors and JSON output) -----------------------------------

export { FixRecord, ViolationRecord } from "@mlops/serve/Violations"

/** @category constructors */
export const toRecord = (rule: Rule, v: Violation): ViolationRecord => ({
  _tag: v.failure,
  ruleId: rule.id,
  title: rule.title,
  stage: stageOf(rule.order),
  errorType: v.errorType,
  message: v.message,
  engineMessage: v.engineMessage,
  ...(v.sourceLine === undefined ? {} : { sourceLine: v.sourceLine }),
  fields: v.fields,
  fix: v.fix
})
