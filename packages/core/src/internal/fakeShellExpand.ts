/**
 * Word expansion for the fake host's shell, as dash does it for what `fakeShellSyntax`
 * parses: tilde, parameters, field splitting of unquoted expansions. Pathname expansion is
 * refused (`Unsupported`) rather than modelled: mlops never renders an unquoted glob.
 *
 * @internal
 */
import { Unsupported, type Word } from "./fakeShellSyntax.js"

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
