/**
 * Every launch rule, in SGLang's processing order, and the rule set for a version.
 *
 * @since 0.1.0
 */
import * as Catalogue from "./Catalogue.js"
import * as Rule from "./Rule.js"
import * as Attention from "./rules/Attention.js"
import * as Dflash from "./rules/Dflash.js"
import * as General from "./rules/General.js"
import * as HybridModels from "./rules/HybridModels.js"
import * as Mamba from "./rules/Mamba.js"
import * as Memory from "./rules/Memory.js"
import * as ModelInit from "./rules/ModelInit.js"
import * as Ngram from "./rules/Ngram.js"
import * as Parallelism from "./rules/Parallelism.js"
import * as Speculative from "./rules/Speculative.js"
import * as SpeculativeDraft from "./rules/SpeculativeDraft.js"
import * as SpeculativeTriple from "./rules/SpeculativeTriple.js"
import * as SglangVersion from "./SglangVersion.js"

/** All rules of all versions, sorted by SGLang's order. @category rules */
export const all: ReadonlyArray<Rule.Rule> = [
  ...General.rules,
  ...Mamba.rules,
  ...HybridModels.rules,
  ...Memory.rules,
  ...Attention.rules,
  ...Parallelism.rules,
  ...Speculative.rules,
  ...SpeculativeDraft.rules,
  ...SpeculativeTriple.rules,
  ...Dflash.rules,
  ...Ngram.rules,
  ...ModelInit.rules
].sort(Rule.compare)

/**
 * The SGLang versions whose rule set is verified: every rule's version range was checked
 * against that version's own source (all shipped releases, see `internal/rules/ranges.ts`), so
 * the offline check may apply exactly the rules whose range holds it. The rules were first read
 * in full from 0.5.11 (rules.md): for another release the rules mlops models are right, but
 * checks SGLang added or dropped elsewhere are not modelled. For any other version no rule is applied offline (argv is still checked) and
 * a launch runs the host's own validation instead.
 *
 * @category rules
 */
export const verifiedVersions: ReadonlyArray<string> = Catalogue.releases.map((r) => r.version)

/** @category models */
export interface RuleSet {
  /** The version asked for, as its catalogue is named (`v0.5.11` → `0.5.11`). */
  readonly version: string
  /** Whether the rules were checked against this version (see `verifiedVersions`). */
  readonly verified: boolean
  /** The rules of this version; none when it is not verified. */
  readonly rules: ReadonlyArray<Rule.Rule>
}

/**
 * The rules for an SGLang version: for a verified version the rules whose range holds it, for
 * any other version none (mlops does not guess: the host's own validation decides).
 *
 * @category rules
 */
export const forVersion = (requested: string, rules: ReadonlyArray<Rule.Rule> = all): RuleSet => {
  const version = SglangVersion.normalize(requested)
  const verified = verifiedVersions.includes(version)
  return { version, verified, rules: verified ? rules.filter((r) => Rule.appliesTo(r, version)) : [] }
}
