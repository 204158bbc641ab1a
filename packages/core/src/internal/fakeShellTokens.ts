/**
 * The lexer of the fake host's shell: words (see `fakeShellWords`), operators and redirection
 * operators, each with its script line, read on demand so that the parser can read a `$(...)`
 * from the same text. `&` (background jobs), `<<` (here-documents), `<>` and `>|` are refused
 * with `Unsupported`.
 *
 * @internal
 */
import type { Redirect } from "./fakeShellSyntax.js"
import {
  isBlank,
  type ParseSubstitution,
  readWord,
  ShellSyntaxError,
  Unsupported,
  type Word
} from "./fakeShellWords.js"

export {
  type ParamOp,
  type Segment,
  ShellSyntaxError,
  Unsupported,
  type Word
} from "./fakeShellWords.js"

export type Operator = "&&" | "||" | ";" | ";;" | "\n" | "|" | "(" | ")"

export type Token = (
  | { readonly _tag: "Word"; readonly word: Word; readonly raw: string }
  | { readonly _tag: "Op"; readonly op: Operator }
  | { readonly _tag: "Redirect"; readonly fd: number | undefined; readonly op: Redirect["op"] }
) & { readonly line: number }

export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

/** Tokens of `text` from `start`, one at a time, with any number of tokens of lookahead. */
export class Lexer {
  private position: number
  private readonly ahead: Array<Token> = []
  // the line of `counted`: newlines before it, plus one
  private counted = 0
  private line = 1

  constructor(
    readonly text: string,
    start: number,
    private readonly substitution: ParseSubstitution
  ) {
    this.position = start
  }

  /** The token `n` ahead (0: the next one), or undefined at the end of the text. */
  peek(n = 0): Token | undefined {
    while (this.ahead.length <= n) {
      const token = this.read()
      if (token === undefined) return undefined
      this.ahead.push(token)
    }
    return this.ahead[n]
  }

  next(): Token | undefined {
    const token = this.peek()
    this.ahead.shift()
    return token
  }

  /** Where the text after the tokens taken so far starts (none may be waiting in lookahead). */
  get end(): number {
    if (this.ahead.length > 0) throw new Error("fake shell lexer: end asked with tokens in lookahead")
    return this.position
  }

  private lineAt(at: number): number {
    for (; this.counted < at; this.counted++) if (this.text[this.counted] === "\n") this.line++
    return this.line
  }

  private token(token: DistributiveOmit<Token, "line">, at: number, length: number): Token {
    this.position = at + length
    return { ...token, line: this.lineAt(at) } as Token
  }

  private read(): Token | undefined {
    const text = this.text
    let i = this.position
    for (;;) {
      const c = text[i]
      if (c === undefined) {
        this.position = i
        return undefined
      }
      if (isBlank(c)) i++
      else if (c === "\\" && text[i + 1] === "\n") i += 2
      else if (c === "#") while (i < text.length && text[i] !== "\n") i++
      else break
    }
    const c = text[i]!
    const next = text[i + 1]
    if (c === "\n") return this.token({ _tag: "Op", op: "\n" }, i, 1)
    if (c === ";") return next === ";" ? this.op(";;", i) : this.op(";", i)
    if (c === "&") {
      if (next !== "&") throw new Unsupported("background job &")
      return this.op("&&", i)
    }
    if (c === "|") return next === "|" ? this.op("||", i) : this.op("|", i)
    if (c === "(" || c === ")") return this.op(c, i)
    if (c === "<" || c === ">") return this.redirect(i, i, undefined)
    // an IO number: digits directly followed by < or >
    const io = /^\d+(?=[<>])/.exec(text.slice(i, i + 12))
    if (io !== null) return this.redirect(i, i + io[0].length, Number(io[0]))
    const [word, raw, end] = this.word(i)
    return this.token({ _tag: "Word", word, raw }, i, end - i)
  }

  private word(i: number): [Word, string, number] {
    try {
      return readWord(this.text, i, this.substitution)
    } catch (error) {
      // what runs off the end of a word (a quote, a brace) is reported at the last line, as dash does
      if (error instanceof ShellSyntaxError && error.line === undefined)
        throw new ShellSyntaxError(error.message, this.text.split("\n").length)
      throw error
    }
  }

  private op(op: Operator, at: number): Token {
    return this.token({ _tag: "Op", op }, at, op.length)
  }

  private redirect(at: number, i: number, fd: number | undefined): Token {
    const c = this.text[i]!
    const next = this.text[i + 1]
    if (c === "<" && next === "<") throw new Unsupported("here-document <<")
    if (c === "<" && next === ">") throw new Unsupported("redirection <>")
    if (c === ">" && next === "|") throw new Unsupported("redirection >|")
    const length = i - at
    if (c === ">" && next === ">") return this.token({ _tag: "Redirect", fd, op: ">>" }, at, length + 2)
    if (next === "&") return this.token({ _tag: "Redirect", fd, op: c === "<" ? "<&" : ">&" }, at, length + 2)
    return this.token({ _tag: "Redirect", fd, op: c === "<" ? "<" : ">" }, at, length + 1)
  }
}

/** A token as dash names it in "Syntax error: ... unexpected". */
export const tokenText = (token: Token | undefined): string => {
  if (token === undefined) return "end of file"
  if (token._tag === "Word") return `"${token.raw}"`
  if (token._tag === "Op") return token.op === "\n" ? '"newline"' : `"${token.op}"`
  return `"${token.fd ?? ""}${token.op}"`
}
