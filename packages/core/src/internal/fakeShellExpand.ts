/**
 * Word expansion for the fake host's shell, as dash does it: tilde, parameters (with their
 * defaults and affix removals), `$@`/`$*`, command substitutions' output (already run: an
 * `Output` segment), and field splitting by `IFS`. Pure: pathname expansion, which reads
 * directories, is `fakeShellGlob`'s, over the fields this returns (which remember what was
 * quoted).
 *
 * @internal
 */
import { type Field, type Piece, removeAffix } from "./fakeShellPatterns.js"
import type { Segment, Word } from "./fakeShellSyntax.js"

/** What expansion reads: shell variables, special parameters and `$1...`. */
export interface Parameters {
  readonly lookup: (name: string) => string | undefined
  /** `$1`, `$2`, ... (what `$@` and `$*` expand to). */
  readonly positional: ReadonlyArray<string>
}

const DEFAULT_IFS = " \t\n"
const IFS_WHITESPACE = " \t\n"

/** Builds fields from pieces; splits unquoted expansions when `split`. */
class Fields {
  readonly fields: Array<Field> = []
  private current: Array<Piece> = []
  // whether the field being built exists even if empty (a quoted piece was seen)
  private exists = false
  /** What `$*` (and `$@` where nothing is split) joins parameters with: IFS's first character. */
  readonly separator: string

  constructor(
    readonly split: boolean,
    private readonly ifs: string
  ) {
    this.separator = ifs.slice(0, 1)
  }

  literal(text: string, quoted: boolean) {
    if (text !== "" || quoted) this.current.push({ text, quoted })
    if (text !== "" || quoted) this.exists = true
  }

  /** End the field being built; `force` keeps it even when empty (a non-blank IFS delimiter). */
  end(force: boolean) {
    if (force || this.exists) this.fields.push(this.current)
    this.current = []
    this.exists = false
  }

  /** An expansion's value: kept whole when quoted, else split at IFS characters. */
  value(value: string, quoted: boolean) {
    if (quoted || !this.split || this.ifs === "") return this.literal(value, quoted)
    const isIfs = (c: string) => this.ifs.includes(c)
    const isBlank = (c: string) => isIfs(c) && IFS_WHITESPACE.includes(c)
    let i = 0
    while (i < value.length) {
      if (!isIfs(value[i]!)) {
        let j = i
        while (j < value.length && !isIfs(value[j]!)) j++
        this.literal(value.slice(i, j), false)
        i = j
        continue
      }
      // one delimiter: IFS blanks, at most one other IFS character, IFS blanks
      let j = i
      while (j < value.length && isBlank(value[j]!)) j++
      const hard = j < value.length && isIfs(value[j]!) && !isBlank(value[j]!)
      if (hard) {
        j++
        while (j < value.length && isBlank(value[j]!)) j++
      }
      this.end(hard)
      i = j
    }
  }

  finish(): Array<Field> {
    if (this.exists) this.fields.push(this.current)
    return this.fields
  }
}

/** `~` and `~/...` at the start of a word; `~name` stays literal (the fake knows no other users' homes). */
const expandTilde = (text: string, params: Parameters): string => {
  if (!text.startsWith("~")) return text
  const slash = text.indexOf("/")
  const user = slash < 0 ? text.slice(1) : text.slice(1, slash)
  if (user !== "") return text
  return (params.lookup("HOME") ?? "") + (slash < 0 ? "" : text.slice(slash))
}

/** Whether `${NAME<op>WORD}` uses its WORD (so that a `$(...)` in it must run). */
export const usesArg = (segment: Extract<Segment, { _tag: "ParamOp" }>, params: Parameters): boolean => {
  const value = params.lookup(segment.name)
  const isNull = value === undefined || (segment.op.startsWith(":") && value === "")
  switch (segment.op) {
    case "-":
    case ":-":
      return isNull
    case "+":
    case ":+":
      return !isNull
    default:
      return true
  }
}

/**
 * In an assignment a tilde prefix also follows each unquoted `:` (`PATH=~/bin:~/x`), and ends
 * at a `/` or a `:`; one running into a quoted part or an expansion stays literal.
 */
const assignmentTildes = (text: string, atStart: boolean, last: boolean, params: Parameters): string =>
  text.replace(/(^|:)~([^/:]*)(?=[/:]|$)/g, (prefix, colon: string, user: string, at: number) => {
    if ((colon === "" && !atStart) || user !== "") return prefix
    if (at + prefix.length === text.length && !last) return prefix
    return colon + (params.lookup("HOME") ?? "")
  })

/**
 * Where a word is expanded: a command's word, the word of a `${NAME:-WORD}` (whose unquoted
 * text is split too), an assignment's value.
 */
type Context = "word" | "nested" | "assignment"

const expandInto = (out: Fields, word: Word, params: Parameters, context: Context = "word"): void => {
  for (const [index, segment] of word.entries()) expandSegment(out, segment, index, word, params, context)
}

const expandSegment = (
  out: Fields,
  segment: Segment,
  index: number,
  word: Word,
  params: Parameters,
  context: Context
): void => {
  switch (segment._tag) {
    case "Text": {
      // the tilde prefix runs to the first unquoted `/`; any quoting or expansion in it
      // makes it literal (`~'x'`, `~$B`), as dash does
      const tilde = !segment.quoted && index === 0 && (segment.text.includes("/") || word.length === 1)
      const text =
        context === "assignment" && !segment.quoted
          ? assignmentTildes(segment.text, index === 0, index === word.length - 1, params)
          : tilde
            ? expandTilde(segment.text, params)
            : segment.text
      if (context === "nested") out.value(text, segment.quoted)
      else out.literal(text, segment.quoted)
      return
    }
    case "Param":
      expandParam(out, segment.name, segment.quoted, params)
      return
    case "ParamOp": {
      if (segment.quoted) out.literal("", true)
      const value = params.lookup(segment.name)
      if (segment.op === "#" || segment.op === "##" || segment.op === "%" || segment.op === "%%") {
        const pattern = expandPattern(segment.arg, params)
        out.value(removeAffix(value ?? "", pattern, segment.op), segment.quoted)
      } else if (usesArg(segment, params)) expandInto(out, segment.arg, params, "nested")
      else if (segment.op === "-" || segment.op === ":-") out.value(value ?? "", segment.quoted)
      return
    }
    case "Length":
      out.value(String((params.lookup(segment.name) ?? "").length), segment.quoted)
      return
    case "Output":
      out.value(segment.text, segment.quoted)
      return
    case "Command":
      throw new Error("fake shell: a command substitution reached expansion without being run")
  }
}

const expandParam = (out: Fields, name: string, quoted: boolean, params: Parameters) => {
  // where nothing is split, $@ joins its parameters as $* does (dash)
  if ((name === "*" && quoted) || ((name === "@" || name === "*") && !out.split))
    return out.value(params.positional.join(out.separator), quoted)
  if (name === "@" && quoted) {
    // "$@": one field per parameter (none at all without parameters)
    params.positional.forEach((p, k) => {
      if (k > 0) out.end(true)
      out.literal(p, true)
    })
    return
  }
  if (name === "@" || name === "*") {
    params.positional.forEach((p, k) => {
      if (k > 0) out.end(false)
      out.value(p, false)
    })
    return
  }
  out.value(params.lookup(name) ?? "", quoted)
}

const ifsOf = (params: Parameters) => params.lookup("IFS") ?? DEFAULT_IFS

/** A word's fields: tilde, parameters, command output, field splitting (pathname expansion is the caller's). */
export const expandFields = (word: Word, params: Parameters): Array<Field> => {
  const out = new Fields(true, ifsOf(params))
  expandInto(out, word, params)
  return out.finish()
}

/** A word expanded without field splitting or pathname expansion (assignments, redirections, `case`). */
export const expandString = (word: Word, params: Parameters): string =>
  expandPattern(word, params)
    .map((p) => p.text)
    .join("")

/** A pattern (`case`, `${x#...}`): expanded without splitting, keeping which parts were quoted. */
export const expandPattern = (word: Word, params: Parameters, context: Context = "word"): Field => {
  const out = new Fields(false, ifsOf(params))
  expandInto(out, word, params, context)
  return out.finish().flat()
}

/** An assignment's value: as `expandString`, with the tildes after `:` too. */
export const expandAssignment = (word: Word, params: Parameters): string =>
  expandPattern(word, params, "assignment")
    .map((p) => p.text)
    .join("")
