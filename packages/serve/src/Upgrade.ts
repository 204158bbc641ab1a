/**
 * What an upgrade check reports, for any engine (`mlops check --target-version V`): how the flags
 * of one command change meaning between two versions, which of the engine's checks start or stop
 * applying to it, and what the target version makes of it. Each engine builds it its own way.
 *
 * @since 0.1.0
 */
import type { ArgvError } from "./ArgvErrors.js"
import type { Located } from "./Runtime.js"
import type * as Violations from "./Violations.js"

/** @category models */
export interface FlagDifference {
  /** As the user wrote it (`--tp`). */
  readonly flag: string
  readonly kind: "removed" | "renamed" | "ambiguous" | "type" | "choices" | "default" | "deprecated"
  readonly message: string
  /** The spelling to use instead, when there is one. */
  readonly replacement?: string
}

/** @category models */
export interface RuleDifference {
  readonly ruleId: string
  readonly title: string
  /**
   * `starts`: fires in `to`, not in `from`; `stops`: the other way. A rule that stops because its
   * verified range ends means the engine reworked or dropped that check (`inRange` false), not that
   * nothing happens there any more.
   */
  readonly change: "starts" | "stops"
  readonly outcome: "violation" | "adjustment" | "warning"
  readonly message: string
  /** The releases the rule holds for (`0.5.10–main-2026-05-19`). */
  readonly range: string
  /** Whether the version where it does not fire is inside that range (then it is the flags, not the engine, that differ). */
  readonly inRange: boolean
}

/** @category models */
export interface UpgradeReport {
  /** The engine's display name (`SGLang`, `vLLM`). */
  readonly engine: string
  readonly from: string
  readonly to: string
  /** From a host: the install `from` is (found as a launch finds it). */
  readonly installed?: Pick<Located, "interpreter" | "setting" | "source" | "versionSource">
  readonly flags: ReadonlyArray<FlagDifference>
  readonly rules: ReadonlyArray<RuleDifference>
  /** False when either version's rules are unverified: then `rules` is empty by necessity. */
  readonly rulesCompared: boolean
  /** How the comparison was limited (stand-in catalogues, unverified rules). */
  readonly notes: ReadonlyArray<string>
  /** What `to` makes of the command: accepted (with its adjustments) or the first refusal. */
  readonly target:
    | { readonly _tag: "Accepted"; readonly adjustments: ReadonlyArray<string> }
    | { readonly _tag: "Refused"; readonly error: ArgvError | Violations.LaunchRulesViolated }
}
