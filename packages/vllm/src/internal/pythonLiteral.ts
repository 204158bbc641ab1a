/**
 * @internal
 * Python literal repr text (`None`, `'auto'`, `0.9`, `['*']`, `{'level': None}`) as data, for
 * the defaults in the parser dumps. Anything else (`EPLBConfig(...)`, `<OptimizationLevel.O2:
 * 2>`, a repr cut short by the dump) is reported as not a literal.
 */
export type Parsed = { readonly ok: true; readonly value: unknown } | { readonly ok: false }

class NotLiteral extends Error {}

export const parsePythonLiteral = (text: string): Parsed => {
  let at = 0
  const skip = () => {
    while (at < text.length && /\s/.test(text[at]!)) at++
  }
  const expect = (ch: string) => {
    skip()
    if (text[at] !== ch) throw new NotLiteral()
    at++
  }
  const value = (): unknown => {
    skip()
    const ch = text[at]
    if (ch === "'" || ch === '"') {
      let out = ""
      at++
      while (text[at] !== ch) {
        if (at >= text.length) throw new NotLiteral()
        if (text[at] === "\\") at++
        out += text[at++]
      }
      at++
      return out
    }
    if (ch === "[" || ch === "(") {
      const close = ch === "[" ? "]" : ")"
      at++
      const items: Array<unknown> = []
      skip()
      while (text[at] !== close) {
        items.push(value())
        skip()
        if (text[at] === ",") at++
        skip()
        if (at >= text.length) throw new NotLiteral()
      }
      at++
      return items
    }
    if (ch === "{") {
      at++
      const entries: Record<string, unknown> = {}
      skip()
      while (text[at] !== "}") {
        const key = value()
        expect(":")
        entries[String(key)] = value()
        skip()
        if (text[at] === ",") at++
        skip()
        if (at >= text.length) throw new NotLiteral()
      }
      at++
      return entries
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*|^-?\d+(\.\d+)?(e-?\d+)?/.exec(text.slice(at))?.[0]
    if (word === undefined) throw new NotLiteral()
    at += word.length
    if (word === "None") return null
    if (word === "True") return true
    if (word === "False") return false
    const n = Number(word)
    if (Number.isNaN(n)) throw new NotLiteral()
    return n
  }
  try {
    const v = value()
    skip()
    return at === text.length ? { ok: true, value: v } : { ok: false }
  } catch (e) {
    if (e instanceof NotLiteral) return { ok: false }
    throw e
  }
}
