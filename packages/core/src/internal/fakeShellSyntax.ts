/**
 * The POSIX-sh grammar the fake host understands, as dash parses it: simple commands with
 * `NAME=value` prefixes and redirections (`<`, `>`, `>>`, `N>&M`, `N<&M`, `N>&-`); pipelines
 * (`|`, `!`); lists (`&&`, `||`, `;`, newlines); the compound commands `{ }`, `( )`, `if`,
 * `for`, `while`, `until` and `case`, with redirections; function definitions `NAME() BODY`;
 * `#` comments. Words are `fakeShellWords`'.
 *
 * What a real shell would do something with but the fake does not model (`&`, here-documents,
 * backquotes, `$((...))`, ...) is refused with `Unsupported`, never guessed: a fake that
 * silently differs from `sh` would let a test pass that fails on a host.
 *
 * Parsing is pure; `fakeShellRun.ts` runs the result.
 *
 * @internal
 */
import { Lexer, ShellSyntaxError, type Token, tokenText, Unsupported, type Word } from "./fakeShellTokens.js"

export { type ParamOp, type Segment, ShellSyntaxError, Unsupported, type Word } from "./fakeShellTokens.js"

export interface Redirect {
  readonly fd: number
  readonly op: "<" | ">" | ">>" | "<&" | ">&"
  readonly target: Word
}

export interface Assignment {
  readonly name: string
  readonly value: Word
}

export interface SimpleCommand {
  readonly _tag: "Simple"
  /** The script line it starts on (dash's error messages name it). */
  readonly line: number
  readonly assignments: ReadonlyArray<Assignment>
  readonly words: ReadonlyArray<Word>
  readonly redirects: ReadonlyArray<Redirect>
}

export type CompoundBody =
  | { readonly _tag: "Group"; readonly body: List }
  | { readonly _tag: "Subshell"; readonly body: List }
  | {
      readonly _tag: "If"
      readonly branches: ReadonlyArray<{ readonly condition: List; readonly body: List }>
      readonly otherwise: List | undefined
    }
  /** `words` undefined: `for NAME; do` (over "$@"). */
  | {
      readonly _tag: "For"
      readonly name: string
      readonly words: ReadonlyArray<Word> | undefined
      readonly body: List
    }
  | { readonly _tag: "Loop"; readonly until: boolean; readonly condition: List; readonly body: List }
  | {
      readonly _tag: "Case"
      readonly subject: Word
      readonly items: ReadonlyArray<{ readonly patterns: ReadonlyArray<Word>; readonly body: List }>
    }

export interface Compound {
  readonly _tag: "Compound"
  readonly line: number
  readonly body: CompoundBody
  readonly redirects: ReadonlyArray<Redirect>
}

export interface FunctionDefinition {
  readonly _tag: "Function"
  readonly line: number
  readonly name: string
  readonly body: Command
}

export type Command = SimpleCommand | Compound | FunctionDefinition

/** Commands joined by `|` (each side runs apart from the shell); `!` negates the status. */
export interface Pipeline {
  readonly negated: boolean
  readonly commands: ReadonlyArray<Command>
}

/** `first`, then each `rest` pipeline run when the previous status allows (`&&`: 0, `||`: not 0). */
export interface AndOr {
  readonly first: Pipeline
  readonly rest: ReadonlyArray<{ readonly op: "&&" | "||"; readonly pipeline: Pipeline }>
}

export type List = ReadonlyArray<AndOr>

export type Script = List

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=/

/** Words that open a compound command or close one, in command position. */
const RESERVED = new Set(["if", "then", "else", "elif", "fi", "do", "done", "case", "esac"])
const OPENERS = new Set(["{", "if", "for", "while", "until", "case"])
const CLOSERS = new Set(["}", "then", "else", "elif", "fi", "do", "done", "esac", "in"])

/** The assignment a word spells (`NAME=value`, the name unquoted), if it is one. */
const asAssignment = (token: Extract<Token, { _tag: "Word" }>): Assignment | undefined => {
  const first = token.word[0]
  if (first?._tag !== "Text" || first.quoted) return undefined
  const match = ASSIGNMENT.exec(first.text)
  if (match === null) return undefined
  const rest = first.text.slice(match[0].length)
  const value = rest === "" ? token.word.slice(1) : [{ ...first, text: rest }, ...token.word.slice(1)]
  return { name: match[1]!, value }
}

/** The token is the unquoted word `word` (a reserved word where one is recognised). */
const isWord = (token: Token | undefined, word: string): boolean =>
  token?._tag === "Word" && token.raw === word

const isOp = (token: Token | undefined, op: string): boolean => token?._tag === "Op" && token.op === op

/** Parse a whole script. Throws ShellSyntaxError or Unsupported. */
export const parse = (text: string): Script => {
  const { script, error } = parseLines(text)
  if (error !== undefined) throw error
  return script
}

/**
 * Parse a script as dash reads it, one line (a complete command up to a newline) at a time:
 * the lines before a syntax error run, then the shell exits with it. Unsupported syntax
 * anywhere is thrown: nothing runs.
 */
export const parseLines = (text: string): { readonly script: Script; readonly error?: ShellSyntaxError } => {
  const parser = new Parser(text, 0)
  const script: Array<AndOr> = []
  try {
    for (;;) {
      const line = parser.line()
      if (line === undefined) return { script }
      script.push(...line)
    }
  } catch (error) {
    if (error instanceof ShellSyntaxError) return { script, error }
    throw error
  }
}

class Parser {
  readonly lexer: Lexer
  constructor(text: string, start: number) {
    this.lexer = new Lexer(text, start, (at) => {
      // `$(` ... `)`: a script of its own, read from the same text
      const inner = new Parser(text, at)
      const script = inner.list((t) => isOp(t, ")"))
      inner.expect(")", true)
      return [script, inner.lexer.end]
    })
  }

  /** dash's "Syntax error: X unexpected" at `token` (default: the next one). */
  private fail(expecting?: string, token = this.lexer.peek()): never {
    const wanted = expecting === undefined ? "" : ` (expecting "${expecting}")`
    throw new ShellSyntaxError(`Syntax error: ${tokenText(token)} unexpected${wanted}`, this.lineOf(token))
  }

  private lineOf(token: Token | undefined): number {
    return token?.line ?? this.lexer.text.split("\n").length
  }

  private newlines() {
    while (isOp(this.lexer.peek(), "\n")) this.lexer.next()
  }

  expect(what: string, op = false): Token {
    const token = this.lexer.peek()
    if (op ? !isOp(token, what) : !isWord(token, what)) this.fail(what)
    return this.lexer.next()!
  }

  /** The and-or lists of the next line (`;`-separated, up to a newline), or undefined at the end. */
  line(): List | undefined {
    this.newlines()
    if (this.lexer.peek() === undefined) return undefined
    const items: Array<AndOr> = []
    for (;;) {
      items.push(this.andOr())
      const after = this.lexer.peek()
      if (after === undefined || isOp(after, "\n")) return items
      if (!isOp(after, ";")) this.fail()
      this.lexer.next()
      const next = this.lexer.peek()
      if (next === undefined || isOp(next, "\n")) return items
    }
  }

  /** And-or lists separated by `;` or newlines, up to a token `stop` accepts in command position. */
  list(stop: (token: Token) => boolean): List {
    const items: Array<AndOr> = []
    for (;;) {
      this.newlines()
      const token = this.lexer.peek()
      if (token === undefined || stop(token)) return items
      items.push(this.andOr())
      const after = this.lexer.peek()
      if (isOp(after, ";") || isOp(after, "\n")) this.lexer.next()
      else return items
    }
  }

  private andOr(): AndOr {
    const first = this.pipeline()
    const rest: Array<{ op: "&&" | "||"; pipeline: Pipeline }> = []
    for (;;) {
      const token = this.lexer.peek()
      if (token?._tag !== "Op" || (token.op !== "&&" && token.op !== "||")) return { first, rest }
      this.lexer.next()
      this.newlines()
      rest.push({ op: token.op, pipeline: this.pipeline() })
    }
  }

  private pipeline(): Pipeline {
    const negated = isWord(this.lexer.peek(), "!")
    if (negated) this.lexer.next()
    const commands = [this.command()]
    while (isOp(this.lexer.peek(), "|")) {
      this.lexer.next()
      this.newlines()
      commands.push(this.command())
    }
    return { negated, commands }
  }

  private command(): Command {
    const token = this.lexer.peek()
    if (token === undefined) this.fail()
    if (isOp(token, "(")) {
      this.lexer.next()
      const body = this.list((t) => isOp(t, ")"))
      this.expect(")", true)
      return this.compound(token.line, { _tag: "Subshell", body })
    }
    if (token._tag === "Op") this.fail()
    if (token._tag === "Word") {
      if (OPENERS.has(token.raw)) return this.compoundCommand(token)
      if (CLOSERS.has(token.raw) || token.raw === "!") this.fail()
      if (token.raw === "function" || token.raw === "select" || token.raw === "[[")
        throw new Unsupported(`reserved word "${token.raw}"`)
      if (isOp(this.lexer.peek(1), "(")) return this.functionDefinition(token)
    }
    return this.simple()
  }

  private functionDefinition(token: Extract<Token, { _tag: "Word" }>): FunctionDefinition {
    if (!NAME.test(token.raw) || RESERVED.has(token.raw))
      throw new ShellSyntaxError("Syntax error: Bad function name", token.line)
    this.lexer.next()
    this.lexer.next()
    this.expect(")", true)
    this.newlines()
    const body = this.command()
    return { _tag: "Function", line: token.line, name: token.raw, body }
  }

  private compound(line: number, body: CompoundBody): Compound {
    return { _tag: "Compound", line, body, redirects: this.redirects([]) }
  }

  private redirects(into: Array<Redirect>): Array<Redirect> {
    for (let token = this.lexer.peek(); token?._tag === "Redirect"; token = this.lexer.peek()) {
      this.lexer.next()
      const target = this.lexer.next()
      if (target?._tag !== "Word") this.fail(undefined, target)
      into.push({ fd: token.fd ?? (token.op.startsWith("<") ? 0 : 1), op: token.op, target: target.word })
    }
    return into
  }

  private compoundCommand(token: Extract<Token, { _tag: "Word" }>): Compound {
    this.lexer.next()
    const upTo =
      (...words: Array<string>) =>
      (t: Token) =>
        words.some((w) => isWord(t, w))
    switch (token.raw) {
      case "{": {
        const body = this.list(upTo("}"))
        this.expect("}")
        return this.compound(token.line, { _tag: "Group", body })
      }
      case "if": {
        const branches: Array<{ condition: List; body: List }> = []
        let otherwise: List | undefined
        for (;;) {
          const condition = this.list(upTo("then"))
          this.expect("then")
          branches.push({ condition, body: this.list(upTo("elif", "else", "fi")) })
          const next = this.lexer.next()
          if (isWord(next, "elif")) continue
          if (isWord(next, "else")) {
            otherwise = this.list(upTo("fi"))
            this.expect("fi")
          } else if (!isWord(next, "fi")) this.fail("fi", next)
          return this.compound(token.line, { _tag: "If", branches, otherwise })
        }
      }
      case "while":
      case "until": {
        const condition = this.list(upTo("do"))
        this.expect("do")
        const body = this.list(upTo("done"))
        this.expect("done")
        return this.compound(token.line, { _tag: "Loop", until: token.raw === "until", condition, body })
      }
      case "for":
        return this.forCommand(token.line)
      default:
        return this.caseCommand(token.line)
    }
  }

  private forCommand(line: number): Compound {
    const name = this.lexer.next()
    if (name?._tag !== "Word" || !NAME.test(name.raw))
      throw new ShellSyntaxError("Syntax error: Bad for loop variable", this.lineOf(name))
    this.newlines()
    let words: Array<Word> | undefined
    if (isWord(this.lexer.peek(), "in")) {
      this.lexer.next()
      words = []
      for (let t = this.lexer.peek(); t?._tag === "Word"; t = this.lexer.peek()) {
        words.push(t.word)
        this.lexer.next()
      }
      if (!isOp(this.lexer.peek(), ";") && !isOp(this.lexer.peek(), "\n")) this.fail("do")
      this.lexer.next()
    } else if (isOp(this.lexer.peek(), ";")) this.lexer.next()
    this.newlines()
    this.expect("do")
    const body = this.list((t) => isWord(t, "done"))
    this.expect("done")
    return this.compound(line, { _tag: "For", name: name.raw, words, body })
  }

  private caseCommand(line: number): Compound {
    const subject = this.lexer.next()
    if (subject?._tag !== "Word") this.fail(undefined, subject)
    this.newlines()
    this.expect("in")
    const items: Array<{ patterns: Array<Word>; body: List }> = []
    for (;;) {
      this.newlines()
      if (isWord(this.lexer.peek(), "esac")) break
      if (isOp(this.lexer.peek(), "(")) this.lexer.next()
      const patterns: Array<Word> = []
      for (;;) {
        const pattern = this.lexer.next()
        if (pattern?._tag !== "Word") this.fail(undefined, pattern)
        patterns.push(pattern.word)
        if (!isOp(this.lexer.peek(), "|")) break
        this.lexer.next()
      }
      this.expect(")", true)
      items.push({ patterns, body: this.list((t) => isOp(t, ";;") || isWord(t, "esac")) })
      if (!isOp(this.lexer.peek(), ";;")) break
      this.lexer.next()
    }
    this.newlines()
    this.expect("esac")
    return this.compound(line, { _tag: "Case", subject: subject.word, items })
  }

  private simple(): SimpleCommand {
    const line = this.lexer.peek()?.line ?? 1
    const assignments: Array<Assignment> = []
    const words: Array<Word> = []
    const redirects: Array<Redirect> = []
    for (let token = this.lexer.peek(); token !== undefined; token = this.lexer.peek()) {
      if (token._tag === "Op") break
      if (token._tag === "Redirect") {
        this.redirects(redirects)
        continue
      }
      this.lexer.next()
      const assignment = words.length === 0 ? asAssignment(token) : undefined
      if (assignment !== undefined) assignments.push(assignment)
      else words.push(token.word)
    }
    if (assignments.length === 0 && words.length === 0 && redirects.length === 0) this.fail()
    return { _tag: "Simple", line, assignments, words, redirects }
  }
}
