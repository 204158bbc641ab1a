/**
 * The lexer of the fake host's shell: words (with their quoted and unquoted pieces and the
 * parameters in them), operators and redirection operators, each with its script line.
 *
 * @internal
 */
import type { Redirect } from "./fakeShellSyntax.js"

/** One piece of a word: literal text, or a parameter to expand; `quoted` pieces are never split. */
export type Segment =
  | { readonly _tag: "Text"; readonly text: string; readonly quoted: boolean }
  | { readonly _tag: "Param"; readonly name: string; readonly quoted: boolean }

export type Word = ReadonlyArray<Segment>

/** Real sh rejects this text too (e.g. an unterminated quote): exit 2 like dash. */
export class ShellSyntaxError extends Error {
  readonly _tag = "ShellSyntaxError"
}

/** Valid sh that the fake does not model: the test is wrong to rely on it. */
export class Unsupported extends Error {
  readonly _tag = "Unsupported"
}

export type Token = (
  | { readonly _tag: "Word"; readonly word: Word; readonly raw: string }
  | { readonly _tag: "Op"; readonly op: "&&" | "||" | ";" | "\n" }
  | { readonly _tag: "Redirect"; readonly fd: number | undefined; readonly op: Redirect["op"] }
) & { readonly line: number }

const NAME_START = /[A-Za-z_]/
const NAME_CHAR = /[A-Za-z0-9_]/
const SPECIAL_PARAMS = new Set(["$", "?", "#", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"])
/** `$...` at `text[i]` (the `$`): the segment and the index after it. */
const readParam = (text: string, i: number, quoted: boolean): [Segment, number] => {
  const next = text[i + 1]
  if (next === "(") throw new Unsupported("command substitution $(...)")
  if (next === "{") {
    const close = text.indexOf("}", i + 2)
    if (close < 0) throw new ShellSyntaxError("Syntax error: Missing '}'")
    const name = text.slice(i + 2, close)
    if (!/^(?:[A-Za-z_][A-Za-z0-9_]*|\d+|[$?#])$/.test(name))
      throw new Unsupported(`parameter form \${${name}}`)
    return [{ _tag: "Param", name, quoted }, close + 1]
  }
  if (next !== undefined && NAME_START.test(next)) {
    let end = i + 1
    while (end < text.length && NAME_CHAR.test(text[end]!)) end++
    return [{ _tag: "Param", name: text.slice(i + 1, end), quoted }, end]
  }
  if (next !== undefined && SPECIAL_PARAMS.has(next)) return [{ _tag: "Param", name: next, quoted }, i + 2]
  if (next === "@" || next === "*" || next === "!" || next === "-")
    throw new Unsupported(`special parameter $${next}`)
  // a lone `$` is literal
  return [{ _tag: "Text", text: "$", quoted }, i + 1]
}

const isBlank = (c: string) => c === " " || c === "\t"
const isMeta = (c: string) => c === "&" || c === "|" || c === ";" || c === "<" || c === ">" || c === "\n"

/** Split `text` into words, operators and redirection operators. */
export const tokenize = (text: string): Array<Token> => {
  const raw: Array<Token> = []
  // each token's line: newlines before its first character, plus one
  let counted = 0
  let line = 1
  const tokens = {
    push: (token: DistributiveOmit<Token, "line">, at: number) => {
      for (; counted < at; counted++) if (text[counted] === "\n") line++
      raw.push({ ...token, line } as Token)
    }
  }
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (isBlank(c)) {
      i++
      continue
    }
    if (c === "\\" && text[i + 1] === "\n") {
      i += 2
      continue
    }
    if (c === "#") {
      while (i < text.length && text[i] !== "\n") i++
      continue
    }
    if (c === "\n" || c === ";") {
      if (text[i + 1] === ";") throw new Unsupported("case terminator ;;")
      tokens.push({ _tag: "Op", op: c === "\n" ? "\n" : ";" }, i)
      i++
      continue
    }
    if (c === "&") {
      if (text[i + 1] !== "&") throw new Unsupported("background job &")
      tokens.push({ _tag: "Op", op: "&&" }, i)
      i += 2
      continue
    }
    if (c === "|") {
      if (text[i + 1] !== "|") throw new Unsupported("pipeline |")
      tokens.push({ _tag: "Op", op: "||" }, i)
      i += 2
      continue
    }
    if (c === "(" || c === ")") throw new Unsupported("subshell ( )")
    if (c === "<" || c === ">") {
      i = redirectOperator(text, i, undefined, tokens)
      continue
    }
    // an IO number: digits directly followed by < or >
    const io = /^\d+(?=[<>])/.exec(text.slice(i))
    if (io !== null) {
      i = redirectOperator(text, i + io[0].length, Number(io[0]), tokens)
      continue
    }
    const [word, rawText, end] = readWord(text, i)
    tokens.push({ _tag: "Word", word, raw: rawText }, i)
    i = end
  }
  return raw
}

export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

const redirectOperator = (
  text: string,
  i: number,
  fd: number | undefined,
  out: { readonly push: (token: DistributiveOmit<Token, "line">, at: number) => void }
): number => {
  const c = text[i]!
  const next = text[i + 1]
  if (c === "<" && next === "<") throw new Unsupported("here-document <<")
  if (c === "<" && next === ">") throw new Unsupported("redirection <>")
  if (c === ">" && next === "|") throw new Unsupported("redirection >|")
  if (c === ">" && next === ">") {
    out.push({ _tag: "Redirect", fd, op: ">>" }, i)
    return i + 2
  }
  if (next === "&") {
    out.push({ _tag: "Redirect", fd, op: c === "<" ? "<&" : ">&" }, i)
    return i + 2
  }
  out.push({ _tag: "Redirect", fd, op: c === "<" ? "<" : ">" }, i)
  return i + 1
}

/** One word starting at `text[start]`: its segments, its raw text, and the index after it. */
const readWord = (text: string, start: number): [Word, string, number] => {
  const segments: Array<Segment> = []
  let i = start
  const push = (piece: string, quoted: boolean) => {
    const last = segments.at(-1)
    if (last?._tag === "Text" && last.quoted === quoted) {
      segments[segments.length - 1] = { _tag: "Text", text: last.text + piece, quoted }
    } else segments.push({ _tag: "Text", text: piece, quoted })
  }
  while (i < text.length) {
    const c = text[i]!
    if (isBlank(c) || isMeta(c)) break
    if (c === "(" || c === ")") throw new Unsupported("subshell ( )")
    if (c === "`") throw new Unsupported("command substitution `...`")
    if (c === "'") {
      const close = text.indexOf("'", i + 1)
      if (close < 0) throw new ShellSyntaxError("Syntax error: Unterminated quoted string")
      push(text.slice(i + 1, close), true)
      // '' is an empty quoted piece: it makes the word exist even when empty
      if (close === i + 1) segments.push({ _tag: "Text", text: "", quoted: true })
      i = close + 1
      continue
    }
    if (c === '"') {
      i = readDoubleQuoted(text, i + 1, segments, push)
      continue
    }
    if (c === "\\") {
      if (i + 1 >= text.length) {
        push("\\", false)
        i++
        continue
      }
      if (text[i + 1] !== "\n") push(text[i + 1]!, true)
      i += 2
      continue
    }
    if (c === "$") {
      const [segment, end] = readParam(text, i, false)
      if (segment._tag === "Text") push(segment.text, false)
      else segments.push(segment)
      i = end
      continue
    }
    push(c, false)
    i++
  }
  return [segments, text.slice(start, i), i]
}

const readDoubleQuoted = (
  text: string,
  start: number,
  segments: Array<Segment>,
  push: (piece: string, quoted: boolean) => void
): number => {
  let i = start
  let empty = true
  while (i < text.length) {
    const c = text[i]!
    if (c === '"') {
      if (empty) segments.push({ _tag: "Text", text: "", quoted: true })
      return i + 1
    }
    empty = false
    if (c === "`") throw new Unsupported("command substitution `...`")
    if (c === "\\") {
      const next = text[i + 1]
      if (next === "$" || next === "`" || next === '"' || next === "\\") {
        push(next, true)
        i += 2
      } else if (next === "\n") i += 2
      else {
        push("\\", true)
        i++
      }
      continue
    }
    if (c === "$") {
      const [segment, end] = readParam(text, i, true)
      if (segment._tag === "Text") push(segment.text, true)
      else segments.push(segment)
      i = end
      continue
    }
    push(c, true)
    i++
  }
  throw new ShellSyntaxError("Syntax error: Unterminated quoted string")
}
