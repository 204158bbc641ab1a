/**
 * Every launch rule, in SGLang's processing order, and the rule set for a version.
 *
 * @since 0.1.0
 */
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

/** The SGLang versions some rule was read from. @category rules */
export const knownVersions: ReadonlyArray<string> = [...new Set(all.flatMap((r) => r.versions))].filter(
  (v) => !v.endsWith(".*")
)

/** @category models */
export interface RuleSet {
  /** The version whose rules are used. */
  readonly version: string
  /** False when `requested` is unknown and a version of the same minor line stands in. */
  readonly exact: boolean
  readonly rules: ReadonlyArray<Rule.Rule>
}

const minorLine = (v: string) => /^v?(\d+)\.(\d+)/.exec(v)?.slice(1, 3).join(".")

/**
 * The rules for an SGLang version. An unknown patch release uses the newest known version of
 * the same minor line (patch releases rarely change argument handling); another line falls back
 * to the newest known version too, marked inexact.
 *
 * @category rules
 */
export const forVersion = (requested: string, rules: ReadonlyArray<Rule.Rule> = all): RuleSet => {
  const exact = rules.filter((r) => Rule.appliesTo(r, requested))
  if (exact.length > 0) return { version: requested, exact: true, rules: exact }
  const versions = [...new Set(rules.flatMap((r) => r.versions))]
  const sameLine = versions.filter((v) => minorLine(v) === minorLine(requested))
  const stand = (sameLine.length > 0 ? sameLine : versions).at(-1) ?? requested
  return { version: stand, exact: false, rules: rules.filter((r) => Rule.appliesTo(r, stand)) }
}
