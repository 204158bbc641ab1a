/**
 * What a launch looks like while it happens: the lifecycle phases of an SGLang server and the
 * events the log classifier derives from its log (phase changes, progress, auto-adjustments,
 * warnings, the resolved ServerArgs, readiness, failure).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { LaunchFailure } from "./Failures.js"
import { Phase } from "./internal/phase.js"

export { Phase, phaseIndex, phases } from "./internal/phase.js"

/** Milliseconds since the first timestamped log line (0 when the log has no timestamps). */
const At = Schema.Number

/** A value read from the `server_args=ServerArgs(...)` repr; lists/dicts stay as their repr text. */
export const ArgValue = Schema.Union(Schema.String, Schema.Number, Schema.Boolean, Schema.Null)
/** @category models */
export type ArgValue = typeof ArgValue.Type

/** A lifecycle phase was reached (first rank to reach it). @category events */
export const PhaseStarted = Schema.TaggedStruct("PhaseStarted", {
  phase: Phase,
  at: At,
  process: Schema.String,
  line: Schema.Number
})
/** @category events */
export type PhaseStarted = typeof PhaseStarted.Type

/** Weight loading progress from the `Loading safetensors checkpoint shards` bar. @category events */
export const PhaseProgress = Schema.TaggedStruct("PhaseProgress", {
  phase: Phase,
  done: Schema.Number,
  total: Schema.Number,
  percent: Schema.Number,
  at: At
})
/** @category events */
export type PhaseProgress = typeof PhaseProgress.Type

/** A line where SGLang changed a setting on its own (printed before the ServerArgs line). @category events */
export const Adjustment = Schema.TaggedStruct("Adjustment", { text: Schema.String, line: Schema.Number })
/** @category events */
export type Adjustment = typeof Adjustment.Type

/** A warning worth showing (Python warnings, import errors that SGLang ignored, imbalance). @category events */
export const Warning = Schema.TaggedStruct("Warning", {
  text: Schema.String,
  process: Schema.String,
  line: Schema.Number
})
/** @category events */
export type Warning = typeof Warning.Type

/** The effective values SGLang resolved, read from its `server_args=ServerArgs(...)` line. @category events */
export const ServerArgsLine = Schema.TaggedStruct("ServerArgsLine", {
  values: Schema.Record({ key: Schema.String, value: ArgValue }),
  line: Schema.Number
})
/** @category events */
export type ServerArgsLine = typeof ServerArgsLine.Type

/** The post-memory-sizing summary printed by rank 0 (`max_total_num_tokens=..., ...`). @category events */
export const Capacity = Schema.TaggedStruct("Capacity", {
  maxTotalNumTokens: Schema.Number,
  maxRunningRequests: Schema.Number,
  contextLen: Schema.Number,
  availableGpuMemGB: Schema.Number,
  line: Schema.Number
})
/** @category events */
export type Capacity = typeof Capacity.Type

/** The HTTP server listens (not yet ready: warmup follows). @category events */
export const Listening = Schema.TaggedStruct("Listening", { url: Schema.String, line: Schema.Number })
/** @category events */
export type Listening = typeof Listening.Type

/** `The server is fired up and ready to roll!` @category events */
export const Ready = Schema.TaggedStruct("Ready", { at: At, line: Schema.Number })
/** @category events */
export type Ready = typeof Ready.Type

/**
 * A failure was recognised. A later, better-ranked root cause may supersede an earlier one
 * (another `Failed` follows); the classifier's `finish` gives the final word.
 * @category events
 */
export const Failed = Schema.TaggedStruct("Failed", { failure: LaunchFailure })
/** @category events */
export type Failed = typeof Failed.Type

/** @category events */
export const LaunchEvent = Schema.Union(
  PhaseStarted,
  PhaseProgress,
  Adjustment,
  Warning,
  ServerArgsLine,
  Capacity,
  Listening,
  Ready,
  Failed
)
/** @category events */
export type LaunchEvent = typeof LaunchEvent.Type
