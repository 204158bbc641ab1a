/**
 * What "done" means for what a placement runs. A server is done when it is ready: its ready
 * line in the log, then the checks after it (readiness requests); a server that exits has
 * failed, whatever its exit status. A job is done when it exits 0. Everything else is shared:
 * following the log through the classifier, the placement's watch, stall detection, how a
 * failure is classified and reported, and stopping.
 *
 * @since 0.1.0
 */
import type { ExitStatus } from "@mlops/core/Connection"
import type { Effect } from "effect"
import type { EngineLogs } from "./Classifier.js"
import type { LaunchEvent } from "./LaunchEvent.js"

/** When following ends well. @category models */
export type Done<E, R> =
  /** The log's ready line, then `checks` (the readiness requests). */
  | { readonly _tag: "Ready"; readonly checks: Effect.Effect<void, E, R> }
  /** An exit with status 0. */
  | { readonly _tag: "ExitedZero" }
  /** Never by itself: it runs until stopped, and any exit is a failure (a rank that serves no HTTP). */
  | { readonly _tag: "Never" }

/** @category models */
export interface Workload<E = never, R = never> {
  /** `server`, `job`. */
  readonly kind: string
  /** What the classifier reads its log with, besides the neutral signatures. */
  readonly logs: ReadonlyArray<EngineLogs>
  readonly done: Done<E, R>
  /** Whether a log event is progress (silence counts from the last one: a stall). */
  readonly isProgress: (event: LaunchEvent | { readonly _tag: "Line" }) => boolean
}

/** Whether an exit status is a success (`code 0`). @category predicates */
export const exitedZero = (status: ExitStatus | undefined): boolean => status?.exitCode === 0

/**
 * A server of an engine: done once its ready line is followed by `checks`; progress is a new
 * phase or a phase's progress (a server loading weights for minutes prints progress lines).
 *
 * @category constructors
 */
export const server = <E, R>(logs: EngineLogs, checks: Effect.Effect<void, E, R>): Workload<E, R> => ({
  kind: "server",
  logs: [logs],
  done: { _tag: "Ready", checks },
  isProgress: (event) => event._tag === "PhaseStarted" || event._tag === "PhaseProgress"
})

/**
 * A job: done when it exits 0; progress is any line it writes (a training loop prints steps).
 * `logs`: the engines whose signatures its log may hold (default none: the neutral ones).
 *
 * @category constructors
 */
export const job = (logs: ReadonlyArray<EngineLogs> = []): Workload => ({
  kind: "job",
  logs,
  done: { _tag: "ExitedZero" },
  isProgress: () => true
})

/**
 * A rank of a server across several hosts that serves no HTTP (every rank but 0): never done by
 * itself (following it ends when rank 0 is ready), any exit a failure; progress as a server's.
 *
 * @category constructors
 */
export const rank = (logs: EngineLogs): Workload => ({
  kind: "rank",
  logs: [logs],
  done: { _tag: "Never" },
  isProgress: (event) => event._tag === "PhaseStarted" || event._tag === "PhaseProgress"
})
