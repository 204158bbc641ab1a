/** @internal ServerArgs back to a canonical argv that `decode` (and argparse) reads to the same values. */

import { UnencodableValue } from "@mlops/serve/ArgvErrors"
import { Either } from "effect"
import { type Catalogue, type FlagSpec, negation } from "../../Catalogue.js"
import { render } from "./values.js"

export interface EncodeOptions {
  /** Emit only these fields (e.g. the `explicit` set of a decoded argv). */
  readonly only?: ReadonlySet<string>
  /** Skip fields equal to their default. Default: true without `only`, false with it. */
  readonly omitDefaults?: boolean
}

// Words argparse would still read as a value even though they start with "-".
const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/
const readsAsValue = (word: string) => !word.startsWith("-") || word === "-" || NEGATIVE_NUMBER.test(word)

/** Structural equality for flag values (primitives, arrays, JSON objects). */
export const sameValue = (a: unknown, b: unknown): boolean => {
  if (Object.is(a, b) || a === b) return true
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, k) => sameValue(x, b[k]))
  if (
    typeof a === "object" &&
    typeof b === "object" &&
    a !== null &&
    b !== null &&
    !Array.isArray(a) &&
    !Array.isArray(b)
  ) {
    const ka = Object.keys(a)
    const kb = Object.keys(b)
    const rb = b as Record<string, unknown>
    return (
      ka.length === kb.length &&
      ka.every((k) => k in rb && sameValue((a as Record<string, unknown>)[k], rb[k]))
    )
  }
  return false
}

const encodeOne = (
  spec: FlagSpec,
  field: string,
  value: unknown
): Either.Either<ReadonlyArray<string>, UnencodableValue> => {
  const fail = (reason: string) => Either.left(new UnencodableValue({ field, value, reason }))
  if (value === null) {
    return spec.default === null
      ? Either.right([])
      : fail(`${spec.flag} cannot be set to None from the command line`)
  }
  if (spec.type === "bool") {
    if (value === true) return Either.right([spec.flag])
    if (value === false && spec.negatable) return Either.right([negation(spec)])
    if (sameValue(value, spec.default)) return Either.right([])
    return fail(
      `${spec.flag} is a switch that can only turn the setting on (default ${JSON.stringify(spec.default)})`
    )
  }
  if (spec.nargs === "+" || spec.nargs === "*") {
    if (!Array.isArray(value)) return fail(`${spec.flag} takes a list`)
    if (value.length === 0) {
      return spec.nargs === "*" ? Either.right([spec.flag]) : fail(`${spec.flag} needs at least one value`)
    }
    const words: Array<string> = []
    for (const element of value) {
      const word = render(spec, element)
      if (word === null) return fail(`${JSON.stringify(element)} is not a valid ${spec.type} element`)
      words.push(word)
    }
    if (words.every(readsAsValue)) return Either.right([spec.flag, ...words])
    // `--flag=-x` passes one word that starts with "-"; several such words cannot be passed.
    return words.length === 1
      ? Either.right([`${spec.flag}=${words[0]}`])
      : fail(`list elements starting with "-" cannot be passed to ${spec.flag}`)
  }
  if (spec.nargs === "?" && sameValue(value, spec.const)) return Either.right([spec.flag])
  if (spec.type === "str|null" && (value === "" || value === "None"))
    return fail(`${spec.flag} reads "" and "None" as None`)
  const word = render(spec, value)
  if (word === null) return fail(`not a valid ${spec.type} value for ${spec.flag}`)
  return Either.right(readsAsValue(word) ? [spec.flag, word] : [`${spec.flag}=${word}`])
}

/** Encode in catalogue order with canonical spellings; deprecated and meta flags are never written. */
export const encode = (
  catalogue: Catalogue,
  args: Readonly<Record<string, unknown>>,
  options: EncodeOptions = {}
): Either.Either<ReadonlyArray<string>, UnencodableValue> => {
  const omitDefaults = options.omitDefaults ?? options.only === undefined
  const argv: Array<string> = []
  for (const [field, spec] of catalogue.byField) {
    if (options.only !== undefined && !options.only.has(field)) continue
    if (!(field in args)) continue
    const value = args[field]
    if (omitDefaults && sameValue(value, spec.default)) continue
    const words = encodeOne(spec, field, value)
    if (Either.isLeft(words)) return Either.left(words.left)
    argv.push(...words.right)
  }
  return Either.right(argv)
}
