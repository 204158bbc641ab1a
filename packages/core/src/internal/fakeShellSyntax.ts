/**
 * The POSIX-sh syntax the fake host understands: what mlops renders and little more. Words
 * with single quotes, double quotes, backslashes, `$NAME` / `${NAME}` / `$1` / `$$` / `$?`
 * and a leading `~`; simple commands with `NAME=value` prefixes and redirections (`<`, `>`,
 * `>>`, `N>&M`, `N<&M`, `N>&-`); lists joined by `&&`, `||`, `;` and newlines; `#` comments.
 *
 * Anything else a real shell would do something with (pipes, `&`, subshells, compound
 * commands, command substitution, globbing, `${x:-y}`) is refused with `Unsupported`, never
 * guessed: a fake that silently differs from `sh` would let a test pass that fails on a host.
 *
 * Parsing and expansion are pure; `fakeShell.ts` runs the result.
 *
 * @internal
 */

import {
  type Segment,
  ShellSyntaxError,
  type Token,
  tokenize,
  Unsupported,
  type Word
} from "./fakeShellTokens.js"

export { type Segment, ShellSyntaxError, Unsupported, type Word } from "./fakeShellTokens.js"

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
  /** The script line it starts on (dash's error messages name it). */
  readonly line: number
  readonly assignments: ReadonlyArray<Assignment>
  readonly words: ReadonlyArray<Word>
  readonly redirects: ReadonlyArray<Redirect>
}

/** `first`, then each `rest` command run when the previous status allows (`&&`: 0, `||`: not 0). */
export interface AndOr {
  readonly first: SimpleCommand
  readonly rest: ReadonlyArray<{ readonly op: "&&" | "||"; readonly command: SimpleCommand }>
}

export type Script = ReadonlyArray<AndOr>

const RESERVED = new Set([
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "do",
  "done",
  "case",
  "esac",
  "while",
  "until",
  "for",
  "{",
  "}",
  "!",
  "in",
  "function"
])

const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=/

/** The assignment a word spells (`NAME=value`, the name unquoted), if it is one. */
const asAssignment = (token: Extract<Token, { _tag: "Word" }>): Assignment | undefined => {
  const first = token.word[0]
  if (first?._tag !== "Text" || first.quoted) return undefined
  const match = ASSIGNMENT.exec(first.text)
  if (match === null) return undefined
  const rest = first.text.slice(match[0].length)
  const value: Array<Segment> = rest === "" ? [] : [{ _tag: "Text", text: rest, quoted: false }]
  value.push(...token.word.slice(1))
  return { name: match[1]!, value }
}

/** Parse a whole script. Throws ShellSyntaxError or Unsupported. */
export const parse = (text: string): Script => {
  const tokens = tokenize(text)
  const script: Array<AndOr> = []
  let i = 0
  const simple = (): SimpleCommand | undefined => {
    const line = tokens[i]?.line ?? 1
    const assignments: Array<Assignment> = []
    const words: Array<Word> = []
    const redirects: Array<Redirect> = []
    while (i < tokens.length) {
      const token = tokens[i]!
      if (token._tag === "Op") break
      if (token._tag === "Redirect") {
        const target = tokens[i + 1]
        if (target?._tag !== "Word") throw new ShellSyntaxError("Syntax error: redirection without a target")
        redirects.push({
          fd: token.fd ?? (token.op.startsWith("<") ? 0 : 1),
          op: token.op,
          target: target.word
        })
        i += 2
        continue
      }
      if (words.length === 0) {
        const assignment = asAssignment(token)
        if (assignment !== undefined) {
          assignments.push(assignment)
          i++
          continue
        }
        if (RESERVED.has(token.raw)) throw new Unsupported(`compound command or reserved word "${token.raw}"`)
      }
      words.push(token.word)
      i++
    }
    if (assignments.length === 0 && words.length === 0 && redirects.length === 0) return undefined
    return { line, assignments, words, redirects }
  }
  while (i < tokens.length) {
    const token = tokens[i]!
    if (token._tag === "Op" && (token.op === ";" || token.op === "\n")) {
      if (token.op === ";" && script.length === 0) throw new ShellSyntaxError('Syntax error: ";" unexpected')
      i++
      continue
    }
    const first = simple()
    if (first === undefined) throw new ShellSyntaxError(`Syntax error: "${opText(tokens[i])}" unexpected`)
    const rest: Array<{ op: "&&" | "||"; command: SimpleCommand }> = []
    while (i < tokens.length) {
      const op = tokens[i]!
      if (op._tag !== "Op" || (op.op !== "&&" && op.op !== "||")) break
      i++
      while (tokens[i]?._tag === "Op" && (tokens[i] as { op: string }).op === "\n") i++
      const command = simple()
      if (command === undefined) throw new ShellSyntaxError(`Syntax error: end of file unexpected`)
      rest.push({ op: op.op, command })
    }
    script.push({ first, rest })
  }
  return script
}

const opText = (token: Token | undefined) =>
  token === undefined ? "end of file" : token._tag === "Op" ? token.op : token._tag
