/**
 * `diagnose`: classify a finished (or stuck) server log, local, on a host, or from standard
 * input: the typed failure with its evidence and fix, or "no failure found", plus the phase the
 * launch reached and which engine (and version) wrote the log. Logs are streamed in chunks, so
 * a 1 GiB file is read in bounded memory. A file that cannot be read is `LogUnreadable` (naming
 * the path); an empty or binary input is `NotALog`.
 *
 * @since 0.1.0
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import type { ConnectError, HostNotFound, RemoteFileError } from "@mlops/core/Errors"
import * as LocalFiles from "@mlops/core/LocalFiles"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import { Effect, Option, Schema, Stream } from "effect"
import * as Classifier from "./Classifier.js"
import * as Deployment from "./Deployment.js"
import type { LaunchFailure } from "./Failures.js"
import type { Phase } from "./LaunchEvent.js"
import * as Placements from "./Placements.js"

/** @category models */
export interface Diagnosis {
  /** `path`, `host:path` or `stdin`. */
  readonly source: string
  readonly phase: Phase
  readonly ready: boolean
  /** Undefined: no failure found in the log. */
  readonly failure: LaunchFailure | undefined
  readonly lines: number
  /** Which engine wrote the log, when it shows it. */
  readonly engine: "sglang" | "vllm" | undefined
  /** The engine's version, when the log shows it. */
  readonly version: string | undefined
}

/** The log cannot be read: missing, a directory, no permission. @category errors */
export class LogUnreadable extends Schema.TaggedError<LogUnreadable>()("LogUnreadable", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot read ${this.path}: ${this.reason}. Give the path of a log file (on the host with --host), or - to read standard input`
  }
}

/** The input holds no text: an empty or binary file. @category errors */
export class NotALog extends Schema.TaggedError<NotALog>()("NotALog", {
  source: Schema.String,
  reason: Schema.Literal("empty", "binary"),
  bytes: Schema.Number
}) {
  override get message() {
    return this.reason === "empty"
      ? `${this.source} is not a server log: it is empty`
      : `${this.source} is not a server log: it holds binary data (${this.bytes} bytes; a compressed or core file?)`
  }
}

const CHUNK = 1024 * 1024
// a NUL byte is never in a text log; 8 KiB is where `file` and git look too
const SNIFF = 8192

const diagnosisOf = (
  source: string,
  classifier: Classifier.Classifier,
  exit?: Classifier.ExitStatus
): Diagnosis => {
  const failure = classifier.finish(exit)
  const guess = classifier.engine()
  return {
    source,
    phase: classifier.phase(),
    ready: classifier.isReady(),
    failure,
    lines: classifier.lines(),
    engine: guess.engine,
    version: guess.version
  }
}

/** Classify log text already in memory (with the exit status when known). @category programs */
export const text = (
  source: string,
  log: string,
  engines: ReadonlyArray<Classifier.EngineLogs>,
  exit?: Classifier.ExitStatus
): Diagnosis => {
  const classifier = Classifier.make(engines)
  let start = 0
  for (;;) {
    const nl = log.indexOf("\n", start)
    if (nl === -1) {
      if (start < log.length) classifier.feed(log.slice(start))
      break
    }
    classifier.feed(log.slice(start, nl))
    start = nl + 1
  }
  return diagnosisOf(source, classifier, exit)
}

/**
 * Classify a log given as byte chunks, in bounded memory: lossy UTF-8, lines split on `\n`
 * (a `\r` is left to the classifier). Empty or binary input fails with `NotALog`.
 *
 * @category programs
 */
export const bytes = <E, R>(
  source: string,
  chunks: Stream.Stream<Uint8Array, E, R>,
  engines: ReadonlyArray<Classifier.EngineLogs>,
  exit?: Classifier.ExitStatus
): Effect.Effect<Diagnosis, E | NotALog, R> =>
  Effect.suspend(() => {
    const classifier = Classifier.make(engines)
    const decoder = new TextDecoder("utf-8", { fatal: false })
    let pending = ""
    let total = 0
    let sniffed = 0
    let binary = false
    let printable = false
    const feed = (text: string) => {
      pending += text
      let start = 0
      for (;;) {
        const nl = pending.indexOf("\n", start)
        if (nl === -1) break
        classifier.feed(pending.slice(start, nl))
        start = nl + 1
      }
      pending = pending.slice(start)
    }
    return Stream.runForEach(chunks, (chunk) =>
      Effect.sync(() => {
        if (binary) return
        if (sniffed < SNIFF) {
          const head = chunk.subarray(0, SNIFF - sniffed)
          if (head.includes(0)) binary = true
          sniffed += head.length
        }
        total += chunk.length
        if (binary) return
        const text = decoder.decode(chunk, { stream: true })
        if (!printable && /\S/.test(text)) printable = true
        feed(text)
      })
    ).pipe(
      Effect.flatMap(() => {
        if (binary) return Effect.fail(new NotALog({ source, reason: "binary", bytes: total }))
        feed(decoder.decode())
        if (pending !== "") classifier.feed(pending)
        if (!printable) return Effect.fail(new NotALog({ source, reason: "empty", bytes: total }))
        return Effect.succeed(diagnosisOf(source, classifier, exit))
      })
    )
  })

/** Classify a local file, streamed. @category programs */
export const localFile = Effect.fn("Diagnose.localFile")(function* (
  path: string,
  engines: ReadonlyArray<Classifier.EngineLogs>
): Effect.fn.Return<Diagnosis, LogUnreadable | NotALog> {
  const chunks = LocalFiles.stream(path, { chunkSize: CHUNK }).pipe(
    Stream.mapError((e) => new LogUnreadable({ path, reason: e.reason }))
  )
  return yield* bytes(path, chunks, engines)
})

/** A remote file as chunks, read over sftp until the end. */
const remoteChunks = (
  conn: Parameters<typeof RemoteFiles.readFrom>[0],
  path: string
): Stream.Stream<Uint8Array, RemoteFileError | ConnectError> =>
  Stream.paginateEffect(0, (offset) =>
    Effect.map(RemoteFiles.readFrom(conn, path, offset, CHUNK), ({ bytes, nextOffset }) => [
      bytes,
      bytes.length < CHUNK ? Option.none() : Option.some(nextOffset)
    ])
  )

/** Classify a file on a host, streamed; a missing one is `LogUnreadable` naming `host:path`. @category programs */
export const remoteFile = Effect.fn("Diagnose.remoteFile")(function* (
  host: string,
  path: string,
  engines: ReadonlyArray<Classifier.EngineLogs>
): Effect.fn.Return<
  Diagnosis,
  LogUnreadable | NotALog | RemoteFileError | ConnectError | HostNotFound,
  ConnectionPool
> {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(host)
  const stat = yield* conn.files.stat(path)
  if (stat === undefined) return yield* new LogUnreadable({ path: `${host}:${path}`, reason: "no such file" })
  if (stat.isDirectory)
    return yield* new LogUnreadable({ path: `${host}:${path}`, reason: "it is a directory" })
  return yield* bytes(`${host}:${path}`, remoteChunks(conn, path), engines)
})

/**
 * Classify a deployment's log together with its recorded exit status; undefined when no
 * deployment has that name.
 *
 * @category programs
 */
export const deployment = Effect.fn("Diagnose.deployment")(function* (
  host: string,
  name: string,
  engines: ReadonlyArray<Classifier.EngineLogs>
) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(host)
  const state = yield* Deployment.read(conn, name)
  if (state === undefined) return undefined
  const log = (yield* RemoteFiles.readTextIfExists(conn, state.logPath)) ?? ""
  const { placed } = yield* Placements.ofDeployment(conn, state)
  const exit = placed === undefined ? undefined : (yield* placed.inspect(conn)).exit
  return text(`${host}:${state.logPath}`, log, engines, exit)
})
