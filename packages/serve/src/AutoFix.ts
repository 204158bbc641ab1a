/**
 * Applying a fix to the user's argv: the flags a failure (or a rule violation) says to set
 * are replaced or appended, the flags it says to drop are removed. Everything else in the
 * argv stays as the user wrote it.
 *
 * @since 0.1.0
 */

import type { FlagInfo, Flags } from "./Engine.js"
import type { Fix } from "./Failures.js"
import type { LaunchRulesViolated } from "./Violations.js"

/** How argv words name flags: an engine's flags for one version. */
export type FlagSpecs = Pick<Flags, "spec">

const takesValue = (spec: FlagInfo | undefined, word: string) =>
  !word.includes("=") && spec?.takesValue !== false

/** The flag a word names: `--long`, `--long=v`, or a short alias the engine knows (`-dp`, `-tp=2`). */
const flagOf = (flags: FlagSpecs, word: string): FlagInfo | undefined =>
  word.startsWith("--")
    ? flags.spec(word)
    : word.startsWith("-") && word.length > 1
      ? flags.spec(word.split("=")[0]!)
      : undefined

/** argv without every occurrence of `flag` (any spelling, short aliases too) and its values. */
const without = (flags: FlagSpecs, argv: ReadonlyArray<string>, flag: string): Array<string> => {
  const target = flags.spec(flag)
  const out: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    const spec = flagOf(flags, word)
    if (spec !== undefined && target !== undefined && spec.flag === target.flag) {
      if (takesValue(spec, word)) {
        // list flags take every value up to the next option
        while (
          i + 1 < argv.length &&
          !argv[i + 1]!.startsWith("--") &&
          flagOf(flags, argv[i + 1]!) === undefined
        ) {
          i++
          if (!spec.list) break
        }
      }
      continue
    }
    out.push(word)
  }
  return out
}

/** The argv with a failure's flag fix applied; undefined when the fix has no flags to change. */
export const applyFix = (
  argv: ReadonlyArray<string>,
  fix: Fix | undefined,
  flags: FlagSpecs
): ReadonlyArray<string> | undefined => {
  if (fix === undefined) return undefined
  const set = Object.entries(fix.flags ?? {})
  const remove = fix.removeFlags ?? []
  if (set.length === 0 && remove.length === 0) return undefined
  let out: Array<string> = [...argv]
  for (const flag of [...remove, ...set.map(([flag]) => flag)]) out = without(flags, out, flag)
  for (const [flag, value] of set) {
    out.push(flag)
    if (value === null) continue
    // a list flag's values travel space-joined in a Fix: one argv word each
    const list = flags.spec(flag)?.list === true && typeof value === "string"
    out.push(...(list ? value.split(" ").filter((v) => v !== "") : [String(value)]))
  }
  return out
}

/** Every violation's fix (its failure's flag fix) applied to `argv`; undefined when none changes it. */
export const fixViolations = (
  error: LaunchRulesViolated,
  argv: ReadonlyArray<string>,
  flags: FlagSpecs
): ReadonlyArray<string> | undefined => {
  let next: ReadonlyArray<string> = argv
  for (const failure of error.failures) {
    const patched = applyFix(next, failure.fix, flags)
    if (patched !== undefined) next = patched
  }
  return next === argv ? undefined : next
}

/**
 * One command as the commands of `nodes` ranks (rank 0 first): `fixOf(rank)` says the flags
 * that place each rank (set over any spelling the argv has, or dropped); everything else stays
 * as written. What engines' `ranks` are made of.
 */
export const ranksOf = (
  argv: ReadonlyArray<string>,
  nodes: number,
  fixOf: (rank: number) => Fix,
  flags: FlagSpecs
): ReadonlyArray<ReadonlyArray<string>> =>
  Array.from({ length: nodes }, (_, rank) => applyFix(argv, fixOf(rank), flags) ?? argv)
