/**
 * The incremental classifier: one object per log, fed line by line. Memory is bounded (the last
 * lines, the open traceback, a few remembered warning lines); steady-state lines such as
 * `Decode batch` leave after a couple of character comparisons.
 * @internal
 */

import type { ExitStatus } from "../Classifier.js"
import type { EvidenceLine, LaunchFailure } from "../Failures.js"
import * as F from "../Failures.js"
import type { ArgValue, LaunchEvent } from "../LaunchEvent.js"
import {
  argparse,
  capacityEvent,
  childCrashNote,
  consequence,
  fatalPython,
  httpBind,
  recordOwner,
  shardProgress,
  watchdogStall,
  withExit
} from "./lineSignatures.js"
import { cleanLine, headerProcess, headerTime, messageStart } from "./logLine.js"
import { type Phase, phaseIndex } from "./phase.js"
import { parseServerArgs } from "./serverArgsRepr.js"
import { type Candidate, classifyTraceback } from "./signatures.js"
import { TracebackBuilder } from "./traceback.js"

const NONE: ReadonlyArray<LaunchEvent> = []
const TAIL = 40
const MAX_IMPORT_ERRORS = 64

const startsAt = (line: string, at: number, prefix: string) => line.startsWith(prefix, at)

export class Classifier {
  lineNo = 0
  phase: Phase = "starting"
  ready = false
  private started = false
  private firstTime: number | undefined
  private lastAt = 0
  private readonly tailText: Array<string> = new Array(TAIL)
  private tb: TracebackBuilder | undefined
  private usage: EvidenceLine | undefined
  private readonly importErrors: Array<EvidenceLine> = []
  private memFractionStatic: number | undefined
  private best: Candidate | undefined
  private progress = -1
  private events: Array<LaunchEvent> = []

  /** Feeds one line (without its newline); returns the events it produced. */
  feed(raw: string): ReadonlyArray<LaunchEvent> {
    const no = ++this.lineNo
    const line = cleanLine(raw)
    const slot = no % TAIL
    this.tailText[slot] = line
    const at = messageStart(line)
    if (at >= 0) {
      // steady state: by far the most frequent line, nothing to learn from it
      if (this.tb === undefined && this.started && startsAt(line, at, "Decode batch")) return NONE
      this.events = []
      if (this.tb !== undefined) this.closeTraceback()
      this.prefixed(line, at, no)
    } else {
      if (this.tb === undefined && line.length === 0) return NONE
      this.events = []
      this.bare(line, no)
    }
    if (!this.started) this.start(no)
    return this.events.length === 0 ? NONE : this.events
  }

  /** The final failure, if any; closes an open traceback. Reading it twice gives the same answer. */
  finish(exit?: ExitStatus): LaunchFailure | undefined {
    if (this.tb !== undefined) this.closeTraceback()
    const failed =
      exit !== undefined &&
      (exit.signal !== undefined || (exit.exitCode !== undefined && exit.exitCode !== 0))
    const best = this.best?.failure
    if (!failed) return best
    if (best?._tag === "ProcessExited") return withExit(best, exit)
    if (best) return best
    const silent = new F.ProcessExited({
      evidence: this.lastLines(12),
      process: "launcher",
      phase: this.phase,
      reason: "the process ended without a recognisable error in the log"
    })
    return withExit(silent, exit)
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
      const text = this.tailText[no % TAIL]!
      if (text.trim() !== "") out.push({ line: no, text })
    }
    return out.reverse()
  }

  // ---- internals -----------------------------------------------------------------------------

  private start(no: number) {
    this.started = true
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
    this.events.push({ _tag: "PhaseStarted", phase, at: this.at(line), process, line: no })
    if (phase === "ready") {
      this.ready = true
      this.events.push({ _tag: "Ready", at: this.lastAt, line: no })
    }
  }

  private offer(candidate: Candidate | undefined) {
    if (!candidate) return
    if (this.best && this.best.tier >= candidate.tier) return
    this.best = candidate
    this.events.push({ _tag: "Failed", failure: candidate.failure })
  }

  private closeTraceback() {
    const tb = this.tb!
    this.tb = undefined
    this.offer(
      classifyTraceback(tb.build(), {
        memFractionStatic: this.memFractionStatic,
        importErrors: this.importErrors
      })
    )
  }

  private openTraceback(process: string, line: string, no: number) {
    this.tb = new TracebackBuilder(process, this.phase, { line: no, text: line })
  }

  private prefixed(line: string, at: number, no: number) {
    if (this.firstTime === undefined) this.at(line)
    const process = headerProcess(line, at)
    const c = line.charCodeAt(at)
    // lifecycle lines start the message; dispatch on the first letter to keep this cheap
    if (c === 73 /* I */) {
      if (startsAt(line, at, "Init torch distributed begin"))
        return this.reach("distributed-init", process, line, no)
      if (startsAt(line, at, "Ignore import error when loading")) {
        if (this.importErrors.length < MAX_IMPORT_ERRORS) this.importErrors.push({ line: no, text: line })
        return this.events.push({ _tag: "Warning", text: line.slice(at), process, line: no })
      }
      if (startsAt(line, at, "Initialization failed")) return this.openTraceback(process, line, no)
      if (startsAt(line, at, "INFO:")) return this.uvicorn(line, at, no)
    } else if (c === 76 /* L */) {
      if (startsAt(line, at, "Load weight begin"))
        return this.reach(
          phaseIndex(this.phase) >= phaseIndex("kv-cache") ? "draft-weights" : "weights-loading",
          process,
          line,
          no
        )
      if (startsAt(line, at, "Load weight end")) return this.reach("weights-loaded", process, line, no)
    } else if (c === 67 /* C */) {
      if (startsAt(line, at, "Capture draft")) return this.reach("draft-cuda-graph", process, line, no)
      if (
        startsAt(line, at, "Capture cuda graph begin") ||
        startsAt(line, at, "Capture piecewise CUDA graph begin")
      )
        return this.reach(
          this.phase === "draft-weights" ? "draft-cuda-graph" : "cuda-graph",
          process,
          line,
          no
        )
    } else if (c === 75 /* K */ && startsAt(line, at, "KV Cache is allocated")) {
      return this.reach(this.phase === "draft-weights" ? "draft-weights" : "kv-cache", process, line, no)
    } else if (c === 77 /* M */ && startsAt(line, at, "Mamba Cache is allocated")) {
      return this.reach(this.phase === "draft-weights" ? "draft-weights" : "mamba-cache", process, line, no)
    } else if (c === 80 /* P */) {
      if (startsAt(line, at, "Prefill batch")) return this.reach("warmup", process, line, no)
    } else if (c === 115 /* s */ && startsAt(line, at, "server_args=ServerArgs(")) {
      return this.serverArgs(line, at, no)
    } else if (c === 109 /* m */ && startsAt(line, at, "max_total_num_tokens=")) {
      return this.events.push(capacityEvent(line, at, no))
    } else if (c === 84 /* T */ && startsAt(line, at, "The server is fired up and ready to roll")) {
      return this.reach("ready", process, line, no)
    } else if (c === 69 /* E */ && startsAt(line, at, "ERROR:")) {
      return this.uvicornError(line, at, no)
    }
    if (line.includes("hit an exception")) return this.openTraceback(recordOwner(line, process), line, no)
    if (line.includes("watchdog timeout")) return this.offer(watchdogStall(line, at, no, process, this.phase))
    if (childCrashNote(line)) return this.offer(consequence(line, at, no, process, this.phase))
    if (
      line.includes("memory capacity is unbalanced") ||
      line.includes("Health check failed") ||
      line.includes("Port is already in use")
    ) {
      return this.events.push({ _tag: "Warning", text: line.slice(at), process, line: no })
    }
    // ServerArgs prints its auto-adjustments before the resolved args line
    if (this.phase === "starting" && process === "launcher") {
      this.events.push({ _tag: "Adjustment", text: line.slice(at), line: no })
    }
  }

  private uvicorn(line: string, at: number, no: number) {
    const running = line.indexOf("Uvicorn running on ", at)
    if (running !== -1) {
      const url = line.slice(running + 19).split(" ")[0]!
      this.reach("http-up", "launcher", line, no)
      return this.events.push({ _tag: "Listening", url, line: no })
    }
    if (this.phase === "http-up" && /"POST \/(generate|v1\/chat\/completions|encode)/.test(line))
      this.reach("warmup", "launcher", line, no)
  }

  private uvicornError(line: string, at: number, no: number) {
    const bind = httpBind(line, at, no, this.phase)
    if (bind) return this.offer(bind)
    if (line.includes("Traceback")) this.openTraceback("launcher", line, no)
  }

  private bare(line: string, no: number) {
    if (line.startsWith("Traceback (most recent call last)")) {
      if (this.tb?.continuesChain()) return this.tb.push(no, line)
      if (this.tb !== undefined) this.closeTraceback()
      return this.openTraceback("launcher", line, no)
    }
    if (this.tb !== undefined) return this.tb.push(no, line)
    if (line.startsWith("Loading safetensors checkpoint shards:")) return this.shardProgress(line)
    if (line.startsWith("usage: ")) {
      this.usage = { line: no, text: line }
      return
    }
    const argError = /^[\w./ -]+: error: (.*)$/.exec(line)
    if (
      argError &&
      (this.usage !== undefined || line.startsWith("sglang serve:") || line.includes("launch_server"))
    ) {
      return this.offer(argparse(argError[1]!, this.usage, { line: no, text: line }, this.phase))
    }
    if (line.startsWith("Fatal Python error:")) return this.offer(fatalPython(line, no, this.phase))
    if (/Warning: /.test(line))
      this.events.push({ _tag: "Warning", text: line, process: "launcher", line: no })
  }

  private shardProgress(line: string) {
    const p = shardProgress(line)
    if (p === undefined || p.done === this.progress) return
    this.progress = p.done
    this.events.push({ _tag: "PhaseProgress", phase: this.phase, ...p, at: this.lastAt })
  }

  private serverArgs(line: string, at: number, no: number) {
    const values: Record<string, ArgValue> = parseServerArgs(line, at + "server_args=ServerArgs(".length)
    if (typeof values.mem_fraction_static === "number") this.memFractionStatic = values.mem_fraction_static
    this.reach("args-resolved", "launcher", line, no)
    this.events.push({ _tag: "ServerArgsLine", values, line: no })
  }
}
