/**
 * Reads an SGLang server log and says where the launch is (phase events) and, when it failed,
 * why (a typed `LaunchFailure` with evidence and a fix). Incremental: feed lines as they
 * arrive, or hand it a whole stream or text.
 *
 * @since 0.1.0
 */
import type * as Connection from "@mlops/core/Connection"
import { Effect, Option, Stream } from "effect"
import type { LaunchFailure, StartupStalled } from "./Failures.js"
import { Classifier as State } from "./internal/classifier.js"
import type { Normalized } from "./internal/logs/normalize.js"
import type { LaunchEvent, Phase } from "./LaunchEvent.js"
import type { Signature } from "./LogSignature.js"

/** What an engine's lifecycle reader can do: read the phase, move to a later one, emit an event. @category extension */
export interface LifecycleSink {
  readonly phase: () => Phase
  /** Moves to `phase` (never back), timed by `line`'s header; `ready` also marks the launch ready. */
  readonly reach: (phase: Phase, process: string, line: string, no: number) => void
  /** A `ServerArgsLine` with `mem_fraction_static` also tells the memory signatures the fraction. */
  readonly emit: (event: LaunchEvent) => void
}

/**
 * An engine's reading of its own lines: phases, resolved args, capacity, adjustments. One per
 * log (it may keep state). Returns whether the line was the engine's (then the neutral reading
 * of bare lines, shard progress and `Warning:` lines, is skipped for it).
 * @category extension
 */
export interface LifecycleReader {
  readonly line: (line: NormalizedLine, no: number, sink: LifecycleSink) => boolean
}

/** A log line after normalization (see `Classifier` internals): what a reader looks at. @category extension */
export type NormalizedLine = Normalized

/** An engine signature, tried just before the neutral signature `before` (an id). @category extension */
export interface PlacedSignature {
  readonly before: string
  readonly signature: Signature
}

/** What one engine adds to the neutral classifier. @category extension */
export interface EngineLogs {
  readonly engine: string
  readonly signatures: ReadonlyArray<PlacedSignature>
  readonly lifecycle?: () => LifecycleReader
}

/**
 * How the process ended, when known: core's exit status, either field possibly unknown
 * (`exitCode` 137 and `signal` `KILL` both mean killed).
 */
export type ExitStatus = Partial<Connection.ExitStatus>

/** An incremental classifier for one log. @category models */
export interface Classifier {
  /** Feeds one line (without its newline; ANSI codes and `\r` bars are handled). */
  readonly feed: (line: string) => ReadonlyArray<LaunchEvent>
  /** Ends the log; the root-cause failure, or `undefined` when the log shows none and the exit was clean or unknown. */
  readonly finish: (exit?: ExitStatus) => LaunchFailure | undefined
  /**
   * Ends the log of a process that should not have ended yet (a server before it was ready): the
   * root-cause failure, or `ProcessExited` with its exit, a clean one included.
   */
  readonly endedEarly: (exit: ExitStatus) => LaunchFailure
  /** A `StartupStalled` failure for a launch that printed nothing new for `silentForMs`. */
  readonly stalled: (silentForMs: number) => StartupStalled
  /** The last lifecycle phase reached so far. */
  readonly phase: () => Phase
  /** Whether the server said it is ready. */
  readonly isReady: () => boolean
  /** Lines fed so far. */
  readonly lines: () => number
  /** Which engine wrote the log (`sglang`, `vllm`), and its version, when the log shows them. */
  readonly engine: () => {
    readonly engine: "sglang" | "vllm" | undefined
    readonly version: string | undefined
  }
}

/** A fresh classifier, reading the given engines' lines and signatures too. @category constructors */
export const make = (engines: ReadonlyArray<EngineLogs> = []): Classifier => {
  const state = new State(engines)
  return {
    feed: (line) => state.feed(line),
    finish: (exit) => state.finish(exit),
    endedEarly: (exit) => state.endedEarly(exit),
    stalled: (silentForMs) => state.stalled(silentForMs),
    phase: () => state.phase,
    isReady: () => state.ready,
    lines: () => state.lineNo,
    engine: () => state.engine()
  }
}

/**
 * Classifies a stream of lines. At the end of the input a final `Failed` event is emitted if
 * `finish` names a failure not already reported.
 * @category streams
 */
export const classify = <E, R>(
  lines: Stream.Stream<string, E, R>,
  exit?: ExitStatus,
  engines: ReadonlyArray<EngineLogs> = []
): Stream.Stream<LaunchEvent, E, R> =>
  Stream.suspend(() => {
    const classifier = make(engines)
    let last: LaunchFailure | undefined
    const tail = Stream.fromIterableEffect(
      Effect.sync(() => {
        const failure = classifier.finish(exit)
        return failure === undefined || failure === last ? [] : [{ _tag: "Failed", failure } as LaunchEvent]
      })
    )
    return lines.pipe(
      Stream.mapConcat((line) => {
        const events = classifier.feed(line)
        for (const e of events) if (e._tag === "Failed") last = e.failure
        return events
      }),
      Stream.concat(tail)
    )
  })

/** Splits text into lines as a log reader would (`\n`, with `\r\n` and lone `\r` kept for the classifier). */
const eachLine = (text: string, f: (line: string) => void) => {
  let start = 0
  for (;;) {
    const nl = text.indexOf("\n", start)
    if (nl === -1) {
      if (start < text.length) f(text.slice(start))
      return
    }
    f(text.slice(start, nl))
    start = nl + 1
  }
}

/** Classifies a whole log: every event and the final failure. @category constructors */
export const classifyText = (
  text: string,
  exit?: ExitStatus,
  engines: ReadonlyArray<EngineLogs> = []
): { readonly events: ReadonlyArray<LaunchEvent>; readonly failure: LaunchFailure | undefined } => {
  const classifier = make(engines)
  const events: Array<LaunchEvent> = []
  eachLine(text, (line) => {
    for (const e of classifier.feed(line)) events.push(e)
  })
  return { events, failure: classifier.finish(exit) }
}

/** The verdict on a finished log. @category models */
export interface Diagnosis {
  readonly phase: Phase
  readonly ready: boolean
  readonly failure: Option.Option<LaunchFailure>
  readonly lines: number
}

/** Diagnoses a finished log (for `mlops diagnose`): how far it got and why it stopped. @category constructors */
export const diagnose = (
  text: string,
  exit?: ExitStatus,
  engines: ReadonlyArray<EngineLogs> = []
): Diagnosis => {
  const classifier = make(engines)
  eachLine(text, (line) => {
    classifier.feed(line)
  })
  const failure = classifier.finish(exit)
  return {
    phase: classifier.phase(),
    ready: classifier.isReady(),
    failure: Option.fromNullable(failure),
    lines: classifier.lines()
  }
}
