/**
 * A Python traceback as it appears in an SGLang log: a header line (prefixed for a rank's
 * `Scheduler hit an exception:` record, bare for the launcher) followed by continuation lines
 * without a prefix. Collected with a bounded buffer, parsed into frames and exceptions once
 * the record ends.
 * @internal
 */
import type { EvidenceLine } from "../Failures.js"
import type { Phase } from "./phase.js"

/** Keep the head (where it was raised from) and a long tail (the exception and its message). */
const HEAD = 40
const TAIL = 160

export interface Frame {
  readonly file: string
  readonly line: number
  readonly func: string
  readonly at: number
  readonly source: Array<string>
  readonly sourceLines: Array<EvidenceLine>
}

export interface PyException {
  /** e.g. `torch.OutOfMemoryError`, `AssertionError` */
  readonly type: string
  /** the message, continuation lines joined with "\n" */
  message: string
  readonly lines: Array<EvidenceLine>
}

export interface Traceback {
  readonly process: string
  readonly phase: Phase
  readonly header: EvidenceLine
  readonly frames: ReadonlyArray<Frame>
  readonly exceptions: ReadonlyArray<PyException>
  /** every exception's `type: message`, for matching */
  readonly text: string
}

export class TracebackBuilder {
  readonly head: Array<EvidenceLine> = []
  readonly tail: Array<EvidenceLine> = []
  sawException = false
  lastText = ""
  constructor(
    readonly process: string,
    readonly phase: Phase,
    readonly header: EvidenceLine
  ) {}

  push(line: number, text: string): void {
    if (this.head.length < HEAD) this.head.push({ line, text })
    else {
      this.tail.push({ line, text })
      if (this.tail.length > TAIL * 2) this.tail.splice(0, this.tail.length - TAIL)
    }
    if (!this.sawException && EXCEPTION.test(text)) this.sawException = true
    if (text.trim() !== "") this.lastText = text
  }

  /** A bare `Traceback` line starts a new record unless it continues a chained exception. */
  continuesChain(): boolean {
    return !this.sawException || CHAIN.test(this.lastText)
  }

  build(): Traceback {
    const lines =
      this.tail.length > TAIL ? this.head.concat(this.tail.slice(-TAIL)) : this.head.concat(this.tail)
    return parse(this.process, this.phase, this.header, lines)
  }
}

const FRAME = /^\s*File "([^"]*)", line (\d+), in (.+)$/
// `ValueError: x`, `torch.OutOfMemoryError: x`, `Exception: x`, `requests.exceptions.ReadTimeout: x`, bare `AssertionError`
const EXCEPTION =
  /^((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt|Failure|Warning|Timeout)|(?:[a-z_]\w*\.)+[A-Z]\w*)(?::\s?(.*))?$/
const CHAIN = /^(During handling of the above exception|The above exception was the direct cause)/
const CARETS = /^\s*[~^]+\s*$/

const parse = (
  process: string,
  phase: Phase,
  header: EvidenceLine,
  lines: ReadonlyArray<EvidenceLine>
): Traceback => {
  const frames: Array<Frame> = []
  const exceptions: Array<PyException> = []
  let current: Frame | undefined
  let exception: PyException | undefined
  // the header itself may carry the exception (`... hit an exception: ValueError: x`)
  for (const entry of [header, ...lines]) {
    const text = entry === header ? afterHeader(header.text) : entry.text
    const frame = FRAME.exec(text)
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
    if (text.startsWith("Traceback (most recent call last)") || CHAIN.test(text)) {
      current = undefined
      exception = undefined
      continue
    }
    if (current && text.startsWith("    ")) {
      if (!CARETS.test(text)) {
        current.source.push(text.trim())
        current.sourceLines.push(entry)
      }
      continue
    }
    // one exception per traceback block: later `Name: text` lines belong to its message
    const raised = exception === undefined ? EXCEPTION.exec(text) : null
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
    if (exception && text.trim() !== "") {
      exception.message += `\n${text}`
      if (exception.lines.length < 8) exception.lines.push({ line: entry.line, text: entry.text })
    }
  }
  const text = exceptions.map((e) => `${e.type}: ${e.message}`).join("\n")
  return { process, phase, header, frames, exceptions, text }
}

/** The text after `... hit an exception: ` / `warmup error: ` in a header line. */
const afterHeader = (text: string): string => {
  const i = text.indexOf("exception: ")
  if (i !== -1) return text.slice(i + 11)
  const j = text.indexOf("error: ")
  return j !== -1 ? text.slice(j + 7) : text
}
