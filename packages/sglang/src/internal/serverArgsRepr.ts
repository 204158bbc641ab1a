/**
 * Reads the Python dataclass repr SGLang logs as `server_args=ServerArgs(a=1, b='x', ...)`.
 * Scalars become numbers, booleans, strings or null; lists, dicts and other objects keep
 * their repr text.
 * @internal
 */
import type { ArgValue } from "@mlops/serve/LaunchEvent"

const OPEN = "([{<"
const CLOSE = ")]}>"

/** Parses `key=value, ...` from `from` up to the closing parenthesis. */
export const parseServerArgs = (text: string, from: number): Record<string, ArgValue> => {
  const out: Record<string, ArgValue> = {}
  let i = from
  const n = text.length
  while (i < n) {
    while (text[i] === " " || text[i] === ",") i++
    if (i >= n || text[i] === ")") break
    const eq = text.indexOf("=", i)
    if (eq === -1) break
    const key = text.slice(i, eq).trim()
    i = eq + 1
    const quote = text[i]
    if (quote === "'" || quote === '"') {
      let value = ""
      i++
      while (i < n && text[i] !== quote) {
        if (text[i] === "\\" && i + 1 < n) i++
        value += text[i]
        i++
      }
      i++
      out[key] = value
      continue
    }
    // scan to the next top-level comma or the closing parenthesis
    const start = i
    let depth = 0
    let inString: string | undefined
    for (; i < n; i++) {
      const c = text[i]!
      if (inString !== undefined) {
        if (c === "\\") i++
        else if (c === inString) inString = undefined
      } else if (c === "'" || c === '"') inString = c
      else if (OPEN.includes(c)) depth++
      else if (CLOSE.includes(c)) {
        if (depth === 0) break
        depth--
      } else if (c === "," && depth === 0) break
    }
    out[key] = scalar(text.slice(start, i).trim())
  }
  return out
}

const NUMBER = /^-?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i

const scalar = (raw: string): ArgValue => {
  if (raw === "None") return null
  if (raw === "True") return true
  if (raw === "False") return false
  if (NUMBER.test(raw)) return Number(raw)
  return raw
}
