/**
 * Single-line signatures and event readers used by the classifier: who owns an exception
 * record, the launcher's own failure lines (uvicorn bind, watchdog, child crash notes,
 * argparse), fatal interpreter errors, and exit statuses.
 * @internal
 */

import type { ExitStatus } from "../Classifier.js"
import type { EvidenceLine } from "../Failures.js"
import * as F from "../Failures.js"
import type { Capacity } from "../LaunchEvent.js"
import { signalName } from "./failureDetails.js"
import type { Phase } from "./phase.js"
import { type Candidate, CONSEQUENCE, ROOT, UNKNOWN } from "./signatures.js"

/** The process that printed a `... hit an exception` record (rank prefix, or the manager named). */
export const recordOwner = (line: string, process: string): string =>
  line.includes("DetokenizerManager")
    ? "detokenizer"
    : line.includes("TokenizerManager")
      ? "tokenizer"
      : line.includes("DataParallelController")
        ? "dp-controller"
        : process === "launcher"
          ? "scheduler" // tp 1: schedulers log without a prefix
          : process

export const watchdogStall = (
  line: string,
  at: number,
  no: number,
  process: string,
  phase: Phase
): Candidate => ({
  tier: ROOT,
  failure: new F.StartupStalled({
    evidence: [{ line: no, text: line }],
    process,
    phase,
    reason: line.slice(at),
    fix: {
      action:
        "a forward pass hung: raise --watchdog-timeout if it is only slow, else look for a stuck collective (NCCL_DEBUG=INFO)"
    }
  })
})

/** The launcher noting that a child died: never the cause, only used when nothing better is known. */
export const childCrashNote = (line: string): boolean =>
  line.includes("crashed with exit code") ||
  line.includes("Received sigquit") ||
  line.includes("SIGQUIT received")

export const consequence = (
  line: string,
  at: number,
  no: number,
  process: string,
  phase: Phase
): Candidate => ({
  tier: CONSEQUENCE,
  failure: new F.ProcessExited({
    evidence: [{ line: no, text: line }],
    process,
    phase,
    reason: line.slice(at)
  })
})

const BIND = /error while attempting to bind on address \('([^']*)', (\d+)\)/

/** uvicorn's `[Errno 98] error while attempting to bind on address (...)`. */
export const httpBind = (line: string, at: number, no: number, phase: Phase): Candidate | undefined => {
  const bind = BIND.exec(line)
  if (!bind) return undefined
  return {
    tier: ROOT,
    failure: new F.PortInUse({
      evidence: [{ line: no, text: line }],
      process: "launcher",
      phase,
      kind: "http",
      port: Number(bind[2]),
      reason: line.slice(at + 6).trim(),
      fix: { action: `stop the process listening on port ${bind[2]} (ss -ltnp), or pass another --port` }
    })
  }
}

/** CPython's faulthandler output (schedulers enable it). */
export const fatalPython = (line: string, no: number, phase: Phase): Candidate => ({
  tier: UNKNOWN,
  failure: new F.ProcessExited({
    evidence: [{ line: no, text: line }],
    process: "scheduler",
    phase,
    reason: line,
    ...(line.includes("Segmentation fault") ? { signal: "SIGSEGV" } : {})
  })
})

const SHARDS = /(\d+)% Completed \| (\d+)\/(\d+)/

export const shardProgress = (line: string): { done: number; total: number; percent: number } | undefined => {
  const m = SHARDS.exec(line)
  return m ? { done: Number(m[2]), total: Number(m[3]), percent: Number(m[1]) } : undefined
}

/** Rank 0's `max_total_num_tokens=..., max_running_requests=..., context_len=..., available_gpu_mem=... GB`. */
export const capacityEvent = (line: string, at: number, no: number): Capacity => {
  const message = line.slice(at)
  const get = (key: string) => {
    const m = new RegExp(`${key}=([\\d.]+)`).exec(message)
    return m ? Number(m[1]) : 0
  }
  return {
    _tag: "Capacity",
    maxTotalNumTokens: get("max_total_num_tokens"),
    maxRunningRequests: get("max_running_requests"),
    contextLen: get("context_len"),
    availableGpuMemGB: get("available_gpu_mem"),
    line: no
  }
}

/** A ProcessExited completed with how the process ended. */
export const withExit = (failure: F.ProcessExited, exit: ExitStatus): F.ProcessExited => {
  const signal =
    exit.signal ??
    (exit.exitCode !== undefined && exit.exitCode > 128 ? signalName(exit.exitCode - 128) : failure.signal)
  return new F.ProcessExited({
    ...failure,
    ...(exit.exitCode === undefined ? {} : { exitCode: exit.exitCode }),
    ...(signal === undefined ? {} : { signal })
  })
}

export const argparse = (
  message: string,
  usage: EvidenceLine | undefined,
  error: EvidenceLine,
  phase: Phase
): Candidate => {
  const kind = message.includes("invalid choice")
    ? "invalid-choice"
    : message.startsWith("unrecognized arguments")
      ? "unrecognized"
      : message.includes("arguments are required")
        ? "required"
        : message.includes("invalid") && message.includes("value")
          ? "invalid-value"
          : "other"
  const flags = [...new Set(message.match(/--[a-z][a-z0-9-]*/g) ?? [])]
  const fix: F.Fix =
    kind === "unrecognized"
      ? { removeFlags: flags, action: "these flags do not exist in the installed SGLang version" }
      : kind === "required"
        ? { action: `add ${flags.join(" ") || "the required arguments"}` }
        : { action: `correct ${flags.join(" ") || "the argument"}: ${message}` }
  return {
    tier: ROOT,
    failure: new F.ArgparseError({
      evidence: usage ? [usage, error] : [error],
      process: "launcher",
      phase,
      reason: message,
      kind,
      flags,
      fix
    })
  }
}
