/**
 * Small readers of single lines used by the classifier: who owns an exception record, shard
 * progress, and an exit status folded into ProcessExited.
 * @internal
 */

import type { ExitStatus } from "../Classifier.js"
import * as F from "../Failures.js"
import { signalName } from "./logs/signatures/deaths.js"

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

const SHARDS = /(\d+)% Completed \| (\d+)\/(\d+)/

export const shardProgress = (line: string): { done: number; total: number; percent: number } | undefined => {
  const m = SHARDS.exec(line)
  return m ? { done: Number(m[2]), total: Number(m[3]), percent: Number(m[1]) } : undefined
}

/** A ProcessExited completed with how the process ended (signals named `SIGKILL`, as Python does). */
export const withExit = (failure: F.ProcessExited, exit: ExitStatus): F.ProcessExited => {
  const named =
    exit.signal == null ? undefined : exit.signal.startsWith("SIG") ? exit.signal : `SIG${exit.signal}`
  const code = exit.exitCode ?? undefined
  // a process other than the one that exited (a rank's task on another node) keeps its own end
  const own = failure.process !== "launcher" && failure.signal !== undefined
  const signal = own
    ? failure.signal
    : (named ?? (code !== undefined && code > 128 ? signalName(code - 128) : failure.signal))
  return new F.ProcessExited({
    ...failure,
    ...(code === undefined ? {} : { exitCode: code }),
    ...(signal === undefined ? {} : { signal })
  })
}
