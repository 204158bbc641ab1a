/**
 * Words of the fake host's shell as the lexer reads them: quoted and unquoted text, `$NAME`,
 * `${NAME}`, `${NAME<op>WORD}` (`-`, `:-`, `+`, `:+`, `#`, `##`, `%`, `%%`), `${#NAME}`,
 * the special parameters `$@ $* $# $? $$ $0..$9`, and `$(...)` (parsed by the caller's
 * parser, from the same text). Backquotes, `$((...))`, `${NAME=...}`, `${NAME?...}`, `$!`
 * and `$-` are refused with `Unsupported`.
 *
 * @internal
 */
import type { Script } from "./fakeShellSyntax.js"

/** A parameter expansion's operator: a default (`-`, `+`, with `:` also for null) or an affix removal. */
export type ParamOp = "-" | ":-" | "+" | ":+" | "#" | "##" | "%" | "%%"

/**
 * One piece of a word. `quoted` pieces are never field-split nor taken as patterns. `Output`
 * is a command substitution's output, put in place of its `Command` before expansion.
 */
export type Segment =
  | { readonly _tag: "Text"; readonly text: string; readonly quoted: boolean }
  | { readonly _tag: "Param"; readonly name: string; readonly quoted: boolean }
  | {
      readonly _tag: "ParamOp"
      readonly name: string
      readonly op: ParamOp
      readonly arg: Word
      readonly quoted: boolean
    }
  | { readonly _tag: "Length"; readonly name: string; readonly quoted: boolean }
  | { readonly _tag: "Command"; readonly script: Script; readonly quoted: boolean }
  | { readonly _tag: "Output"; readonly text: string; readonly quoted: boolean }

export type Word = ReadonlyArray<Segment>

/** Real sh rejects this text too (e.g. an unterminated quote): exit 2 like dash, naming the line when known. */
export class ShellSyntaxError extends Error {
  readonly _tag = "ShellSyntaxError"
  constructor(
    message: string,
    readonly line?: number
  ) {
    super(message)
  }
}

/** Valid sh that the fake does not model: the test is wrong to rely on it. */
export class Unsupported extends Error {
  readonly _tag = "Unsupported"
}

/** Parses the script of a `$(` starting at `start` (after the parenthesis); its end is after the `)`. */
export type ParseSubstitution = (start: number) => readonly [Script, number]

const NAME_START = /[A-Za-z_]/
const NAME_CHAR = /[A-Za-z0-9_]/
const SPECIAL = new Set(["@", "*", "#", "?", "$", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"])

export const isBlank = (c: string) => c === " " || c === "\t"
/** Characters that end an unquoted word. */
export const isMeta = (c: string) =>
  c === "&" || c === "|" || c === ";" || c === "<" || c === ">" || c === "\n" || c === "(" || c === ")"

/**
 * How text is read: a shell word (ends at a blank or an operator), the word of `${NAME<op>...}`
 * (ends at `}`), or that word inside double quotes (quotes inside are literal or nest).
 */
type Mode = "word" | "braced" | "bracedInQuotes"

class Builder {
  readonly segments: Array<Segment> = []
  text(piece: string, quoted: boolean) {
    const last = this.segments.at(-1)
    if (last?._tag === "Text" && last.quoted === quoted && piece !== "") {
      this.segments[this.segments.length - 1] = { _tag: "Text", text: last.text + piece, quoted }
    } else this.segments.push({ _tag: "Text", text: piece, quoted })
  }
  add(segment: Segment) {
    if (segment._tag === "Text") this.text(segment.text, segment.quoted)
    else this.segments.push(segment)
  }
}

/** One word starting at `text[start]`: its segments, its raw text, and the index after it. */
export const readWord = (text: string, start: number, sub: ParseSubstitution): [Word, string, number] => {
  const out = new Builder()
  const end = readPieces(text, start, sub, "word", out)
  return [out.segments, text.slice(start, end), end]
}

const readPieces = (
  text: string,
  start: number,
  sub: ParseSubstitution,
  mode: Mode,
  out: Builder
): number => {
  let i = start
  const inQuotes = mode === "bracedInQuotes"
  while (i < text.length) {
    const c = text[i]!
    if (mode === "word" && (isBlank(c) || isMeta(c))) return i
    if (mode !== "word" && c === "}") return i
    if (c === "`") throw new Unsupported("command substitution `...`")
    if (c === "'" && !inQuotes) {
      const close = text.indexOf("'", i + 1)
      if (close < 0) throw new ShellSyntaxError("Syntax error: Unterminated quoted string")
      // '' is an empty quoted piece: it makes the word exist even when empty
      out.text(text.slice(i + 1, close), true)
      i = close + 1
      continue
    }
    if (c === '"') {
      i = readDoubleQuoted(text, i + 1, sub, out)
      continue
    }
    if (c === "\\") {
      const next = text[i + 1]
      if (next === undefined) {
        out.text("\\", inQuotes)
        i++
      } else if (next === "\n") i += 2
      else if (inQuotes && !'$`"\\}'.includes(next)) {
        out.text("\\", true)
        i++
      } else {
        out.text(next, true)
        i += 2
      }
      continue
    }
    if (c === "$") {
      i = readDollar(text, i, inQuotes, sub, out)
      continue
    }
    out.text(c, inQuotes)
    i++
  }
  if (mode !== "word") throw new ShellSyntaxError("Syntax error: Missing '}'")
  return i
}

const readDoubleQuoted = (text: string, start: number, sub: ParseSubstitution, out: Builder): number => {
  let i = start
  const before = out.segments.length
  while (i < text.length) {
    const c = text[i]!
    if (c === '"') {
      // "" is an empty quoted piece: it makes the word exist even when empty ("$@" alone does not)
      if (out.segments.length === before) out.text("", true)
      return i + 1
    }
    if (c === "`") throw new Unsupported("command substitution `...`")
    if (c === "\\") {
      const next = text[i + 1]
      if (next === "$" || next === "`" || next === '"' || next === "\\") {
        out.text(next, true)
        i += 2
      } else if (next === "\n") i += 2
      else {
        out.text("\\", true)
        i++
      }
      continue
    }
    if (c === "$") {
      i = readDollar(text, i, true, sub, out)
      continue
    }
    out.text(c, true)
    i++
  }
  throw new ShellSyntaxError("Syntax error: Unterminated quoted string")
}

/** `$...` at `text[i]`: adds its segment, returns the index after it. */
const readDollar = (
  text: string,
  i: number,
  quoted: boolean,
  sub: ParseSubstitution,
  out: Builder
): number => {
  const next = text[i + 1]
  if (next === "(") {
    if (text[i + 2] === "(") throw new Unsupported("arithmetic expansion $((...))")
    const [script, end] = sub(i + 2)
    out.add({ _tag: "Command", script, quoted })
    return end
  }
  if (next === "{") return readBraced(text, i + 2, quoted, sub, out)
  if (next !== undefined && NAME_START.test(next)) {
    let end = i + 1
    while (end < text.length && NAME_CHAR.test(text[end]!)) end++
    out.add({ _tag: "Param", name: text.slice(i + 1, end), quoted })
    return end
  }
  if (next !== undefined && SPECIAL.has(next)) {
    out.add({ _tag: "Param", name: next, quoted })
    return i + 2
  }
  if (next === "!" || next === "-") throw new Unsupported(`special parameter $${next}`)
  // a lone `$` is literal
  out.text("$", quoted)
  return i + 1
}

/** The name at `text[j]` (an identifier, digits, or one special character), or "". */
const nameAt = (text: string, j: number): string => {
  const c = text[j] ?? ""
  if (NAME_START.test(c)) {
    let end = j
    while (end < text.length && NAME_CHAR.test(text[end]!)) end++
    return text.slice(j, end)
  }
  if (/\d/.test(c)) return /^\d+/.exec(text.slice(j))![0]
  return SPECIAL.has(c) ? c : ""
}

const OPS: ReadonlyArray<ParamOp> = [":-", ":+", "##", "%%", "-", "+", "#", "%"]

/** `${...}` after the brace at `text[start]`. */
const readBraced = (text: string, start: number, quoted: boolean, sub: ParseSubstitution, out: Builder) => {
  const close = () => {
    const end = text.indexOf("}", start)
    return end < 0 ? text.length : end
  }
  // ${#NAME} (the length), but ${#} and ${#-...} are the parameter #
  if (text[start] === "#" && text[start + 1] !== "}" && nameAt(text, start + 1) !== "") {
    const name = nameAt(text, start + 1)
    if (text[start + 1 + name.length] !== "}")
      throw new Unsupported(`parameter form \${${text.slice(start, close())}}`)
    if (name === "@" || name === "*") throw new Unsupported(`parameter form \${#${name}}`)
    out.add({ _tag: "Length", name, quoted })
    return start + name.length + 2
  }
  const name = nameAt(text, start)
  if (name === "") {
    if (text.indexOf("}", start) < 0) throw new ShellSyntaxError("Syntax error: Missing '}'")
    throw new Unsupported(`parameter form \${${text.slice(start, close())}}`)
  }
  let j = start + name.length
  if (text[j] === "}") {
    out.add({ _tag: "Param", name, quoted })
    return j + 1
  }
  const op = OPS.find((o) => text.startsWith(o, j))
  if (op === undefined) {
    if (j >= text.length) throw new ShellSyntaxError("Syntax error: Missing '}'")
    const other = /^:?[=?]/.exec(text.slice(j))?.[0] ?? text[j]
    throw new Unsupported(`parameter expansion \${${name}${other}...}`)
  }
  if (name === "@" || name === "*") throw new Unsupported(`parameter expansion \${${name}${op}...}`)
  j += op.length
  // a pattern's quotes quote it even inside double quotes (dash); a default word in double
  // quotes is double-quoted text
  const pattern = op.startsWith("#") || op.startsWith("%")
  const arg = new Builder()
  j = readPieces(text, j, sub, quoted && !pattern ? "bracedInQuotes" : "braced", arg)
  out.add({ _tag: "ParamOp", name, op, arg: arg.segments, quoted })
  return j + 1
}
