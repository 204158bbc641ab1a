/**
 * `diagnose`: classify a finished (or stuck) SGLang log, local or on a host: the typed failure
 * with its evidence and fix, or "no failure found", plus the phase the launch reached.
 *
 * @since 0.1.0
 */
import { FileSystem } from "@effect/platform"
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import { Effect, Option } from "effect"
import * as Classifier from "./Classifier.js"
import * as Deployment from "./Deployment.js"
import type { LaunchFailure } from "./Failures.js"
import type { Phase } from "./LaunchEvent.js"

/** @category models */
export interface Diagnosis {
  /** `path` or `host:path`. */
  readonly source: string
  readonly phase: Phase
  readonly ready: boolean
  /** Undefined: no failure found in the log. */
  readonly failure: LaunchFailure | undefined
  readonly lines: number
}

/** Classify log text (with the exit status when known). @category programs */
export const text = (source: string, log: string, exit?: Classifier.ExitStatus): Diagnosis => {
  const d = Classifier.diagnose(log, exit)
  return { source, phase: d.phase, ready: d.ready, failure: Option.getOrUndefined(d.failure), lines: d.lines }
}

/** Classify a local file. @category programs */
export const localFile = Effect.fn("Diagnose.localFile")(function* (path: string) {
  const fs = yield* FileSystem.FileSystem
  return text(path, yield* fs.readFileString(path))
})

/** Classify a file on a host. @category programs */
export const remoteFile = Effect.fn("Diagnose.remoteFile")(function* (host: string, path: string) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(host)
  return text(`${host}:${path}`, yield* RemoteFiles.readText(conn, path))
})

/**
 * Classify a deployment's log together with its recorded exit status; undefined when no
 * deployment has that name.
 *
 * @category programs
 */
export const deployment = Effect.fn("Diagnose.deployment")(function* (host: string, name: string) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(host)
  const state = yield* Deployment.read(conn, name)
  if (state === undefined) return undefined
  const log = (yield* RemoteFiles.readTextIfExists(conn, state.logPath)) ?? ""
  return text(`${host}:${state.logPath}`, log, Deployment.exitStatusOf(state))
})
