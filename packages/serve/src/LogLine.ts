/**
 * The shape of one SGLang log line: cleaning (ANSI colours, `\r` progress bars) and the
 * `[2026-05-10 12:00:05(.123)( PREFIX)] message` header. Written to allocate nothing for
 * lines that need no cleaning.
 * @internal
 */

const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]/g

/** Strips ANSI escapes and keeps the last non-empty `\r` segment (what a terminal shows). */
export const cleanLine = (raw: string): string => {
  let line = raw
  if (line.indexOf("\x1b") !== -1) line = line.replace(ANSI, "")
  // indexOf first: V8's lastIndexOf scans slowly, and most lines have no `\r` at all
  if (line.indexOf("\r") === -1) return line
  let cr = line.lastIndexOf("\r")
  while (cr !== -1) {
    if (cr < line.length - 1) return line.slice(cr + 1)
    line = line.slice(0, cr)
    cr = line.lastIndexOf("\r")
  }
  return line
}

const isDigit = (c: number) => c >= 48 && c <= 57

/**
 * Index where the message starts when the line has SGLang's time header, else -1.
 * `[YYYY-MM-DD HH:MM:SS` is checked by position; the header ends at the first `] `.
 */
export const messageStart = (line: string): number => {
  if (line.charCodeAt(0) !== 91 /* [ */ || line.length < 22) return -1
  if (!isDigit(line.charCodeAt(1)) || line.charCodeAt(5) !== 45 || line.charCodeAt(11) !== 32) return -1
  if (line.charCodeAt(14) !== 58 || line.charCodeAt(17) !== 58) return -1
  const close = line.indexOf("]", 20)
  if (close === -1 || close > 60) return -1
  return line.charCodeAt(close + 1) === 32 ? close + 2 : close + 1
}

/** The process named in the header: the rank prefix (`TP1`, `DP0 TP1`) or `launcher`. */
export const headerProcess = (line: string, msgStart: number): string => {
  // after "[YYYY-MM-DD HH:MM:SS" comes optional ".mmm", then optional " PREFIX", then "]"
  let i = 20
  if (line.charCodeAt(i) === 46 /* . */) {
    i++
    while (isDigit(line.charCodeAt(i))) i++
  }
  const close = line.lastIndexOf("]", msgStart - 1)
  if (line.charCodeAt(i) !== 32 || close <= i + 1) return "launcher"
  return line.slice(i + 1, close)
}

const num = (line: string, from: number, len: number): number => {
  let n = 0
  for (let i = from; i < from + len; i++) n = n * 10 + (line.charCodeAt(i) - 48)
  return n
}

/** The header time in ms (UTC-naive: only differences matter). */
export const headerTime = (line: string): number => {
  let ms = 0
  if (line.charCodeAt(20) === 46) {
    let i = 21
    let scale = 100
    while (isDigit(line.charCodeAt(i)) && scale >= 1) {
      ms += (line.charCodeAt(i) - 48) * scale
      scale /= 10
      i++
    }
  }
  return (
    Date.UTC(
      num(line, 1, 4),
      num(line, 6, 2) - 1,
      num(line, 9, 2),
      num(line, 12, 2),
      num(line, 15, 2),
      num(line, 18, 2)
    ) + ms
  )
}
