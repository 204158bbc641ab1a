/**
 * sh pattern matching (`case`, `${x#...}` and friends, pathname expansion), as dash does it:
 * `*`, `?`, bracket expressions (`[abc]`, `[a-z]`, `[!...]`, `[^...]`, `[[:alpha:]]`), an
 * unquoted backslash escaping the next character, and quoted text always literal.
 *
 * @internal
 */
import { Unsupported } from "./fakeShellWords.js"

/** A piece of expanded text; quoted pieces (and escaped characters) are literal in patterns. */
export interface Piece {
  readonly text: string
  readonly quoted: boolean
}

/** A field of expanded text, remembering which parts were quoted. */
export type Field = ReadonlyArray<Piece>

export const fieldText = (field: Field): string => field.map((p) => p.text).join("")

/** Whether an unquoted `*`, `?` or `[` makes the field a pattern. */
export const hasPattern = (field: Field): boolean => field.some((p) => !p.quoted && /[*?[]/.test(p.text))

interface Char {
  readonly c: string
  readonly literal: boolean
}

const charsOf = (field: Field): Array<Char> => {
  const out: Array<Char> = []
  for (const piece of field) {
    for (let i = 0; i < piece.text.length; i++) {
      const c = piece.text[i]!
      if (!piece.quoted && c === "\\" && i + 1 < piece.text.length)
        out.push({ c: piece.text[++i]!, literal: true })
      else out.push({ c, literal: piece.quoted })
    }
  }
  return out
}

const escapeRegExp = (c: string) => c.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&")

const CLASSES: Record<string, string> = {
  alpha: "a-zA-Z",
  digit: "0-9",
  alnum: "a-zA-Z0-9",
  upper: "A-Z",
  lower: "a-z",
  space: " \\t\\n\\r\\f\\v",
  blank: " \\t",
  xdigit: "0-9A-Fa-f",
  punct: "!-\\/:-@\\[-`{-~",
  cntrl: "\\x00-\\x1f\\x7f",
  print: "\\x20-\\x7e",
  graph: "\\x21-\\x7e"
}

/** The bracket expression at `chars[start]` (a `[`) as a RegExp class, and the index after it; undefined if unclosed. */
const bracket = (chars: ReadonlyArray<Char>, start: number): [string, number] | undefined => {
  let j = start + 1
  let negate = false
  const opener = chars[j]
  if (opener !== undefined && !opener.literal && (opener.c === "!" || opener.c === "^")) {
    negate = true
    j++
  }
  let members = ""
  let first = true
  while (j < chars.length) {
    const ch = chars[j]!
    if (ch.c === "]" && !ch.literal && !first) return [`[${negate ? "^" : ""}${members}]`, j + 1]
    first = false
    if (ch.c === "[" && !ch.literal && chars[j + 1]?.c === ":") {
      const rest = chars
        .slice(j + 2)
        .map((x) => x.c)
        .join("")
      const end = rest.indexOf(":]")
      if (end >= 0) {
        const name = rest.slice(0, end)
        const range = CLASSES[name]
        if (range === undefined) throw new Unsupported(`pattern class [:${name}:]`)
        members += range
        j += end + 4
        continue
      }
    }
    const high = chars[j + 2]
    if (chars[j + 1]?.c === "-" && high !== undefined && !(high.c === "]" && !high.literal)) {
      // a reversed range matches nothing, as in dash
      if (ch.c <= high.c) members += `${escapeRegExp(ch.c)}-${escapeRegExp(high.c)}`
      j += 3
      continue
    }
    members += escapeRegExp(ch.c)
    j++
  }
  return undefined
}

/** The pattern as an anchored RegExp over a whole string. */
export const compile = (field: Field): RegExp => {
  const chars = charsOf(field)
  let source = ""
  for (let i = 0; i < chars.length; ) {
    const { c, literal } = chars[i]!
    if (!literal && c === "*") source += "[\\s\\S]*"
    else if (!literal && c === "?") source += "[\\s\\S]"
    else if (!literal && c === "[") {
      const found = bracket(chars, i)
      if (found !== undefined) {
        source += found[0]
        i = found[1]
        continue
      }
      source += "\\["
    } else source += escapeRegExp(c)
    i++
  }
  return new RegExp(`^${source}$`)
}

export const matches = (field: Field, subject: string): boolean => compile(field).test(subject)

/** `${value#pattern}` and its kin: remove the shortest or longest matching prefix or suffix. */
export const removeAffix = (value: string, field: Field, op: "#" | "##" | "%" | "%%"): string => {
  const pattern = compile(field)
  const n = value.length
  switch (op) {
    case "#":
      for (let k = 0; k <= n; k++) if (pattern.test(value.slice(0, k))) return value.slice(k)
      return value
    case "##":
      for (let k = n; k >= 0; k--) if (pattern.test(value.slice(0, k))) return value.slice(k)
      return value
    case "%":
      for (let k = n; k >= 0; k--) if (pattern.test(value.slice(k))) return value.slice(0, k)
      return value
    case "%%":
      for (let k = 0; k <= n; k++) if (pattern.test(value.slice(k))) return value.slice(0, k)
      return value
  }
}
