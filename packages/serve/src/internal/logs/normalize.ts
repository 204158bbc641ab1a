/**
 * Undoes what pasting, containers and process managers do to a log line, so that signatures see
 * the message itself: ANSI colour and syslog escapes, `\r` progress bars, quote markers (`> `),
 * list bullets, line-number gutters, docker-compose columns (`name-1  | `), ISO timestamps
 * (`docker logs -t`), torch rank tags (`[rank1]:`, `[default0]:`), glog headers
 * (`[E130 18:11:34.7 ProcessGroupNCCL.cpp:143]`), vLLM worker tags (`(VllmWorker rank=1
 * pid=456)`, `(EngineCore_DP0 pid=1)`, Ray's `(pid=1, ip=...)`), level headers (`ERROR 05-01
 * 12:00:00 [file.py:12]`, `2025-03-09 05:46:53,503 name 1 ERROR`, rich's `INFO     `), xinference's
 * `[address=..., pid=...]`, and SGLang's own `[2026-05-10 12:00:05 TP1]`. Engine-neutral.
 * @internal
 */
import { cleanLine, headerProcess, messageStart } from "../../LogLine.js"
import type { Level } from "../../LogSignature.js"

export interface Normalized {
  /** The line as a terminal shows it (colours and `\r` bars resolved): what evidence cites. */
  readonly line: string
  /** The message: prefixes and paste artifacts removed, relative indentation kept. */
  readonly text: string
  /** The process the prefixes named (`TP1`, `VllmWorker rank=1`, `EngineCore_DP0`), if any. */
  readonly process: string | undefined
  /** Whether a log-record header was removed (a new record starts here, unlike a continuation). */
  readonly header: boolean
  /** Index in the cleaned line where SGLang's message starts, when the line had SGLang's header. */
  readonly sglangAt: number
  /** The level a stripped header named. */
  readonly level: Level | undefined
}

const LEVEL_WORD = /\b(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b/
const levelOf = (header: string): Level | undefined => {
  const word = LEVEL_WORD.exec(header)?.[1]
  if (word === undefined) {
    const glog = /^\[([EWIF])\d{4}/.exec(header)?.[1]
    return glog === undefined ? undefined : glog === "I" ? "info" : glog === "W" ? "warning" : "error"
  }
  return word === "DEBUG" ? "debug" : word === "INFO" ? "info" : word.startsWith("WARN") ? "warning" : "error"
}

// syslog (`#033[1;36m`, `#015`) and caret notation (`^M`) of control characters, as pasted
const SYSLOG = /#033\[[0-9;]*[A-Za-z]|#015|\^M$/g
const QUOTE = /^(?:\s*>)+ ?/
const BULLET = /^\s*(?:[-*•]|\d{1,3}[.)])\s+(?=\S)/
const GUTTER = /^\s*\d{1,6}\s*[|│]\s?/
// `name-1  | `, `vllm     | `, `gemma-vllm-server  | `: a container name, padding, a bar
const COMPOSE = /^[A-Za-z0-9][\w.-]{0,62}\s+\|(?: |$)/
const ISO_TIME = /^\[?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s+/
const RANK = /^\[(?:rank\d+|default\d+|\d+)\]:\s?/
const GLOG = /^\[[EWIF]\d{4} [\d:.]+ [\w.-]+:\d+\]\s?/
// `(VllmWorker rank=1 pid=456)`, `(EngineCore_DP0 pid=1)`, `(pid=1, ip=127.0.0.1)`, `(raylet)`
const WORKER_INNER = /^(?:[A-Za-z_][\w-]*(?: rank=\d+)?(?: pid=\d+)?(?:, ip=[^)]*)?|pid=\d+(?:, ip=[^)]*)?)$/

/** The length of a `(VllmWorker rank=1 pid=456) ` tag, 0 when there is none; the regex runs on the short inside only. */
const workerTag = (text: string): number => {
  const close = text.indexOf(")", 1)
  if (close < 2 || close > 96) return 0
  const inner = text.slice(1, close)
  if (!WORKER_INNER.test(inner)) return 0
  got.process = processOfWorker(inner)
  return text.charCodeAt(close + 1) === 32 ? close + 2 : close + 1
}
const LEVELS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
// vLLM: `ERROR 05-01 12:00:00 [file.py:12] `, `ERROR 2026-04-25 10:01:17.340 [file.py:246] `,
// NIM: `ERROR 2025-07-21 14:34:24.934 file.py:62] `
const LEVEL_WORDS = ["DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL"]
const LOCATION = /^\[?[\w./<>-]+:\d+$/
const digitsAt = (text: string, at: number, n: number) => {
  for (let i = at; i < at + n; i++) if (!isDigit(text.charCodeAt(i))) return false
  return true
}

/** The length of a vLLM header (`ERROR 05-01 12:00:00 [file.py:12] `, `INFO 2026-04-25 10:01:17.340 [f.py:3] `), else 0. */
const levelHeader = (text: string): number => {
  const word = LEVEL_WORDS.find((w) => text.startsWith(w) && text.charCodeAt(w.length) === 32)
  if (word === undefined) return 0
  let i = word.length + 1
  if (digitsAt(text, i, 4) && text.charCodeAt(i + 4) === 45) i += 5
  // MM-DD HH:MM:SS
  if (!(digitsAt(text, i, 2) && text.charCodeAt(i + 2) === 45 && digitsAt(text, i + 3, 2))) return 0
  if (!(text.charCodeAt(i + 5) === 32 && digitsAt(text, i + 6, 2) && text.charCodeAt(i + 8) === 58)) return 0
  if (!(digitsAt(text, i + 9, 2) && text.charCodeAt(i + 11) === 58 && digitsAt(text, i + 12, 2))) return 0
  i += 14
  if (text.charCodeAt(i) === 46 || text.charCodeAt(i) === 44) {
    i++
    while (isDigit(text.charCodeAt(i))) i++
  }
  if (text.charCodeAt(i) !== 32) return 0
  const close = text.indexOf("]", i + 1)
  if (close === -1 || close - i > 96 || !LOCATION.test(text.slice(i + 1, close))) return 0
  return text.charCodeAt(close + 1) === 32 ? close + 2 : close + 1
}
// python logging / loguru: `2025-03-09 05:46:53,503 xinference.core.worker 30898 ERROR    `,
// `2024-01-01 12:00:00.123 | ERROR | stderr | `, `2025-01-01 12:00:00 - __main__ - INFO - `
const LOGGING = new RegExp(
  `^\\[?\\d{4}-\\d\\d-\\d\\d[ T]\\d\\d:\\d\\d:\\d\\d(?:[.,]\\d+)?(?:Z|[+-]\\d\\d:?\\d\\d)?\\]?(?:\\s*[-|]?\\s*[\\w.<>\\[\\]-]+){0,3}?\\s*[-|]?\\s*(?:${LEVELS})\\b\\s*(?:[-|:]\\s*)?(?:[\\w.]+\\s*[|:-]\\s+)?`
)
// a short time header with the file: `[07-16 05:15:50] [api_server.py:1090] `, `[12-16 14:27:10] `
const SHORT_TIME = /^\[(?:\d\d-\d\d )?\d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Z]+\d+)*\]\s?(?:\[[\w./-]+:\d+\]\s?)?/
// rich console: `[05/05/25 16:31:14] DEBUG    ` or a continuation `                    INFO     `
const RICH = new RegExp(
  `^(?:\\[\\d\\d/\\d\\d/\\d\\d \\d\\d:\\d\\d:\\d\\d\\]\\s+|\\s{8,})(?:${LEVELS})\\s{2,}`
)
const PLAIN_LEVEL = new RegExp(`^(?:${LEVELS})(?::\\s+|:[\\w.]+:)`)
const XINFERENCE = /\[address=[^\]]*, pid=\d+\]\s?/g

/** `VllmWorker rank=1 pid=456` -> `VllmWorker rank=1`; Ray's bare `pid=1, ip=...` -> `ray`. */
const processOfWorker = (inner: string): string => {
  if (inner.startsWith("pid=")) return "ray"
  const pid = inner.indexOf(" pid=")
  return pid === -1 ? inner : inner.slice(0, pid)
}

const isDigit = (c: number) => c >= 48 && c <= 57
/** `YYYY-MM-DD` at `at`: the cheap gate before the date-led regexes. */
const dateAt = (text: string, at: number) =>
  isDigit(text.charCodeAt(at)) && text.charCodeAt(at + 4) === 45 && text.charCodeAt(at + 7) === 45
const LEVEL_INITIALS = new Set([68, 73, 87, 69, 67, 70]) // D I W E C F

/** What the last `stripOnce` learnt besides the length (scratch state: one line at a time). */
const got: { process: string | undefined; header: boolean; level: Level | undefined; last: boolean } = {
  process: undefined,
  header: false,
  level: undefined,
  // a level header is the innermost prefix: the message follows it
  last: false
}

/** The level of a header that starts with its level word. */
const leadingLevel = (c: number): Level =>
  c === 68 ? "debug" : c === 73 ? "info" : c === 87 ? "warning" : "error"

/** An ISO timestamp or a python-logging header (`[`-bracketed or not), else 0; `got.level` from the latter. */
const datedHeader = (text: string): number => {
  const iso = ISO_TIME.exec(text)
  if (iso) return iso[0].length
  const logging = LOGGING.exec(text)
  if (!logging) return 0
  got.level = levelOf(logging[0])
  return logging[0].length
}

/** The length of one layer of prefix (0 when none applies); `got` says what it named. */
const stripOnce = (text: string): number => {
  got.process = undefined
  got.header = true
  got.level = undefined
  got.last = false
  const c = text.charCodeAt(0)
  if (c === 62 /* > */ || c === 32 /* space */ || c === 9) {
    const quote = QUOTE.exec(text)
    if (quote) {
      got.header = false
      return quote[0].length
    }
    const rich = RICH.exec(text)
    if (rich) {
      got.level = levelOf(rich[0])
      return rich[0].length
    }
  }
  if (c === 40 /* ( */) {
    const worker = workerTag(text)
    if (worker > 0) return worker
  }
  if (c === 91 /* [ */) {
    const rank = RANK.exec(text)
    if (rank) {
      const n = /\d+/.exec(rank[0])
      if (n) got.process = `rank ${n[0]}`
      return rank[0].length
    }
    const glog = GLOG.exec(text)
    if (glog) {
      got.level = levelOf(glog[0])
      return glog[0].length
    }
    if (dateAt(text, 1)) {
      const dated = datedHeader(text)
      if (dated > 0) return dated
    }
    const short = SHORT_TIME.exec(text)
    if (short) {
      const rank = /\b((?:DP|TP|PP|EP)\d+(?: (?:DP|TP|PP|EP)\d+)*)\]/.exec(short[0])
      if (rank) got.process = rank[1]!
      return short[0].length
    }
  }
  if (isDigit(c)) {
    if (dateAt(text, 0)) {
      const dated = datedHeader(text)
      if (dated > 0) return dated
    }
    const gutter = GUTTER.exec(text)
    if (gutter) {
      got.header = false
      return gutter[0].length
    }
  }
  if (LEVEL_INITIALS.has(c)) {
    const level = levelHeader(text) || (PLAIN_LEVEL.exec(text)?.[0].length ?? 0)
    if (level > 0) {
      got.level = leadingLevel(c)
      got.last = true
      return level
    }
  }
  got.header = false
  if (c === 45 || c === 42 || c === 8226 || isDigit(c)) {
    const bullet = BULLET.exec(text)
    if (bullet) return bullet[0].length
  }
  if (text.indexOf("|") > 0) {
    const compose = COMPOSE.exec(text)
    if (compose) return compose[0].length
  }
  return 0
}

/** Normalizes one raw line (as read, without its newline). */
export const normalize = (raw: string): Normalized => {
  const line = cleanLine(raw)
  let text = line
  if (text.indexOf("#0") !== -1 || text.endsWith("^M")) text = text.replace(SYSLOG, "")
  // SGLang's own header is by far the most common line: parse it without the generic pass
  const at = messageStart(text)
  if (at >= 0) {
    const process = headerProcess(text, at)
    return {
      line,
      text: text.slice(at),
      process: process === "launcher" ? undefined : process,
      header: true,
      sglangAt: text === line ? at : -1,
      level: undefined
    }
  }
  let process: string | undefined
  let header = false
  let level: Level | undefined
  for (let i = 0; i < 6; i++) {
    const strip = stripOnce(text)
    if (strip === 0) break
    text = text.slice(strip)
    if (got.process !== undefined) process = got.process
    if (got.header) header = true
    if (got.level !== undefined) level = got.level
    const last = got.last
    // a compose or worker column can hold an SGLang record
    const inner = messageStart(text)
    if (inner >= 0) {
      const rank = headerProcess(text, inner)
      return {
        line,
        text: text.slice(inner),
        process: rank === "launcher" ? process : rank,
        header: true,
        sglangAt: -1,
        level
      }
    }
    if (last) break
  }
  if (text.indexOf("[address=") !== -1) text = text.replace(XINFERENCE, "")
  return { line, text, process, header, sglangAt: -1, level }
}
