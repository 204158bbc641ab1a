/**
 * The incremental classifier: one object per log, fed line by line. Each line is normalized
 * (paste artifacts and prefixes stripped), followed through SGLang's lifecycle (phase events),
 * collected into exception records, and checked against the failure signatures; the best
 * candidate (tier, then earliest) is the root cause. Memory is bounded (the last lines, the
 * open record, a few remembered lines); steady-state `Decode batch` lines leave after a couple
 * of character comparisons.
 * @internal
 */

import type { EngineLogs, ExitStatus, LifecycleReader, LifecycleSink } from "../Classifier.js"
import type { EvidenceLine, LaunchFailure } from "../Failures.js"
import * as F from "../Failures.js"
import type { LaunchEvent } from "../LaunchEvent.js"
import { type Phase, phaseIndex } from "../LaunchEvent.js"
import { headerTime, messageStart } from "../LogLine.js"
import { type Context, type Level, namedEngine, type Signature, type Subject, Tier } from "../LogSignature.js"
import { recordOwner, shardProgress, withExit } from "./lineSignatures.js"
import { type EngineGuess, EngineSniffer } from "./logs/engine.js"
import { normalize } from "./logs/normalize.js"
import { type ExceptionRecord, embedded, RecordBuilder, startsRecord } from "./logs/records.js"
import { signaturesFor } from "./logs/signatures/index.js"
import {
  ElasticTable,
  exitedAfterNan,
  failureOfEnd,
  jobLine,
  nanLossLine,
  type RankEnd,
  tierOfEnd
} from "./logs/signatures/jobs.js"
import { asImportFailure, linkedImportError } from "./logs/signatures/linkedImport.js"
import { asTrainingOom } from "./logs/signatures/memory.js"

const NONE: ReadonlyArray<LaunchEvent> = []
const NO_EVENTS: Array<LaunchEvent> = []
const NON_BLANK = /\S/
const TAIL = 40
const MAX_IMPORT_ERRORS = 64

// cheap pre-check before a free line is matched against the signatures
const TELLING =
  /rror|xception|ail|atal|illed|杀死|upport|imeout|imed out|atchdog|emory|NCCL|denied|refused|in use|INUSE|nvalid|Errno|xit code|died|ignal|egmentation|dumped|not found|estricted|gated|radix|buffer|trust_remote_code|custom code|ose from|ead\b|sigquit|SIGQUIT|Pyspy|\^C|nterrupt|Value error|divisible|symbol|shared object|already used|recognize|distribution|profiled value|offline mode|compatible|[Dd]ocker daemon|device driver|to Podman|return code|exitcode|oom|SIGHUP|[Ss]top(?:ping)? [Tt]raining|NaN|loss scale/
// an exception named inside a line of prose, a list item or another record's message
const EMBEDDED = /(?:^|[\s`'"(（，,:：[])((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))(?::\s+|\(["'])(.+)$/
const WAITING = /Waiting for \d+ local, \d+ remote core engine proc\(s\) to start/
const NCCL_START = /^NCCL version \d|is using nccl==|Found nccl from library|^Init torch distributed begin/
// the front end says it serves, or it answers a completion request
const UP =
  /^(?:INFO:\s+)?Application startup complete\.|^Starting vLLM API server|^\d{1,3}(?:\.\d{1,3}){3}:\d+ - "POST \/(?:v1\/(?:chat\/)?completions|generate)[^"]*" 200/
// steady-state lines of a running server: throughput reports and HTTP access lines
const ACCESS = /^\d{1,3}(?:\.\d{1,3}){3}:\d+ - "/

/** Whether a normalized line is one of a running server's periodic reports (nothing to learn). */
const steady = (text: string): boolean =>
  text.startsWith("Decode batch") ||
  text.startsWith("Prefill batch") ||
  text.startsWith("Engine 0") ||
  text.startsWith("Avg prompt throughput") ||
  (text.charCodeAt(0) >= 48 && text.charCodeAt(0) <= 57 && ACCESS.test(text))

interface Candidate {
  readonly failure: LaunchFailure
  readonly tier: number
  /** Found in a free line (a record saying the same thing cites more). */
  readonly line: boolean
  /** Where the subject starts. */
  readonly at: number
}

const startsAt = (line: string, at: number, prefix: string) => line.startsWith(prefix, at)

export class Classifier {
  private readonly signatures: ReadonlyArray<Signature>
  private readonly readers: ReadonlyArray<LifecycleReader>
  private readonly sink: LifecycleSink = {
    phase: () => this.phase,
    reach: (phase, process, line, no) => this.reach(phase, process, line, no),
    emit: (event) => this.emit(event)
  }

  constructor(engines: ReadonlyArray<EngineLogs> = []) {
    this.signatures = signaturesFor(engines)
    this.readers = engines.flatMap((e) => (e.lifecycle === undefined ? [] : [e.lifecycle()]))
  }

  lineNo = 0
  phase: Phase = "starting"
  ready = false
  private started = false
  private firstTime: number | undefined
  private lastAt = 0
  private readonly tailText: Array<string> = new Array(TAIL)
  private record: RecordBuilder | undefined
  private readonly importErrors: Array<EvidenceLine> = []
  private memFractionStatic: number | undefined
  private best: Candidate | undefined
  private progress = -1
  /** The line where the server said it is up (SGLang's ready line, vLLM's startup complete). */
  private upAt: number | undefined
  private usage: EvidenceLine | undefined
  /** srun's `task N:` lines so far (see `Context.srunTaskLines`). */
  private srunTaskLines = 0
  private waiting = 0
  /** Whether the last meaningful line was NCCL's start-up banner. */
  private ncclLast = false
  /** Whether the log showed a training job's launcher or trainer (see `Context.job`). */
  private job = false
  /** The first line that logged a NaN/inf loss: no failure by itself (see `finish`). */
  private nanLoss: EvidenceLine | undefined
  /** torchrun's ChildFailedError table, read as it goes by. */
  private readonly elastic = new ElasticTable()
  private readonly sniffer = new EngineSniffer()
  // allocated only when a line produces an event (most produce none)
  private events: Array<LaunchEvent> = NO_EVENTS

  /** Feeds one line (without its newline); returns the events it produced. */
  feed(raw: string): ReadonlyArray<LaunchEvent> {
    const no = ++this.lineNo
    // steady state: by far the most frequent line, nothing to learn from it
    if (this.record === undefined && this.started && raw.charCodeAt(0) === 91) {
      const at = messageStart(raw)
      if (at >= 0 && startsAt(raw, at, "Decode batch")) {
        this.tailText[no % TAIL] = raw
        return NONE
      }
    }
    const n = normalize(raw)
    this.tailText[no % TAIL] = n.line
    if (this.record === undefined && !NON_BLANK.test(n.text)) return NONE
    this.events = NO_EVENTS
    // a running server's throughput and access lines are never a job's (most of a long log)
    const isSteady = this.started && steady(n.text)
    if (!isSteady) this.jobLine(n.text, n.line, no)
    this.sniffer.observe(n.text, n.sglangAt >= 0)
    if (this.record !== undefined) {
      if (this.record.continues(n.text, n.header)) {
        this.record.push(no, n.line, n.text)
        if (!this.started) this.start(no)
        return this.flush()
      }
      this.closeRecord()
    }
    if (n.sglangAt >= 0 && this.firstTime === undefined) this.at(n.line)
    let read = false
    for (const reader of this.readers) if (reader.line(n, no, this.sink)) read = true
    if (!read && n.sglangAt < 0) this.bareLifecycle(n.text, no)
    // vLLM binds its socket early and serves once the application has started; SGLang's own
    // uvicorn lines come before its warmup, so there only its ready line counts
    if (this.upAt === undefined && UP.test(n.text) && this.sniffer.guess().engine !== "sglang") this.upAt = no
    if (isSteady) return this.flush()
    if (startsRecord(n.text)) {
      const owner = n.text.includes("hit an exception")
        ? recordOwner(n.text, n.process ?? "launcher")
        : n.process
      this.record = new RecordBuilder(owner ?? "launcher", this.phase, { line: no, text: n.line }, n.text)
    } else this.freeLine(n.text, n.line, n.process ?? "launcher", no, n.level)
    if (!this.started) this.start(no)
    return this.flush()
  }

  /** A log that ends while something is still being waited for: a stall at its last lines. */
  private endedWhileWaiting(tier: Tier, reason: string, action: string): Candidate {
    return {
      tier,
      line: true,
      at: this.lineNo,
      failure: new F.StartupStalled({
        evidence: this.lastLines(4),
        process: "launcher",
        phase: this.phase,
        reason,
        fix: { action }
      })
    }
  }

  /** The final failure, if any; closes an open record. Reading it twice gives the same answer. */
  finish(exit?: ExitStatus): LaunchFailure | undefined {
    if (this.record !== undefined) this.closeRecord()
    const table = this.elastic.close()
    if (table !== undefined) this.rankEnd(table.end, table.evidence)
    if (this.best === undefined && this.ncclLast) {
      this.best = this.endedWhileWaiting(
        Tier.Crash,
        "the log ends while the ranks initialise NCCL, the most common place for a multi-GPU start to hang",
        "rerun with NCCL_DEBUG=INFO; if it hangs in P2P setup try NCCL_P2P_DISABLE=1 (or check the PCIe/NVLink topology with nvidia-smi topo -m)"
      )
    }
    if (this.waiting >= 2 && (this.best === undefined || this.best.tier < Tier.Stall)) {
      this.best = this.endedWhileWaiting(
        Tier.Stall,
        "the log ends while the front end still waits for its engine core to start",
        "the engine core never came up: look for its own lines above; allow more time for large models"
      )
    }
    const failed =
      exit !== undefined && (exit.signal != null || (exit.exitCode != null && exit.exitCode !== 0))
    // an OOM met before the log showed it is a job's (its launcher's lines follow it): a training fix
    if (this.best?.failure._tag === "OOM" && this.job && this.sniffer.guess().engine === undefined)
      this.best = { ...this.best, failure: asTrainingOom(this.best.failure) }
    // a job that logged NaN losses and then ended with nothing else named: the loss diverged
    const nan = this.nanLoss
    if (
      nan !== undefined &&
      ((this.best?.failure._tag === "ProcessExited" && this.best.at > nan.line) ||
        (this.best === undefined && failed))
    )
      this.best = {
        tier: this.best?.tier ?? Tier.Consequence,
        line: true,
        at: this.best?.at ?? nan.line,
        failure: exitedAfterNan(nan, this.best?.failure, {
          evidence: this.lastLines(6),
          process: "launcher",
          phase: this.phase
        })
      }
    // what came before the server said it was up did not stop it (a warning-like traceback)
    const beforeUp = this.upAt !== undefined && this.best !== undefined && this.best.at < this.upAt
    const best = beforeUp ? undefined : this.best?.failure
    // a script that said its loss diverged but exited 0 went on (or chose to succeed): no failure
    if (best?._tag === "LossDiverged" && exit?.exitCode === 0 && exit.signal == null) return undefined
    if (!failed) return best
    if (best?._tag === "ProcessExited") return withExit(best, exit)
    if (best) return best
    return this.silentExit(exit)
  }

  /** `finish` for a process that should still be running: any end is a failure, a clean exit too. */
  endedEarly(exit: ExitStatus): LaunchFailure {
    const failure = this.finish(exit)
    if (failure !== undefined) return failure
    return this.silentExit(exit, "the process ended (cleanly) before it was ready")
  }

  private silentExit(exit: ExitStatus, reason = "the process ended without a recognisable error in the log") {
    const silent = new F.ProcessExited({
      evidence: this.lastLines(12),
      process: "launcher",
      phase: this.phase,
      reason,
      ...namedEngine(this.sniffer.guess().engine)
    })
    return withExit(silent, exit)
  }

  /** Which engine wrote the log, and its version when the log shows it. */
  engine(): EngineGuess {
    return this.sniffer.guess()
  }

  /** A StartupStalled failure for a launch that printed nothing new for `silentForMs`. */
  stalled(silentForMs: number): F.StartupStalled {
    return new F.StartupStalled({
      evidence: this.lastLines(12),
      process: "launcher",
      phase: this.phase,
      reason: `no progress for ${Math.round(silentForMs / 1000)} s after phase ${this.phase}`,
      silentForMs,
      fix: { action: "look at the last lines; if a download or JIT build is running, allow more time" }
    })
  }

  /** The last `n` non-blank lines with their numbers, oldest first. */
  lastLines(n: number): Array<EvidenceLine> {
    const out: Array<EvidenceLine> = []
    for (let no = this.lineNo; no > Math.max(0, this.lineNo - TAIL) && out.length < n; no--) {
      const text = this.tailText[no % TAIL]
      if (text !== undefined && text.trim() !== "") out.push({ line: no, text })
    }
    return out.reverse()
  }

  // ---- failures ------------------------------------------------------------------------------

  private context(): Context {
    return {
      engine: this.sniffer.guess().engine,
      memFractionStatic: this.memFractionStatic,
      importErrors: this.importErrors,
      usage: this.usage,
      srunTaskLines: this.srunTaskLines,
      job: this.job
    }
  }

  // ---- jobs ----------------------------------------------------------------------------------

  /** What a line tells of a job: that it is one, a NaN loss it logged, torchrun's failure table. */
  private jobLine(text: string, shown: string, no: number) {
    if (!this.job && jobLine(text)) this.job = true
    if (this.nanLoss === undefined && nanLossLine(text)) this.nanLoss = { line: no, text: shown }
    const table = this.elastic.line(text, shown, no)
    if (table !== undefined) this.rankEnd(table.end, table.evidence)
  }

  /**
   * torchrun's word on the rank that failed first (its ChildFailedError table): the job-level
   * failure when nothing above it named a cause, just above the launcher's other lines on it.
   */
  private rankEnd(end: RankEnd, evidence: Array<EvidenceLine>) {
    const tier = tierOfEnd(end)
    const kind =
      end.signal === "SIGKILL" ? "HostOutOfMemory" : end.signal === "SIGHUP" ? "Hangup" : "ProcessExited"
    // the table refines a launcher line's word on the same end (it names the global rank and the signal)
    const best = this.best
    if (best !== undefined && (best.tier > tier || (best.tier === tier && best.failure._tag !== kind))) return
    const how =
      end.signal === undefined ? `exitcode ${end.exitCode}` : `exitcode ${end.exitCode} (${end.signal})`
    const failure = failureOfEnd(end, {
      evidence,
      process: end.rank === undefined ? "launcher" : `rank ${end.rank}`,
      phase: this.phase,
      reason: `torchrun: ${end.rank === undefined ? "a rank" : `rank ${end.rank}`} failed first with ${how}${end.pid === undefined ? "" : ` (pid ${end.pid})`}`
    })
    this.best = { failure, tier, line: true, at: evidence[0]?.line ?? this.lineNo }
    this.emit({ _tag: "Failed", failure })
  }

  /** Whether a candidate of `tier` and `tag` from this subject would not replace the best. */
  private loses(tier: number, tag: string, subject: Subject): boolean {
    const best = this.best
    if (best === undefined || best.tier < tier) return false
    // the same finding from a record (its traceback) cites more than the line that announced it
    return !(best.tier === tier && best.line && subject.record !== undefined && best.failure._tag === tag)
  }

  private offer(subject: Subject) {
    const context = this.context()
    for (const signature of this.signatures) {
      if (!signature.match(subject, context)) continue
      if (this.loses(signature.tier, signature.tag, subject)) return
      let failure = signature.build(subject, context)
      // a fallback's class is a guess from the exception: an import error SGLang ignored earlier explains it better
      if (
        failure._tag === "Unclassified" ||
        failure.basis === "fallback" ||
        (failure._tag === "UnsupportedConfig" && failure.kind === "architecture") ||
        failure._tag === "ProcessExited"
      ) {
        const names = failure._tag === "UnsupportedConfig" ? (failure.architectures ?? []) : []
        const linked = linkedImportError(this.importErrors, subject.flat, names)
        if (linked !== undefined && (names.length > 0 || failure._tag !== "ProcessExited"))
          failure = asImportFailure(failure, linked)
      }
      if (subject.afterUp && requestLevel(failure, subject)) return
      const tier = tierOf(failure, signature.tier, subject)
      if (this.loses(tier, failure._tag, subject)) return
      this.best = { failure, tier, line: subject.record === undefined, at: subject.line }
      this.emit({ _tag: "Failed", failure })
      return
    }
  }

  private recordSubject(record: ExceptionRecord): Subject {
    const final = record.exceptions[record.exceptions.length - 1]
    return {
      record,
      final,
      text: record.text,
      flat: record.text.replace(/\n/g, ""),
      evidence: evidenceOf(record),
      process: record.process,
      phase: record.phase,
      line: record.header.line,
      level: undefined,
      afterUp: this.upAt !== undefined
    }
  }

  private closeRecord() {
    const record = this.record!.build()
    this.record = undefined
    if (record.exceptions.length > 0) this.offer(this.recordSubject(record))
    // a traceback without its exception: its lines may still say what happened
    else
      for (const line of record.lines)
        this.freeLine(line.body, line.text, record.process, line.line, undefined)
  }

  private freeLine(text: string, shown: string, process: string, no: number, level: Level | undefined) {
    if (text.startsWith("usage: ")) this.usage = { line: no, text: shown }
    if (NON_BLANK.test(text) && !text.startsWith("```")) this.ncclLast = NCCL_START.test(text)
    if (WAITING.test(text)) this.waiting++
    else if (text.trim() !== "" && !text.startsWith("```")) this.waiting = 0
    if (!TELLING.test(text) || text.includes(" NCCL INFO ")) return
    if (text.includes("Ignore import error when loading")) {
      if (this.importErrors.length < MAX_IMPORT_ERRORS) this.importErrors.push({ line: no, text: shown })
      return
    }
    const entry = { line: no, text: shown }
    this.offer({
      record: undefined,
      final: undefined,
      text,
      flat: text,
      evidence: [entry],
      process,
      phase: this.phase,
      line: no,
      level,
      afterUp: this.upAt !== undefined
    })
    if (SRUN_TASK_LINE.test(text)) this.srunTaskLines++
    const inner = EMBEDDED.exec(text)
    // an exception the line starts with opened a record; this is one named further in
    const named = inner === null ? -1 : inner.index + inner[0].indexOf(inner[1]!)
    if (inner && named > 0 && !/Warning$/.test(inner[1]!))
      this.offer({ ...this.recordSubject(embedded(process, this.phase, entry, inner[1]!, inner[2]!)), level })
  }

  // ---- lifecycle (the engines' readers report through the sink) ----------------------------------------------------------------------

  private flush(): ReadonlyArray<LaunchEvent> {
    return this.events.length === 0 ? NONE : this.events
  }

  private emit(event: LaunchEvent): void {
    if (event._tag === "ServerArgsLine" && typeof event.values.mem_fraction_static === "number")
      this.memFractionStatic = event.values.mem_fraction_static
    if (this.events === NO_EVENTS) this.events = []
    this.events.push(event)
  }

  private start(no: number) {
    this.started = true
    if (this.events === NO_EVENTS) this.events = []
    this.events.unshift({ _tag: "PhaseStarted", phase: "starting", at: 0, process: "launcher", line: no })
  }

  private at(line: string): number {
    const t = headerTime(line)
    if (this.firstTime === undefined) this.firstTime = t
    this.lastAt = Math.max(0, t - this.firstTime)
    return this.lastAt
  }

  private reach(phase: Phase, process: string, line: string, no: number) {
    if (phaseIndex(phase) <= phaseIndex(this.phase)) return
    this.phase = phase
    this.emit({ _tag: "PhaseStarted", phase, at: this.at(line), process, line: no })
    if (phase === "ready") {
      this.ready = true
      this.upAt = no
      this.emit({ _tag: "Ready", at: this.lastAt, line: no })
    }
  }

  /** Lines without SGLang's header that still mark progress: weight shards, warnings. */
  private bareLifecycle(text: string, no: number) {
    if (text.startsWith("Loading safetensors checkpoint shards:")) return this.shardProgress(text)
    if (this.record === undefined && text.indexOf("Warning: ") > 0 && text.charCodeAt(0) > 32)
      this.emit({ _tag: "Warning", text, process: "launcher", line: no })
  }

  private shardProgress(line: string) {
    const p = shardProgress(line)
    if (p === undefined || p.done === this.progress) return
    this.progress = p.done
    this.emit({ _tag: "PhaseProgress", phase: this.phase, ...p, at: this.lastAt })
  }
}

/** A line at WARNING level or below names a failure only when nothing raised one. */
/** srun's word on one task of a step: `srun: error: node-b: task 1: Killed`. */
const SRUN_TASK_LINE = /^srun: error: \S+: tasks? [\d,-]+: /

const tierOf = (failure: LaunchFailure, tier: number, subject: Subject): number =>
  // torchrun logs the signal that ends a job (SIGHUP) at WARNING level: it is still the cause
  subject.level !== undefined && subject.level !== "error" && failure._tag !== "Hangup"
    ? Math.min(tier, Tier.Unknown - 0.5)
    : failure._tag === "DependencyError" && failure.basis !== "fallback"
      ? Tier.Root
      : tier

// what a running server's API process logs about one request: the server itself is fine
const REQUEST_LEVEL = new Set([
  "Unclassified",
  "InvalidArgument",
  "UnsupportedConfig",
  "ArgparseError",
  "AssertionFailure"
])
const requestLevel = (failure: LaunchFailure, subject: Subject): boolean =>
  // a fallback's guess is as unsure as Unclassified: after the server is up, a request's
  (REQUEST_LEVEL.has(failure._tag) || failure.basis === "fallback") &&
  (subject.process === "launcher" || /APIServer|api_server/.test(subject.process))

/** The lines to cite for a record: where it started, the innermost frame, the exceptions. */
const evidenceOf = (record: ExceptionRecord): Array<EvidenceLine> => {
  const out: Array<EvidenceLine> = [record.header]
  const last = record.frames[record.frames.length - 1]
  if (last) {
    if (last.at !== record.header.line)
      out.push({ line: last.at, text: `  File "${last.file}", line ${last.line}, in ${last.func}` })
    for (const l of last.sourceLines.slice(0, 6)) out.push(l)
  }
  for (const e of record.exceptions)
    for (const l of e.lines) if (!out.some((o) => o.line === l.line)) out.push(l)
  return out.slice(0, 24)
}
