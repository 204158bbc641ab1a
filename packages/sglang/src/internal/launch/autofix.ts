/**
 * Applying a fix to the user's argv: the flags a failure (or a rule violation) says to set
 * are replaced or appended, the flags it says to drop are removed. Everything else in the
 * argv stays as the user wrote it.
 *
 * @internal
 */

import type { Fix } from "@mlops/serve/Failures"
import type { LaunchRulesViolated } from "@mlops/serve/Violations"
import * as Catalogue from "../../Catalogue.js"
import type { ViolationRecord } from "../../Rule.js"

/** The canonical spec of an argv word (`--tp`, `--tp-size=2`), by exact spelling or unique prefix. */
const specOf = (catalogue: Catalogue.Catalogue, word: string): Catalogue.FlagSpec | undefined => {
  if (!word.startsWith("--")) return undefined
  const name = word.includes("=") ? word.slice(0, word.indexOf("=")) : word
  const exact = catalogue.byFlag.get(name)
  if (exact !== undefined) return exact
  const matches = new Set<Catalogue.FlagSpec>()
  for (const [spelling, spec] of catalogue.byFlag) if (spelling.startsWith(name)) matches.add(spec)
  return matches.size === 1 ? [...matches][0] : undefined
}

const takesValue = (spec: Catalogue.FlagSpec | undefined, word: string) =>
  !word.includes("=") && spec?.type !== "bool"

/** argv without every occurrence of `flag` (any spelling) and its values. */
const without = (
  catalogue: Catalogue.Catalogue,
  argv: ReadonlyArray<string>,
  flag: string
): Array<string> => {
  const target = specOf(catalogue, flag)
  const out: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    const spec = specOf(catalogue, word)
    if (spec !== undefined && target !== undefined && spec === target) {
      if (takesValue(spec, word)) {
        // list flags take every value up to the next option
        while (i + 1 < argv.length && !argv[i + 1]!.startsWith("--")) {
          i++
          if (spec.nargs === null) break
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
  catalogue: Catalogue.Catalogue = Catalogue.latest
): ReadonlyArray<string> | undefined => {
  if (fix === undefined) return undefined
  const set = Object.entries(fix.flags ?? {})
  const remove = fix.removeFlags ?? []
  if (set.length === 0 && remove.length === 0) return undefined
  let out: Array<string> = [...argv]
  for (const flag of [...remove, ...set.map(([flag]) => flag)]) out = without(catalogue, out, flag)
  for (const [flag, value] of set) {
    out.push(flag)
    if (value === null) continue
    // a list flag's values travel space-joined in a Fix: one argv word each
    const list = specOf(catalogue, flag)?.nargs != null && typeof value === "string"
    out.push(...(list ? value.split(" ").filter((v) => v !== "") : [String(value)]))
  }
  return out
}

/** A rule violation's fix (field → value) as a flag fix. */
export const violationFix = (
  violation: ViolationRecord,
  catalogue: Catalogue.Catalogue = Catalogue.latest
): Fix | undefined => {
  const flags: Record<string, string | number | null> = {}
  const removeFlags: Array<string> = []
  for (const [field, value] of Object.entries(violation.fix.set)) {
    const spec = catalogue.byField.get(field)
    if (spec === undefined) continue
    if (value === null || value === false) removeFlags.push(spec.flag)
    else if (value === true) flags[spec.flag] = null
    else flags[spec.flag] = Array.isArray(value) ? value.join(" ") : (value as string | number)
  }
  return Object.keys(flags).length === 0 && removeFlags.length === 0 ? undefined : { flags, removeFlags }
}

/** Every violation's fix applied to `argv`; undefined when none changes it. */
export const fixViolations = (
  error: LaunchRulesViolated,
  argv: ReadonlyArray<string>,
  catalogue: Catalogue.Catalogue
): ReadonlyArray<string> | undefined => {
  let next: ReadonlyArray<string> | undefined = argv
  for (const violation of error.violations) {
    const patched: ReadonlyArray<string> | undefined = applyFix(
      next,
      violationFix(violation, catalogue),
      catalogue
    )
    if (patched !== undefined) next = patched
  }
  return next === argv ? undefined : next
}
