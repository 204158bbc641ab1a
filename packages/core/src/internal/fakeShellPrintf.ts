/**
 * dash's `printf` and `echo` builtins, as text: `printf FORMAT ARGS...` with backslash escapes
 * and the `%s %b %c %d %i %u %o %x %X %%` conversions (flags, width, precision, `*`), the
 * format reused while arguments remain; `echo [-n]` with dash's escapes (`\c` ends all output).
 * Floating-point conversions are refused with `Unsupported`.
 *
 * @internal
 */
import { Unsupported } from "./fakeShellWords.js"

const SIMPLE_ESCAPES: Record<string, string> = {
  "\\": "\\",
  a: "\x07",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v"
}

/**
 * The backslash escape at `text[i]` (after the backslash): its text and the index after it.
 * `inArgument`: `%b` and echo, which spell octal `\0NNN` and stop all output at `\c`
 * (`stop`); a format spells octal `\NNN`.
 */
const backslashEscape = (
  text: string,
  i: number,
  inArgument: boolean
): { readonly out: string; readonly next: number } | "stop" => {
  const c = text[i]
  if (c === undefined) return { out: "\\", next: i }
  const simple = SIMPLE_ESCAPES[c]
  if (simple !== undefined) return { out: simple, next: i + 1 }
  if (c === "c" && inArgument) return "stop"
  const start = inArgument && c === "0" ? i + 1 : i
  if (/[0-7]/.test(c) && (inArgument ? c === "0" : true)) {
    const digits = /^[0-7]{0,3}/.exec(text.slice(start))![0]
    return { out: String.fromCharCode(Number.parseInt(digits || "0", 8) & 255), next: start + digits.length }
  }
  return { out: `\\${c}`, next: i + 1 }
}

/** `%b`'s argument or an echo argument: escapes expanded; `stop` after a `\c`. */
const expandEscapes = (text: string): { readonly out: string; readonly stop: boolean } => {
  let out = ""
  for (let i = 0; i < text.length; ) {
    if (text[i] !== "\\") {
      out += text[i++]
      continue
    }
    const done = backslashEscape(text, i + 1, true)
    if (done === "stop") return { out, stop: true }
    out += done.out
    i = done.next
  }
  return { out, stop: false }
}

/** dash's `echo`: `-n` as the first argument only; escapes always. */
export const echo = (args: ReadonlyArray<string>): string => {
  const noNewline = args[0] === "-n"
  const { out, stop } = expandEscapes((noNewline ? args.slice(1) : args).join(" "))
  return stop || noNewline ? out : `${out}\n`
}

export interface Printed {
  readonly output: string
  /** Messages as dash words them (after `printf: `); the status is 1 when there are some. */
  readonly errors: ReadonlyArray<string>
  /** An invalid directive: dash stops with status 2. */
  readonly invalid?: string
}

const integer = (arg: string, errors: Array<string>): number => {
  if (arg === "") return 0
  if (arg[0] === "'" || arg[0] === '"') return arg.length > 1 ? arg.codePointAt(1)! : 0
  const match = /^\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)/.exec(arg)
  if (match === null) {
    errors.push(`${arg}: expected numeric value`)
    return 0
  }
  const value =
    Number(match[1] === "-" ? -1 : 1) *
    Number.parseInt(
      match[2]!,
      /^0[xX]/.test(match[2]!) ? 16 : match[2]!.length > 1 && match[2]!.startsWith("0") ? 8 : 10
    )
  if (match[0].length !== arg.length) errors.push(`${arg}: not completely converted`)
  return value
}

const pad = (text: string, flags: string, width: number | undefined) => {
  if (width === undefined || text.length >= width) return text
  if (flags.includes("-")) return text.padEnd(width)
  return text.padStart(width)
}

const formatInteger = (
  value: number,
  conversion: string,
  flags: string,
  width: number | undefined,
  precision: number | undefined
) => {
  const negative = value < 0
  const magnitude = Math.abs(Math.trunc(value))
  const unsigned =
    conversion === "d" || conversion === "i" ? magnitude : negative ? 2 ** 64 - magnitude : magnitude
  let digits =
    conversion === "o"
      ? unsigned.toString(8)
      : conversion === "x"
        ? unsigned.toString(16)
        : conversion === "X"
          ? unsigned.toString(16).toUpperCase()
          : String(unsigned)
  if (precision !== undefined) digits = digits.padStart(precision, "0")
  if (flags.includes("#") && conversion === "o" && !digits.startsWith("0")) digits = `0${digits}`
  if (flags.includes("#") && (conversion === "x" || conversion === "X") && magnitude !== 0)
    digits = `0${conversion}${digits}`
  const sign =
    conversion === "d" || conversion === "i"
      ? negative
        ? "-"
        : flags.includes("+")
          ? "+"
          : flags.includes(" ")
            ? " "
            : ""
      : ""
  if (flags.includes("0") && !flags.includes("-") && precision === undefined && width !== undefined)
    return sign + digits.padStart(width - sign.length, "0")
  return pad(sign + digits, flags, width)
}

const DIRECTIVE = /^%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?([a-zA-Z%])/

/** `printf FORMAT ARGS...`. */
export const printf = (format: string, args: ReadonlyArray<string>): Printed => {
  const errors: Array<string> = []
  let output = ""
  let next = 0
  const take = () => args[next++]
  for (;;) {
    const before = next
    for (let i = 0; i < format.length; ) {
      const c = format[i]!
      if (c === "\\") {
        const done = backslashEscape(format, i + 1, false)
        if (done === "stop") return { output, errors }
        output += done.out
        i = done.next
        continue
      }
      if (c !== "%") {
        output += c
        i++
        continue
      }
      const match = DIRECTIVE.exec(format.slice(i))
      if (match === null) return { output, errors, invalid: `${format.slice(i)}: invalid directive` }
      i += match[0].length
      const [, flags = "", widthText, precisionText, conversion = ""] = match
      if (conversion === "%") {
        output += "%"
        continue
      }
      const width =
        widthText === "*"
          ? integer(take() ?? "", errors)
          : widthText === undefined
            ? undefined
            : Number(widthText)
      const precision =
        precisionText === undefined
          ? undefined
          : precisionText === "*"
            ? integer(take() ?? "", errors)
            : Number(precisionText || "0")
      const arg = take()
      switch (conversion) {
        case "s":
          output += pad((arg ?? "").slice(0, precision), flags, width)
          break
        case "b": {
          const expanded = expandEscapes(arg ?? "")
          output += pad(expanded.out.slice(0, precision), flags, width)
          if (expanded.stop) return { output, errors }
          break
        }
        case "c":
          output += pad((arg ?? "").slice(0, 1), flags, width)
          break
        case "d":
        case "i":
        case "u":
        case "o":
        case "x":
        case "X":
          output += formatInteger(integer(arg ?? "", errors), conversion, flags, width, precision)
          break
        case "e":
        case "E":
        case "f":
        case "F":
        case "g":
        case "G":
        case "a":
        case "A":
          throw new Unsupported(`printf %${conversion}`)
        default:
          return { output, errors, invalid: `%${conversion}: invalid directive` }
      }
    }
    // the format is used again while arguments remain, if it took any
    if (next >= args.length || next === before) return { output, errors }
  }
}
