/**
 * The JSON files of a deployment directory, as schemas (public through `Deployment.ts`).
 *
 * @internal
 */
import { Schema } from "effect"
import { RecordedSpec, type Spec, specOf } from "./seams.js"

/** Milliseconds from `startedAt` at which each phase was first reached. @category models */
export const PhaseTiming = Schema.Struct({ phase: Schema.String, atMs: Schema.Number })
/** @category models */
export type PhaseTiming = typeof PhaseTiming.Type

/** A salted SHA-256 of secret inputs (see `Secrets.digest`). @category files */
export const SecretsDigest = Schema.Struct({ salt: Schema.String, sha256: Schema.String })

/** `argv.json`. @category files */
export const ArgvFile = Schema.Struct({
  /** What SGLang was started with (after auto-fixes). */
  argv: Schema.Array(Schema.String),
  /** What the user asked for. */
  requestedArgv: Schema.Array(Schema.String)
})
/** @category files */
export type ArgvFile = typeof ArgvFile.Type

/** `resolved.json`: null `effective` when preflight was skipped. @category files */
export const ResolvedFile = Schema.Struct({
  effective: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  adjustments: Schema.Array(Schema.String)
})
/** @category files */
export type ResolvedFile = typeof ResolvedFile.Type

/** `meta.json`. @category files */
export const MetaFile = Schema.Struct({
  name: Schema.String,
  port: Schema.Number,
  /** The engine (`sglang`, `vllm`); records written before engines were named are SGLang's. */
  engine: Schema.optionalWith(Schema.String, { default: () => "sglang" }),
  /** The engine's version (null when preflight was skipped and the probe had none). */
  engineVersion: Schema.optional(Schema.NullOr(Schema.String)),
  /** The version, as records written before engines were named call it. */
  sglangVersion: Schema.optional(Schema.NullOr(Schema.String)),
  /**
   * Where it runs: the placement's spec (`{ "kind": ..., ...its settings }`); records of
   * older mlops name only the kind, and the oldest none (they ran as a detached group).
   */
  placement: Schema.optionalWith(RecordedSpec, { default: () => "detached-group" }),
  /** How the engine was found and started: the runtime's spec (older records: a Python environment). */
  runtime: Schema.optionalWith(RecordedSpec, { default: () => "python-env" }),
  /** The interpreter that runs the engine. */
  python: Schema.String,
  /** What identifies the install it runs (an image's id), when the runtime tells installs apart; older records: none. */
  install: Schema.optional(Schema.String),
  /** The environment variables the server was started with: names only. */
  envNames: Schema.Array(Schema.String),
  /** Digest of the environment values and secret flag values. */
  secrets: SecretsDigest,
  /** Epoch ms. */
  createdAt: Schema.Number,
  mlopsVersion: Schema.String,
  attempt: Schema.Number
})
/** @category files */
export type MetaFile = typeof MetaFile.Type

/**
 * `ranks.json`, in every rank's run directory of a deployment across several hosts (absent on
 * one host): the hosts in rank order (rank 0 serves HTTP), this directory's rank, and where the
 * ranks meet.
 *
 * @category files
 */
export const RanksFile = Schema.Struct({
  hosts: Schema.Array(Schema.String),
  rank: Schema.Number,
  rendezvous: Schema.Struct({ address: Schema.String, port: Schema.Number }),
  /** The deployment's flags as started (after any fix), before each rank's own place; secrets `***`. */
  argv: Schema.Array(Schema.String)
})
/** @category files */
export type RanksFile = typeof RanksFile.Type

/** The placement spec a record names. @category files */
export const placementOf = (meta: MetaFile): Spec => specOf(meta.placement)

/** The runtime spec a record names. @category files */
export const runtimeOf = (meta: MetaFile): Spec => specOf(meta.runtime)

/** The engine version a record names, whichever field it uses. @category files */
export const versionOf = (meta: MetaFile): string | null => meta.engineVersion ?? meta.sglangVersion ?? null

/**
 * Milliseconds from the server's start (its spawn) to each readiness milestone, as sparkrun
 * names them so the two compare: TTR port (the port accepts a connection), TTR HTTP (`/health`
 * 200) and TTFT (the first non-empty streamed token); null where it was not reached.
 *
 * @category files
 */
export const TimeToReady = Schema.Struct({
  portOpenMs: Schema.NullOr(Schema.Number),
  httpReadyMs: Schema.NullOr(Schema.Number),
  firstTokenMs: Schema.NullOr(Schema.Number)
})
/** @category files */
export type TimeToReady = typeof TimeToReady.Type

/** `TTR port 12.1 s · TTR HTTP 30.4 s · TTFT not reached` (`-` where it could not be seen). @category files */
export const describeTimeToReady = (t: TimeToReady): string => {
  const at = (ms: number | null) => (ms === null ? "-" : `${(ms / 1000).toFixed(1)} s`)
  return `TTR port ${at(t.portOpenMs)} · TTR HTTP ${at(t.httpReadyMs)} · TTFT ${at(t.firstTokenMs)}`
}

/** `ready.json` (records from before time-to-ready was kept have none). @category files */
export const ReadyFile = Schema.Struct({
  readyAt: Schema.Number,
  phases: Schema.Array(PhaseTiming),
  timeToReady: Schema.optional(TimeToReady)
})
/** @category files */
export type ReadyFile = typeof ReadyFile.Type
