/**
 * Python exceptions as they appear in real, pasted logs: a whole traceback, one that starts
 * mid-way (the header was cut off), or a single `ValueError: ...` line (a traceback of one
 * frame). Lines are fed already normalized (prefixes stripped), so a traceback whose every line
 * carries `ERROR 05-01 12:00:00 [core.py:12]` or `vllm-1  | ` reads like a bare one. Memory is
 * bounded: the head and a long tail of each record. Engine-neutral.
 * @internal
 */
import type { EvidenceLine } from "../../Failures.js"
import type { Phase } from "../../LaunchEvent.js"

const HEAD = 40
const TAIL = 160
const MAX_MESSAGE_LINES = 8

export interface Frame {
  readonly file: string
  readonly line: number
  readonly func: string
  /** Log line of the `File ...` line. */
  readonly at: number
  readonly source: Array<string>
  readonly sourceLines: Array<EvidenceLine>
}

export interface PyException {
  /** `torch.OutOfMemoryError`, `AssertionError`, `huggingface_hub.errors.HFValidationError` */
  readonly type: string
  /** The message; continuation lines joined with "\n". */
  message: string
  readonly lines: Array<EvidenceLine>
}

/** A line of a record: its number, the text as the log shows it, and the normalized text. */
export interface Entry extends EvidenceLine {
  readonly body: string
}

/** One traceback (or exception line) with what it says. */
export interface ExceptionRecord {
  readonly process: string
  readonly phase: Phase
  /** The line the record started on. */
  readonly header: EvidenceLine
  readonly frames: ReadonlyArray<Frame>
  readonly exceptions: ReadonlyArray<PyException>
  /** Every exception's `type: message`, newline-joined, for matching. */
  readonly text: string
  /** The record's lines: as shown, and normalized. */
  readonly lines: ReadonlyArray<Entry>
}

const FRAME = /^\s*File "([^"]*)", line (\d+), in (.+)$/
// faulthandler's `File "x.py", line 3 in f`, and a pasted frame whose `File "/...` was cut off
const FRAME_OTHER = /^\s*(?:File "|\.\.\.\/?)?([\w./-]*\.py)", line (\d+),? in (.+)$/
/**
 * `ValueError: x`, `torch.OutOfMemoryError: x`, `requests.exceptions.ReadTimeout: x`, a bare
 * `AssertionError`, `huggingface_hub.errors.HFValidationError: x`, `KeyError: 'w'`.
 */
export const EXCEPTION =
  /^((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt|Failure|Timeout|Unsupported|Misconfiguration)(?:\(\w+\))?|(?:[a-z_]\w*\.)+[A-Z]\w*(?:Error|Exception))(?::\s?(.*))?$/
export const CHAIN = /^(During handling of the above exception|The above exception was the direct cause)/
const CARETS = /^\s*[~^]+\s*$/
const CUT_FRAME = /^\s*File "[^"]*"(?:, l(?:i(?:n(?:e(?: \d*(?:,(?: (?:i(?:n)?)?)?)?)?)?)?)?)?$/
const RAISE = /raise ((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))\(\s*(.*?)\s*\)?\s*$/
const TRACEBACK = "Traceback (most recent call last)"
// exception types without "Error"/"Exception" in their names (`SystemExit`, `torch._dynamo.exc.Unsupported`)
const EXCEPTION_WORDS =
  /^\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Exit|Failure|Timeout|Unsupported|Misconfiguration)(?::|$)/

/** Whether a (trimmed) line is an exception line, and not a warning category. */
export const exceptionLine = (trimmed: string): RegExpExecArray | null => {
  const m = EXCEPTION.exec(trimmed)
  return m !== null && !m[1]!.endsWith("Warning") ? m : null
}

/** Whether this line can open a record. */
export const startsRecord = (text: string): boolean => {
  // most lines open no record: a cheap look for what every opener contains
  if (
    text.indexOf("rror") === -1 &&
    text.indexOf("xception") === -1 &&
    text.indexOf('", line ') === -1 &&
    text.indexOf('File "') === -1
  ) {
    return (
      text.includes(TRACEBACK) ||
      (text.indexOf("Interrupt") !== -1 && exceptionLine(text.trim()) !== null) ||
      EXCEPTION_WORDS.test(text)
    )
  }
  const t = text.trimStart()
  return (
    text.includes(TRACEBACK) ||
    FRAME.test(t) ||
    FRAME_OTHER.test(t) ||
    CUT_FRAME.test(t) ||
    (exceptionLine(t) !== null && !t.startsWith("Exception in thread")) ||
    t.endsWith("hit an exception:")
  )
}

/** Lines that belong to a traceback's structure whatever precedes them. */
const structural = (text: string): boolean => {
  const t = text.trimStart()
  return (
    t.startsWith('File "') ||
    t.startsWith(TRACEBACK) ||
    CHAIN.test(t) ||
    CARETS.test(text) ||
    exceptionLine(t) !== null ||
    t.startsWith("^^") ||
    t === "..." ||
    t.startsWith("[Previous line repeated")
  )
}

export class RecordBuilder {
  private readonly head: Array<Entry> = []
  private readonly tail: Array<Entry> = []
  private sawException = false
  private messageLines = 0
  private blankAfterException = false

  constructor(
    readonly process: string,
    readonly phase: Phase,
    readonly header: EvidenceLine,
    private readonly headerBody: string
  ) {
    if (exceptionLine(headerBody.trim()) !== null) this.sawException = true
  }

  /**
   * Whether the line continues this record. `header`: the line began a new log record (a
   * prefix was stripped), which ends a record unless the line is part of a traceback.
   */
  continues(text: string, header: boolean): boolean {
    const t = text.trim()
    if (t === "") return !this.sawException || !this.blankAfterException
    if (this.blankAfterException && !CHAIN.test(t) && !t.startsWith(TRACEBACK)) return false
    if (structural(text)) return true
    // a source line under a frame (`    self.x()`)
    if (/^\s{2,}\S/.test(text) && !this.sawException) return true
    if (this.sawException) return !header && this.messageLines < MAX_MESSAGE_LINES
    return !header
  }

  /** `text`: the line as shown (evidence); `body`: normalized (parsed). */
  push(line: number, text: string, body: string): void {
    const t = body.trim()
    if (t === "") {
      if (this.sawException) this.blankAfterException = true
      return
    }
    this.blankAfterException = false
    // a frame line wrapped inside a word by the paster's terminal: `File "x.py", l` + `ine 7, in f`
    const previous = this.tail.length > 0 ? this.tail[this.tail.length - 1] : this.head[this.head.length - 1]
    if (previous !== undefined && CUT_FRAME.test(previous.body) && !/^\s/.test(body)) {
      const joined = { line: previous.line, text: previous.text, body: previous.body + body }
      if (FRAME.test(joined.body.trim())) {
        if (this.tail.length > 0) this.tail[this.tail.length - 1] = joined
        else this.head[this.head.length - 1] = joined
        return
      }
    }
    const entry = { line, text, body }
    if (this.head.length < HEAD) this.head.push(entry)
    else {
      this.tail.push(entry)
      if (this.tail.length > TAIL * 2) this.tail.splice(0, this.tail.length - TAIL)
    }
    if (exceptionLine(t) !== null) {
      this.sawException = true
      this.messageLines = 0
    } else if (this.sawException && !structural(body)) this.messageLines++
    else if (CHAIN.test(t) || t.startsWith(TRACEBACK)) this.sawException = false
  }

  build(): ExceptionRecord {
    const lines =
      this.tail.length > TAIL ? this.head.concat(this.tail.slice(-TAIL)) : this.head.concat(this.tail)
    return parse(this.process, this.phase, { ...this.header, body: this.headerBody }, lines)
  }
}

/** The text after `... hit an exception: ` / `warmup error: ` in a record's first line. */
const afterHeader = (text: string): string => {
  if (exceptionLine(text.trim()) !== null) return text
  const i = text.indexOf("exception: ")
  if (i !== -1) return text.slice(i + 11)
  const j = text.indexOf("error: ")
  return j !== -1 ? text.slice(j + 7) : text
}

const parse = (
  process: string,
  phase: Phase,
  header: Entry,
  lines: ReadonlyArray<Entry>
): ExceptionRecord => {
  const frames: Array<Frame> = []
  const exceptions: Array<PyException> = []
  let current: Frame | undefined
  let exception: PyException | undefined
  for (const entry of [header, ...lines]) {
    const text = entry === header ? afterHeader(header.body) : entry.body
    const t = text.trim()
    const frame = FRAME.exec(t) ?? FRAME_OTHER.exec(t)
    if (frame) {
      current = {
        file: frame[1]!,
        line: Number(frame[2]),
        func: frame[3]!,
        at: entry.line,
        source: [],
        sourceLines: []
      }
      frames.push(current)
      exception = undefined
      continue
    }
    if (t.startsWith(TRACEBACK) || CHAIN.test(t)) {
      current = undefined
      exception = undefined
      continue
    }
    if (current && exception === undefined && /^\s{2,}\S/.test(text) && exceptionLine(t) === null) {
      if (!CARETS.test(text) && !t.startsWith("^")) {
        current.source.push(t)
        current.sourceLines.push({ line: entry.line, text: entry.text })
      }
      continue
    }
    // one exception per block: later `Name: text` lines belong to its message
    const raised = exception === undefined ? exceptionLine(t) : null
    if (raised) {
      exception = {
        type: raised[1]!,
        message: raised[2] ?? "",
        lines: [{ line: entry.line, text: entry.text }]
      }
      exceptions.push(exception)
      current = undefined
      continue
    }
    if (exception && t !== "") {
      exception.message += `\n${t}`
      if (exception.lines.length < 8) exception.lines.push({ line: entry.line, text: entry.text })
    }
  }
  // a traceback cut before its exception line still shows what the innermost frame raises
  const last = frames[frames.length - 1]
  const innermost = last === undefined || exceptions.length > 0 ? "" : last.source.join(" ")
  if (last && /^assert\b/.test(innermost))
    exceptions.push({ type: "AssertionError", message: "", lines: last.sourceLines.slice(-1) })
  const raise = RAISE.exec(innermost)
  if (raise && last && exceptions.length === 0) {
    exceptions.push({
      type: raise[1]!,
      message: (raise[2] ?? "").replace(/^f?["']|["']\)?$/g, ""),
      lines: last.sourceLines.slice(-1)
    })
  }
  const text = exceptions.map((e) => `${e.type}: ${e.message}`).join("\n")
  return {
    process,
    phase,
    header: { line: header.line, text: header.text },
    frames,
    exceptions,
    text,
    lines: [header, ...lines]
  }
}

/** A one-exception record for an exception named inside a line of prose or another record. */
export const embedded = (
  process: string,
  phase: Phase,
  entry: EvidenceLine,
  type: string,
  message: string
): ExceptionRecord => ({
  process,
  phase,
  header: entry,
  frames: [],
  exceptions: [{ type, message, lines: [entry] }],
  text: `${type}: ${message}`,
  lines: [{ ...entry, body: entry.text }]
})
