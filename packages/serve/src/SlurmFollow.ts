/**
 * Following a server that runs as a Slurm job: its log through the same classifier as on a
 * plain host (the deployment's log, which the job appends to), merged with the job's states.
 * When the job ends, the stream fails with `SlurmJobEnded`: the classifier's root-cause
 * failure (with its fix) and Slurm's own word on it (`FAILED ExitCode=137:0`, `TIMEOUT`,
 * `OUT_OF_MEMORY`, `NODE_FAIL`, `PREEMPTED`, `CANCELLED`).
 *
 * @since 0.1.0
 */

import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as LogTail from "@mlops/core/LogTail"
import { describeState, isActive, type SlurmJob } from "@mlops/core/SlurmJob"
import { Effect, Schema, Stream } from "effect"
import * as Classifier from "./Classifier.js"
import { LaunchFailure, renderFix } from "./Failures.js"
import type { LaunchEvent } from "./LaunchEvent.js"
import type { Placed, PlacementError } from "./Placement.js"
import type { SlurmPlacement } from "./SlurmPlacement.js"

/** @category models */
export type SlurmFollowEvent =
  | { readonly _tag: "Job"; readonly job: SlurmJob }
  | { readonly _tag: "Log"; readonly event: LaunchEvent }

/** The job ended: the server is gone. @category errors */
export class SlurmJobEnded extends Schema.TaggedError<SlurmJobEnded>()("SlurmJobEnded", {
  host: Schema.String,
  jobId: Schema.String,
  /** Slurm's words: `FAILED ExitCode=1:0`. */
  state: Schema.String,
  node: Schema.optional(Schema.String),
  /** What the log says went wrong, when it says. */
  failure: Schema.optional(LaunchFailure)
}) {
  override get message() {
    const where = this.node === undefined ? "" : ` on ${this.node}`
    const slurm = `Slurm job ${this.jobId}${where} (${this.host}): ${this.state}`
    if (this.failure === undefined) return `the server ended; ${slurm}`
    const fix = this.failure.fix === undefined ? "" : ` (fix: ${renderFix(this.failure.fix)})`
    return `${this.failure.message}${fix}; ${slurm}`
  }
}

const SIGNAL_NAMES: Readonly<Record<number, string>> = {
  6: "SIGABRT",
  9: "SIGKILL",
  11: "SIGSEGV",
  15: "SIGTERM"
}

/** Slurm's `code:signal` as the classifier's exit status. */
const classifierExit = (job: SlurmJob): Classifier.ExitStatus | undefined => {
  const exit = "exitCode" in job.state ? job.state.exitCode : undefined
  if (exit === undefined) return undefined
  return exit.signal !== 0
    ? { signal: SIGNAL_NAMES[exit.signal] ?? `SIG${exit.signal}` }
    : { exitCode: exit.code }
}

/** @category models */
export interface SlurmFollowOptions {
  /** The engines whose lines and signatures the classifier reads. */
  readonly engines: ReadonlyArray<Classifier.EngineLogs>
  /** After the job ended, how long the log may still bring its last lines (default 500 ms). */
  readonly drain?: `${number} millis`
}

/**
 * The job's states and the classified log, until the job ends (then `SlurmJobEnded`). End it
 * earlier with Stream combinators (`takeUntil` a `Ready` log event).
 *
 * @category following
 */
export const follow = (
  placement: SlurmPlacement,
  placed: Placed,
  options: SlurmFollowOptions
): Stream.Stream<SlurmFollowEvent, SlurmJobEnded | PlacementError | LogTail.FollowError, ConnectionPool> =>
  Stream.suspend(() => {
    const classifier = Classifier.make(options.engines)
    let reported: LaunchFailure | undefined
    const log = LogTail.follow(placed.host, placed.logPath).pipe(
      Stream.mapConcat((line) =>
        classifier.feed(line.text).map((event): SlurmFollowEvent => {
          if (event._tag === "Failed") reported = event.failure
          return { _tag: "Log", event }
        })
      )
    )
    const ended = (job: SlurmJob) =>
      Effect.gen(function* () {
        // the log follower polls every 100 ms: let it bring the job's last lines
        yield* Effect.sleep(options.drain ?? "500 millis")
        const failure = classifier.finish(classifierExit(job)) ?? reported
        return yield* new SlurmJobEnded({
          host: placed.host,
          jobId: job.id,
          state: describeState(job),
          ...(job.nodes === undefined ? {} : { node: job.nodes }),
          ...(failure === undefined ? {} : { failure })
        })
      })
    const states = placement.watch(placed.host, placed).pipe(
      Stream.flatMap((event): Stream.Stream<SlurmFollowEvent, SlurmJobEnded> => {
        if (event._tag !== "Job") return Stream.empty
        const state: SlurmFollowEvent = { _tag: "Job", job: event.job }
        if (isActive(event.job.state)) return Stream.make(state)
        return Stream.concat(Stream.make(state), Stream.fromEffect(ended(event.job)))
      })
    )
    return Stream.merge(states, log, { haltStrategy: "left" })
  })
