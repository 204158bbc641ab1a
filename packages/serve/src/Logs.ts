/**
 * `logs`: a deployment's server log, the last n lines or followed live. Following resumes
 * across dropped connections at the last complete line (core's `LogTail`) and ends when the
 * deployment does: the rest of the log, then one `Ended` item with how it ended.
 *
 * @since 0.1.0
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as LogTail from "@mlops/core/LogTail"
import { Effect, Schedule, Stream } from "effect"
import * as Deployment from "./Deployment.js"
import type * as Engine from "./Engine.js"
import * as Placements from "./Placements.js"
import * as Status from "./Status.js"

const stateOf = (host: string, name: string) =>
  Effect.flatMap(
    Effect.flatMap(ConnectionPool, (pool) => pool.get(host)),
    (conn) => Deployment.readExisting(conn, name)
  )

/**
 * The last `lines` lines (default 100).
 *
 * @category programs
 */
export const tail = Effect.fn("Logs.tail")(function* (
  host: string,
  name: string,
  options: { readonly lines?: number } = {}
) {
  const state = yield* stateOf(host, name)
  return yield* LogTail.tail(host, state.logPath, { lines: options.lines ?? 100 })
})

/** The last element of `follow`: the deployment is no longer running. @category models */
export interface Ended {
  readonly _tag: "Ended"
  readonly host: string
  readonly name: string
  /** `code N` / `signal NAME` when the supervisor recorded it. */
  readonly exit: string | undefined
  /** How a deliberate `stop` ended it (`terminated`, `killed`). */
  readonly stopped: string | undefined
  /** For a crash: its classified failure (`_tag` and message). */
  readonly failure: { readonly _tag: string; readonly message: string } | undefined
}

/** How long following waits out a dropped connection before giving up. */
const RECONNECT = Schedule.spaced("500 millis").pipe(Schedule.jittered, Schedule.upTo("2 minutes"))

/** Completes once the deployment's server has ended, as its placement watches it (at once when none was started). */
const exitOf = (host: string, state: Deployment.State) =>
  Effect.gen(function* () {
    const conn = yield* (yield* ConnectionPool).get(host)
    const { placed } = yield* Placements.ofDeployment(conn, state)
    if (placed !== undefined) yield* Stream.runDrain(placed.watch(host, { reconnect: RECONNECT }))
  })

const decoder = new TextDecoder()

/** Every line from `offset` to the end of the file, a last line without its newline included. */
const readFrom = (host: string, path: string, offset: number) =>
  Effect.gen(function* () {
    const pool = yield* ConnectionPool
    const conn = yield* pool.get(host)
    const bytes = yield* conn.files.read(path, { offset })
    const lines: Array<LogTail.LogLine> = []
    let start = 0
    while (start < bytes.length) {
      const newline = bytes.indexOf(0x0a, start)
      const end = newline === -1 ? bytes.length : newline
      lines.push({
        _tag: "LogLine",
        text: decoder.decode(bytes.subarray(start, end)).replace(/\r$/, ""),
        offset: offset + start,
        nextOffset: offset + end + 1
      })
      start = end + 1
    }
    return lines
  })

/**
 * The last `lines` lines (default 10), then every new line as it is written, until the
 * deployment exits: then the lines it wrote last and one `Ended` item.
 *
 * @category programs
 */
export const follow = (
  host: string,
  name: string,
  engines: Engine.Registry,
  options: { readonly lines?: number } = {}
) =>
  Stream.unwrap(
    Effect.gen(function* () {
      const state = yield* stateOf(host, name)
      const path = state.logPath
      const last = yield* LogTail.tail(host, path, { lines: options.lines ?? 10 })
      // an empty tail (an empty log, or lines: 0 asked) follows from the start of the log
      let offset = last.at(-1)?.nextOffset ?? 0
      const live = LogTail.follow(host, path, { fromOffset: offset }).pipe(
        Stream.tap((line) =>
          Effect.sync(() => {
            offset = line.nextOffset
          })
        ),
        // the placement's watch (a group's `exit` file and liveness, a job's state), across dropped connections
        Stream.interruptWhen(exitOf(host, state))
      )
      // what it wrote between the last poll and its end (a crash's traceback), to the last byte
      const rest = Stream.unwrap(
        Effect.suspend(() => Effect.map(readFrom(host, path, offset), Stream.fromIterable))
      )
      const ended = Stream.fromEffect(
        Effect.gen(function* () {
          const [status] = yield* Status.ofHost(host, engines, { name })
          return {
            _tag: "Ended",
            host,
            name,
            exit: status?.exit,
            stopped: status?.stopped,
            failure:
              status?.failure === undefined
                ? undefined
                : { _tag: status.failure._tag, message: status.failure.message }
          } satisfies Ended
        })
      )
      return Stream.concat(
        Stream.fromIterable<LogTail.LogLine | Ended>(last),
        Stream.concat(live, rest)
      ).pipe(Stream.concat(ended))
    })
  )
