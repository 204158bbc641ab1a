/**
 * Random ServerArgs built from a catalogue: a random subset of fields set to values a command
 * line can express (anything else is covered by the UnencodableValue tests).
 */
import { FastCheck as fc } from "effect"
import * as Catalogue from "../src/Catalogue.js"
import * as ServerArgs from "../src/ServerArgs.js"

// A word argparse reads as a value in a list (`--flag a b`): not starting with "-".
const listWord = fc.string({ maxLength: 12 }).filter((s) => !s.startsWith("-"))
// Floats whose text is either positive or a plain negative decimal ("-0.125"), as lists need.
const listFloat = fc.integer({ min: -100_000, max: 100_000 }).map((n) => n / 8)
const anyFloat = fc.double({ noNaN: true }).map((x) => (Object.is(x, -0) ? 0 : x))

const valueArbitrary = (spec: Catalogue.FlagSpec): fc.Arbitrary<unknown> => {
  const choices = spec.choices === null ? null : fc.constantFrom(...spec.choices)
  let base: fc.Arbitrary<unknown>
  switch (spec.type) {
    case "bool":
      // A switch can only turn a setting on; negatable ones can also turn it off.
      base = spec.negatable ? fc.boolean() : fc.constant(true)
      break
    case "str":
      base = choices ?? fc.string({ maxLength: 16 })
      break
    case "str|null":
      base = fc.string({ maxLength: 16 }).filter((s) => s !== "" && s !== "None")
      break
    case "int":
      base = choices ?? fc.integer({ min: -1_000_000, max: 2_000_000_000 })
      break
    case "float":
      base = anyFloat
      break
    case "list[str]":
      base = fc.array(choices ?? listWord, { minLength: spec.nargs === "+" ? 1 : 0, maxLength: 4 })
      break
    case "list[int]":
      base = fc.array(fc.integer({ min: -1000, max: 100_000 }), { minLength: 1, maxLength: 4 })
      break
    case "list[float]":
      base = fc.array(listFloat, { minLength: 1, maxLength: 4 })
      break
    case "json":
      base = fc.json({ maxDepth: 2 }).map((text) => JSON.parse(text) as unknown)
      break
  }
  return spec.default === null && spec.required !== true ? fc.option(base, { nil: null }) : base
}

/** Args (defaults + the chosen fields) and the chosen fields. */
export const arbitraryServerArgs = (catalogue: Catalogue.Catalogue = Catalogue.latest) => {
  const entries = [...catalogue.byField].map(([field, spec]) => {
    const value = valueArbitrary(spec)
    return [field, spec.required === true ? value : fc.option(value, { nil: undefined, freq: 3 })] as const
  })
  return fc.record(Object.fromEntries(entries)).map((chosen) => {
    const given: Record<string, unknown> = {}
    for (const [field, value] of Object.entries(chosen)) if (value !== undefined) given[field] = value
    return {
      args: { ...ServerArgs.defaults(catalogue), ...given } as unknown as ServerArgs.ServerArgs,
      given: new Set(Object.keys(given))
    }
  })
}
