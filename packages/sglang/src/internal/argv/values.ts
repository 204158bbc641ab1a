/** @internal Conversion of one flag value from text, as SGLang's argparse `type=` callables do. */

import { InvalidChoice, InvalidValue } from "@mlops/serve/ArgvErrors"
import { Either } from "effect"
import type { FlagSpec } from "../../Catalogue.js"

type ValueError = InvalidValue | InvalidChoice
type ElementType = "str" | "int" | "float" | "json"

const INT = /^[+-]?\d+(?:_\d+)*$/
const FLOAT = /^[+-]?(?:\d+(?:_\d+)*(?:\.(?:\d+(?:_\d+)*)?)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+)?$/
const SPECIAL_FLOAT = /^[+-]?(?:inf|infinity|nan)$/i
// SI suffixes (decimal, fractions allowed) and IEC suffixes (binary, whole numbers only).
const HUMAN = /^(\d+(?:\.\d+)?)([kKmMgGtT])(i?)$/
const SI: Record<string, number> = { k: 1e3, m: 1e6, g: 1e9, t: 1e12 }
const IEC: Record<string, number> = { k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 }

/** Python `int(text)`. */
export const parsePythonInt = (text: string): number | null => {
  const t = text.trim()
  return INT.test(t) ? Number(t.replaceAll("_", "")) : null
}

/** Python `float(text)`. */
export const parsePythonFloat = (text: string): number | null => {
  const t = text.trim()
  if (SPECIAL_FLOAT.test(t)) {
    const sign = t.startsWith("-") ? -1 : 1
    return t.toLowerCase().includes("nan") ? Number.NaN : sign * Number.POSITIVE_INFINITY
  }
  return FLOAT.test(t) ? Number(t.replaceAll("_", "")) : null
}

/** SGLang's `human_readable_int`: `32k` = 32000, `1M` = 1000000, `128Ki` = 131072, `1.5k` = 1500. */
export const parseHumanReadableInt = (text: string): number | null => {
  const t = text.trim()
  const m = HUMAN.exec(t)
  if (m === null) return parsePythonInt(t)
  const [, number, suffix, binary] = m
  const unit = suffix!.toLowerCase()
  if (binary === "i") return number!.includes(".") ? null : Number(number) * IEC[unit]!
  return Math.trunc(Number(number) * SI[unit]!)
}

const elementType = (spec: FlagSpec): ElementType => {
  switch (spec.type) {
    case "int":
    case "list[int]":
      return "int"
    case "float":
    case "list[float]":
      return "float"
    case "json":
      return "json"
    default:
      return "str"
  }
}

/** What a flag's value must look like, for error messages. */
export const expected = (spec: FlagSpec): string => {
  const one = (() => {
    switch (elementType(spec)) {
      case "int":
        return spec.humanReadable === true ? "an integer (32k, 1M, 128Ki allowed)" : "an integer"
      case "float":
        return "a number"
      case "json":
        return "JSON (e.g. '{\"key\": 1}')"
      case "str":
        return "a value"
    }
  })()
  if (spec.nargs === "+") return `one or more values, each ${one}`
  if (spec.nargs === "*") return `zero or more values, each ${one}`
  return one
}

/** Convert one word for `spec` (an element, for list flags), then check it against the choices. */
export const convert = (
  spec: FlagSpec,
  spelled: string,
  text: string
): Either.Either<unknown, ValueError> => {
  const invalid = () =>
    Either.left(new InvalidValue({ flag: spelled, value: text, expected: expected(spec) }))
  let value: unknown
  switch (elementType(spec)) {
    case "int": {
      value = spec.humanReadable === true ? parseHumanReadableInt(text) : parsePythonInt(text)
      if (value === null) return invalid()
      break
    }
    case "float": {
      value = parsePythonFloat(text)
      if (value === null) return invalid()
      break
    }
    case "json": {
      try {
        value = JSON.parse(text)
      } catch {
        return invalid()
      }
      break
    }
    case "str":
      // nullable_str: an empty word or "None" means None.
      value = spec.type === "str|null" && (text === "" || text === "None") ? null : text
  }
  if (spec.choices !== null && !spec.choices.includes(value as string | number)) {
    return Either.left(new InvalidChoice({ flag: spelled, value: text, choices: spec.choices.map(String) }))
  }
  return Either.right(value)
}

/** How a value is written back as a word (integers without exponent, floats so Python reads them back). */
export const render = (spec: FlagSpec, value: unknown): string | null => {
  switch (elementType(spec)) {
    case "int":
      return typeof value === "number" && Number.isInteger(value) ? BigInt(value).toString() : null
    case "float":
      return typeof value === "number" ? String(value) : null
    case "json": {
      const text = JSON.stringify(value)
      return text === undefined ? null : text
    }
    case "str":
      return typeof value === "string" ? value : null
  }
}
