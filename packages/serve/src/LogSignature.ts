/**
 * A failure signature: which typed failure a piece of log is, from the exception type and the
 * stable words of its message (never one release's exact sentence), with the wordings it was
 * checked against. Signatures are tried in order on a subject (an exception record, or one line
 * that is not part of one); the first that matches names it. Across subjects the tier decides,
 * then the earliest line: a root cause beats a distributed error (often its echo on another
 * rank), a stall, a crash, an unrecognised exception, and the launcher's consequences.
 * @internal
 */
import type { EvidenceLine, Fix, LaunchFailure } from "./Failures.js"
import type { ExceptionRecord, PyException } from "./internal/logs/records.js"
import type { Phase } from "./LaunchEvent.js"

export const Tier = {
  Root: 6,
  /** A wrapper's message (pydantic's `Value error, ...`): the specific line it wraps wins. */
  Wrapped: 5,
  Distributed: 4,
  Stall: 3,
  Crash: 2,
  Unknown: 1,
  Consequence: 0
} as const
export type Tier = (typeof Tier)[keyof typeof Tier]

export type Engine = "sglang" | "vllm"

/** What a signature looks at. */
export interface Subject {
  /** An exception record, or one line outside any record. */
  readonly record: ExceptionRecord | undefined
  /** The record's last exception (what Python raised last). */
  readonly final: PyException | undefined
  /** Every exception's `type: message` (a record), or the line's text. */
  readonly text: string
  /** `text` with line breaks removed: pasted lines wrapped inside a word read whole again. */
  readonly flat: string
  readonly evidence: ReadonlyArray<EvidenceLine>
  readonly process: string
  readonly phase: Phase
  /** The 1-based line where the subject starts. */
  readonly line: number
  /** The level its log header named (`error`, `warning`, ...), when one did. */
  readonly level: Level | undefined
  /** Whether the server had already said it was up (a later ERROR line is a request's, not the launch's). */
  readonly afterUp: boolean
}

export type Level = "debug" | "info" | "warning" | "error"

/** What the classifier has learnt from the log so far. */
export interface Context {
  readonly engine: Engine | undefined
  readonly memFractionStatic: number | undefined
  /** SGLang's `Ignore import error when loading ...` lines: harmless unless a later failure names them. */
  readonly importErrors: ReadonlyArray<EvidenceLine>
  /** The last argparse `usage:` line, cited with an argparse error. */
  readonly usage: EvidenceLine | undefined
  /**
   * srun's `task N: ...` lines before this subject: only the first names the task that ended
   * the step; srun then ends the others (`--kill-on-bad-exit`), and their lines follow.
   */
  readonly srunTaskLines: number
  /**
   * Whether the log is a training or evaluation job's: a job launcher's lines (torchrun's elastic
   * agent, deepspeed's or accelerate's launcher) or a trainer's (loss and step lines) were seen.
   */
  readonly job: boolean
}

/** How fixes name the engine. */
export const engineName = (ctx: Context): string =>
  ctx.engine === "vllm" ? "vLLM" : ctx.engine === "sglang" ? "SGLang" : "the engine"

/** The `engine` field of a failure whose headline names the engine, when the log shows which one. */
export const namedEngine = (engine: Engine | undefined): { readonly engine?: string } =>
  engine === "vllm" ? { engine: "vLLM" } : engine === "sglang" ? { engine: "SGLang" } : {}

/** One wording a signature was checked against: where it comes from and the text. */
export interface Variant {
  /** The emitter and its versions: `torch 2.1-2.9`, `SGLang 0.4.x-0.5.11`, `vLLM 0.6 (V0)`. */
  readonly from: string
  readonly text: string
}

export interface Signature {
  readonly id: string
  readonly tag: LaunchFailure["_tag"]
  readonly tier: Tier
  readonly variants: ReadonlyArray<Variant>
  /** A line (outside records) or an exception record this signature names. */
  readonly match: (subject: Subject, context: Context) => boolean
  readonly build: (subject: Subject, ctx: Context) => LaunchFailure
}

// ---- helpers --------------------------------------------------------------------------------

/** Matches `re` against the subject's text or its de-wrapped form. */
export const says =
  (re: RegExp) =>
  (s: Subject): boolean =>
    re.test(s.text) || (s.flat !== s.text && re.test(s.flat))

/** Only exception records (not free lines). */
export const inException =
  (test: (s: Subject, e: PyException) => boolean) =>
  (s: Subject): boolean =>
    s.final !== undefined && test(s, s.final)

export const firstLine = (text: string): string => {
  const nl = text.indexOf("\n")
  return nl === -1 ? text : text.slice(0, nl)
}

/** The subject's most telling line: its exception (`Type: message`), else the line. */
export const reasonOf = (s: Subject, matching?: RegExp): string => {
  if (s.record !== undefined && s.final !== undefined) {
    const telling =
      matching === undefined
        ? s.final
        : (s.record.exceptions.find((e) => matching.test(`${e.type}: ${e.message}`)) ?? s.final)
    return `${telling.type}: ${firstLine(telling.message)}`.replace(/: $/, "").trim()
  }
  return s.text.trim()
}

/** The common fields of a failure for a subject. */
export const base = (s: Subject, reason: string = reasonOf(s), fix?: Fix) => ({
  evidence: [...s.evidence],
  process: s.process,
  phase: s.phase,
  reason,
  ...(fix === undefined ? {} : { fix })
})

const FLAG = /--[a-z][a-z0-9-]*[a-z0-9]/g
/** The `--flags` a message names. */
export const flagsIn = (text: string): Array<string> => [...new Set(text.match(FLAG) ?? [])]
