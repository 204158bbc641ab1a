/**
 * Field values -> command-line words, for showing fixes and the fixed argv.
 *
 * @internal
 */
import * as Catalogue from "../../Catalogue.js"
import { flagOf } from "../rules/helpers.js"

const flagSpec = (catalogue: Catalogue.Catalogue, field: string) => catalogue.byField.get(field)

/** The words that give `field` the value `value`; [] when the value means "leave the flag out". */
export const wordsFor = (
  field: string,
  value: unknown,
  catalogue: Catalogue.Catalogue = Catalogue.latest
): ReadonlyArray<string> => {
  const spec = flagSpec(catalogue, field)
  const flag = spec?.flag ?? flagOf(field)
  if (value === null || value === undefined) return []
  if (typeof value === "boolean") {
    if (value) return [flag]
    return spec?.negatable ? [Catalogue.negation(spec)] : []
  }
  if (Array.isArray(value)) return [flag, ...value.map(String)]
  if (spec?.type === "json" && typeof value === "object") return [flag, JSON.stringify(value)]
  return [flag, String(value)]
}

/** A patch as a human-readable flag list: `--a 1 --b` (and `without --c` for removals). */
export const describePatch = (
  patch: Readonly<Record<string, unknown>>,
  catalogue: Catalogue.Catalogue = Catalogue.latest
): string => {
  const add: Array<string> = []
  const drop: Array<string> = []
  for (const [field, value] of Object.entries(patch)) {
    const words = wordsFor(field, value, catalogue)
    if (words.length > 0) add.push(words.join(" "))
    else drop.push(flagSpec(catalogue, field)?.flag ?? flagOf(field))
  }
  return [...add, ...(drop.length > 0 ? [`without ${drop.join(", ")}`] : [])].join(" ") || "(no flag change)"
}

/**
 * The argv a user would type for the explicit fields of `args` with `patch` applied: the
 * explicit fields in their order, then the patch's new fields.
 */
export const argvFor = (
  args: Readonly<Record<string, unknown>>,
  explicit: ReadonlySet<string>,
  patch: Readonly<Record<string, unknown>>,
  catalogue: Catalogue.Catalogue = Catalogue.latest
): ReadonlyArray<string> => {
  const fields = [...new Set(["model_path", ...explicit, ...Object.keys(patch)])]
  return fields.flatMap((field) => wordsFor(field, field in patch ? patch[field] : args[field], catalogue))
}
