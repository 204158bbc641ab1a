/**
 * One word → the value vLLM's argparse type function makes of it, or what was expected.
 *
 * @internal
 */
import type { Conversion, FlagRecord } from "../catalogue/snapshot.js"

export type Converted =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly expected: string }

const expectedOf: Readonly<Record<Conversion, string>> = {
  text: "text",
  int: "a whole number",
  float: "a number",
  size: "a whole number, optionally with a suffix (32k = 32000, 32K = 32768, 1M, 2Gi)",
  json: "a JSON object (or dotted keys: --flag.key value)",
  jsonOrText: "a JSON object or a text value",
  truth: "true or false"
}

/** Python's int(): optional sign, digits with single underscores between them. */
const pythonInt = (text: string): number | undefined => {
  const t = text.trim()
  return /^[+-]?\d+(_\d+)*$/.test(t) ? Number(t.replaceAll("_", "")) : undefined
}

const pythonFloat = (text: string): number | undefined => {
  const t = text.trim().toLowerCase()
  if (/^[+-]?(inf|infinity|nan)$/.test(t))
    return t.includes("nan") ? Number.NaN : t.startsWith("-") ? -Infinity : Infinity
  return /^[+-]?(\d+(_\d+)*(\.(\d+(_\d+)*)?)?|\.\d+)(e[+-]?\d+)?$/.test(t)
    ? Number(t.replaceAll("_", ""))
    : undefined
}

const decimal: Readonly<Record<string, number>> = { k: 1e3, m: 1e6, g: 1e9, t: 1e12 }
const binary: Readonly<Record<string, number>> = { k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 }

/**
 * vLLM's human_readable_int: a lowercase suffix is decimal and may follow a fraction (`25.6k`),
 * an uppercase one (or `Ki`, `Mi`, ...) is binary and needs a whole number.
 */
const humanReadable = (text: string): number | undefined => {
  const m = /^(\d+(?:\.\d+)?)([kmgtKMGT])(i?)$/.exec(text.trim())
  if (m === null) return pythonInt(text)
  const [, number, suffix, i] = m
  const isBinary = i === "i" || suffix === suffix!.toUpperCase()
  if (isBinary && number!.includes(".")) return undefined
  const scale = (isBinary ? binary : decimal)[suffix!.toLowerCase()]!
  return Math.round(Number(number) * scale)
}

const asJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

export const convert = (flag: FlagRecord, text: string): Converted => {
  if (flag.nullable && (text === "" || text === "None")) return { ok: true, value: null }
  const fail: Converted = { ok: false, expected: expectedOf[flag.conversion] }
  switch (flag.conversion) {
    case "text":
      return { ok: true, value: text }
    case "int": {
      const n = pythonInt(text)
      return n === undefined ? fail : { ok: true, value: n }
    }
    case "float": {
      const n = pythonFloat(text)
      return n === undefined ? fail : { ok: true, value: n }
    }
    case "size": {
      if (flag.auto === true && (text === "auto" || text === "-1")) return { ok: true, value: -1 }
      const n = humanReadable(text)
      return n === undefined ? fail : { ok: true, value: n }
    }
    case "json": {
      const v = asJson(text)
      return v === undefined || typeof v !== "object" ? fail : { ok: true, value: v }
    }
    case "jsonOrText": {
      const v = text.trim().startsWith("{") ? asJson(text) : text
      return v === undefined ? fail : { ok: true, value: v }
    }
    case "truth": {
      const t = text.toLowerCase()
      return t === "true" || t === "false" ? { ok: true, value: t === "true" } : fail
    }
  }
}

/** The word for a value as vLLM's parser reads it back (`convert(flag, wordOf(v))` is v). */
export const wordOf = (flag: FlagRecord, value: unknown): string => {
  if (value === null) return "None"
  if (flag.conversion === "json" || (flag.conversion === "jsonOrText" && typeof value === "object"))
    return JSON.stringify(value)
  return String(value)
}
