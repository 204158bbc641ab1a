/**
 * Follow a remote log file as a `Stream` of complete lines with their byte offsets, across
 * dropped connections: the stream reconnects and resumes at the end of the last complete
 * line, so no line is lost or repeated.
 *
 * A partial last line (no `\n` yet) is never emitted: it is held until its newline arrives,
 * and dropped if the stream ends first; resume with `fromOffset: last.nextOffset` to get it
 * once complete. Lines are decoded lossily (invalid UTF-8 → U+FFFD) and lose a trailing `\r`.
 *
 * @since 0.1.0
 */
import { Chunk, Duration, Effect, Option, Schedule, Stream } from "effect"
import type { Connection } from "./Connection.js"
import { ConnectionPool, isTransient } from "./ConnectionPool.js"
import type { ConfigFileError, ConnectError, HostNotFound, RemoteFileError } from "./Errors.js"
import { ConnectionLost, LogTruncated } from "./Errors.js"
import * as internal from "./internal/logTail.js"

/** @category models */
export interface LogLine {
  readonly _tag: "LogLine"
  readonly text: string
  /** Byte offset of the line's first byte. */
  readonly offset: number
  /** Byte offset just after its `\n`: where to resume. */
  readonly nextOffset: number
}

/** Emitted (with `onTruncate: "restart"`) when the file shrank and following restarts at 0. @category models */
export interface LogRestarted {
  readonly _tag: "LogRestarted"
  /** Where reading had got to. */
  readonly offset: number
  /** The file's size when the shrink was seen. */
  readonly size: number
}

/** @category models */
export type FollowError = LogTruncated | RemoteFileError | ConnectError | HostNotFound | ConfigFileError

/** @category models */
export interface FollowOptions {
  /** Start here (a `nextOffset` from an earlier run); default 0. */
  readonly fromOffset?: number
  /** Between size checks when nothing new arrived; default 100 ms. */
  readonly pollInterval?: Duration.DurationInput
  /** Retries on a lost/refused connection; default exponential from 100 ms, jittered, ≤ 5 s apart, for 2 minutes. */
  readonly reconnect?: Schedule.Schedule<unknown, FollowError>
  /** Each stat/read must answer within this; a silent connection counts as lost. Default 30 s. */
  readonly stepTimeout?: Duration.DurationInput
  /** At most this many bytes per read; default 1 MiB. */
  readonly maxReadBytes?: number
}

/** The default reconnect schedule. @category constants */
export const defaultReconnect: Schedule.Schedule<unknown, FollowError> = Schedule.exponential(
  "100 millis"
).pipe(Schedule.jittered, Schedule.union(Schedule.spaced("5 seconds")), Schedule.upTo("2 minutes"))

const DYING_CONNECTION_GRACE = "1 second"

/**
 * Follow `path` on host `alias` forever (end it with Stream combinators such as `takeUntil`).
 * A file that shrinks below what was read fails with LogTruncated, or with
 * `onTruncate: "restart"` emits `LogRestarted` and follows again from 0. A missing file
 * is waited for (it counts as empty).
 *
 * @category following
 */
export function follow(
  alias: string,
  path: string,
  options?: FollowOptions & { readonly onTruncate?: "fail" }
): Stream.Stream<LogLine, FollowError, ConnectionPool>
export function follow(
  alias: string,
  path: string,
  options: FollowOptions & { readonly onTruncate: "restart" }
): Stream.Stream<LogLine | LogRestarted, FollowError, ConnectionPool>
export function follow(
  alias: string,
  path: string,
  options: FollowOptions & { readonly onTruncate?: "fail" | "restart" } = {}
): Stream.Stream<LogLine | LogRestarted, FollowError, ConnectionPool> {
  const pollInterval = Duration.decode(options.pollInterval ?? "100 millis")
  const stepTimeout = Duration.decode(options.stepTimeout ?? "30 seconds")
  const maxReadBytes = options.maxReadBytes ?? 1024 * 1024
  return Stream.unwrap(
    Effect.gen(function* () {
      const pool = yield* ConnectionPool
      const state = internal.makeState(options.fromOffset ?? 0)
      // A file error other than "not found" while the connection is dying (an sftp channel
      // cut mid-open) is the connection's fault: report it as ConnectionLost so it is retried.
      const step = <A>(conn: Connection, effect: Effect.Effect<A, RemoteFileError | ConnectError>) =>
        Effect.timeoutFail(effect, {
          duration: stepTimeout,
          onTimeout: () =>
            new ConnectionLost({ host: alias, reason: `no answer within ${Duration.format(stepTimeout)}` })
        }).pipe(
          Effect.catchIf(
            (e): e is RemoteFileError => e._tag === "RemoteFileError" && !e.notFound,
            (error) =>
              Effect.flatMap(Effect.timeoutOption(conn.closed, DYING_CONNECTION_GRACE), (lost) =>
                Effect.fail(Option.getOrElse(lost, () => error))
              )
          )
        )

      // the connection the last poll used: only that one is invalidated after a failure
      let current: Connection | undefined
      const pollOnce: Effect.Effect<ReadonlyArray<LogLine | LogRestarted>, FollowError> = Effect.gen(
        function* () {
          const conn = yield* pool.get(alias)
          current = conn
          const size = (yield* step(conn, conn.files.stat(path)))?.size ?? 0
          if (size < state.readEnd) {
            if (options.onTruncate !== "restart") {
              return yield* new LogTruncated({ host: alias, path, offset: state.readEnd, size })
            }
            const marker: LogRestarted = { _tag: "LogRestarted", offset: state.readEnd, size }
            internal.restartAt(state, 0)
            return [marker]
          }
          if (size === state.readEnd) return []
          const length = Math.min(size - state.readEnd, maxReadBytes)
          const bytes = yield* step(conn, conn.files.read(path, { offset: state.readEnd, length }))
          return internal.consume(state, bytes)
        }
      ).pipe(
        Effect.tapError((error) =>
          isTransient(error)
            ? Effect.zipRight(
                current === undefined ? Effect.void : pool.invalidate(alias, current),
                Effect.sync(() => internal.restartAt(state, state.offset))
              )
            : Effect.void
        ),
        Effect.retry({ schedule: options.reconnect ?? defaultReconnect, while: isTransient })
      )

      // Sleep only when a poll brought nothing new, so a backlog is read at full speed.
      return Stream.repeatEffectChunk(
        Effect.flatMap(pollOnce, (items) =>
          items.length === 0
            ? Effect.as(Effect.sleep(pollInterval), Chunk.empty())
            : Effect.succeed(Chunk.unsafeFromArray(items))
        )
      )
    })
  )
}

/**
 * The last `lines` complete lines of `path` (a trailing partial line is left out, so
 * `follow({ fromOffset: last.nextOffset })` continues exactly). Reads backwards in chunks.
 *
 * @category reading
 */
export const tail = Effect.fn("LogTail.tail")(function* (
  alias: string,
  path: string,
  options: { readonly lines: number; readonly chunkBytes?: number }
): Effect.fn.Return<
  ReadonlyArray<LogLine>,
  RemoteFileError | ConnectError | HostNotFound | ConfigFileError,
  ConnectionPool
> {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(alias)
  const size = (yield* conn.files.stat(path))?.size ?? 0
  return yield* internal.readLastLines(
    (offset, length) => conn.files.read(path, { offset, length }),
    size,
    options.lines,
    options.chunkBytes ?? 64 * 1024
  )
})

const restDecoder = new TextDecoder()

/**
 * Every line from `offset` to the end of the file, a last line without its newline included:
 * what a log holds past the last line followed, once the process writing it has ended (a
 * crash's traceback, to the last byte).
 *
 * @category reading
 */
export const rest = Effect.fn("LogTail.rest")(function* (
  alias: string,
  path: string,
  offset: number
): Effect.fn.Return<
  ReadonlyArray<LogLine>,
  RemoteFileError | ConnectError | HostNotFound | ConfigFileError,
  ConnectionPool
> {
  const conn = yield* (yield* ConnectionPool).get(alias)
  const bytes = yield* conn.files.read(path, { offset })
  const lines: Array<LogLine> = []
  let start = 0
  while (start < bytes.length) {
    const newline = bytes.indexOf(0x0a, start)
    const end = newline === -1 ? bytes.length : newline
    lines.push({
      _tag: "LogLine",
      text: restDecoder.decode(bytes.subarray(start, end)).replace(/\r$/, ""),
      offset: offset + start,
      nextOffset: offset + end + 1
    })
    start = end + 1
  }
  return lines
})

/**
 * The lines of `path` from `fromOffset` as they are written, until `ended` completes (the writer
 * exited, as its placement saw it), then what it wrote last, to the last byte: a crash's
 * traceback is never cut off between the last poll and the end.
 *
 * @category following
 */
export const toEnd = <E, R>(
  alias: string,
  path: string,
  options: { readonly fromOffset: number; readonly ended: Effect.Effect<unknown, E, R> }
): Stream.Stream<LogLine, FollowError | E, ConnectionPool | R> =>
  Stream.suspend(() => {
    let offset = options.fromOffset
    const live = follow(alias, path, { fromOffset: offset }).pipe(
      Stream.tap((line) =>
        Effect.sync(() => {
          offset = line.nextOffset
        })
      ),
      Stream.interruptWhen(options.ended)
    )
    const last = Stream.unwrap(
      Effect.suspend(() => Effect.map(rest(alias, path, offset), Stream.fromIterable))
    )
    return Stream.concat(live, last)
  })

/** How a follower of a log waits out a dropped connection before giving up: 2 minutes. @category schedules */
export const followReconnect: Schedule.Schedule<unknown, unknown> = Schedule.spaced("500 millis").pipe(
  Schedule.jittered,
  Schedule.upTo("2 minutes")
)
