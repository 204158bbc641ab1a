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

/** One piece of a word: literal text, or a parameter to expand; `quoted` pieces are never split. */
export type Segment =
  | { readonly _tag: "Text"; readonly text: string; readonly quoted: boolean }
  | { readonly _tag: "Param"; readonly name: string; readonly quoted: boolean }

export type Word = ReadonlyArray<Segment>

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

/** Real sh rejects this text too (e.g. an unterminated quote): exit 2 like dash. */
export class ShellSyntaxError extends Error {
  readonly _tag = "ShellSyntaxError"
}

/** Valid sh that the fake does not model: the test is wrong to rely on it. */
export class Unsupported extends Error {
  readonly _tag = "Unsupported"
}

type Token = (
  | { readonly _tag: "Word"; readonly word: Word; readonly raw: string }
  | { readonly _tag: "Op"; readonly op: "&&" | "||" | ";" | "\n" }
  | { readonly _tag: "Redirect"; readonly fd: number | undefined; readonly op: Redirect["op"] }
) & { readonly line: number }

const NAME_START = /[A-Za-z_]/
const NAME_CHAR = /[A-Za-z0-9_]/
const SPECIAL_PARAMS = new Set(["$", "?", "#", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"])
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
const tokenize = (text: string): Array<Token> => {
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

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

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

// ---- expansion ------------------------------------------------------------------------------

/** What expansion reads: shell variables and positional parameters. */
export interface Parameters {
  readonly lookup: (name: string) => string | undefined
}

const IFS = /[ \t\n]+/

/**
 * Expand one word into fields: tilde, parameters, field splitting of unquoted expansions.
 * Pathname expansion is refused (Unsupported) rather than modelled.
 */
export const expandWord = (word: Word, params: Parameters): Array<string> => {
  const fields: Array<string> = []
  let current = ""
  // whether the field being built exists even if empty (a quoted piece was seen)
  let exists = false
  word.forEach((segment, index) => {
    if (segment._tag === "Text") {
      let text = segment.text
      if (!segment.quoted) {
        // the tilde prefix runs to the first unquoted `/`; any quoting or expansion in it
        // makes it literal (`~'x'`, `~$B`), as dash does
        if (index === 0 && (text.includes("/") || word.length === 1)) text = expandTilde(text, params)
        if (/[*?]/.test(text) || /\[.*\]/.test(text)) throw new Unsupported(`pathname expansion in "${text}"`)
      }
      current += text
      if (segment.quoted || text !== "") exists = true
      return
    }
    const value = params.lookup(segment.name) ?? ""
    if (segment.quoted) {
      current += value
      exists = true
      return
    }
    if (/[*?[]/.test(value)) throw new Unsupported(`pathname expansion of $${segment.name}`)
    const parts = value.split(IFS)
    parts.forEach((part, k) => {
      if (k > 0) {
        if (exists || current !== "") fields.push(current)
        current = ""
        exists = false
      }
      current += part
      if (part !== "") exists = true
    })
  })
  if (exists || current !== "") fields.push(current)
  return fields
}

/** Expand an assignment value: tilde at the start, parameters, no field splitting. */
export const expandValue = (word: Word, params: Parameters): string =>
  word
    .map((segment, index) => {
      if (segment._tag === "Param") return params.lookup(segment.name) ?? ""
      return !segment.quoted && index === 0 && (segment.text.includes("/") || word.length === 1)
        ? expandTilde(segment.text, params)
        : segment.text
    })
    .join("")

/** `~` and `~/...`; `~name` stays literal (the fake knows no other users' homes). */
const expandTilde = (text: string, params: Parameters): string => {
  if (!text.startsWith("~")) return text
  const slash = text.indexOf("/")
  const user = slash < 0 ? text.slice(1) : text.slice(1, slash)
  if (user !== "") return text
  return (params.lookup("HOME") ?? "") + (slash < 0 ? "" : text.slice(slash))
}
