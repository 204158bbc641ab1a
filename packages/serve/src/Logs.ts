/**
 * `logs`: a deployment's server log, the last n lines or followed live. Following resumes
 * across dropped connections at the last complete line (core's `LogTail`) and ends when the
 * deployment does: the rest of the log, then one `Ended` item with how it ended.
 *
 * While it follows a ready server whose log has stopped growing, it asks the server for one
 * streamed token (status's canary): an idle server answers and nothing is said; one whose
 * requests hang (its `/health` may still say 200) is reported once per quiet spell as a
 * `Stalled` item between the lines.
 *
 * @since 0.1.0
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as LogTail from "@mlops/core/LogTail"
import { Clock, Duration, Effect, Schedule, Schema, Stream } from "effect"
import * as Deployment from "./Deployment.js"
import type * as Engine from "./Engine.js"
import * as Placements from "./Placements.js"
import { generatesAt } from "./Readiness.js"
import * as Status from "./Status.js"

const stateOf = (host: string, name: string) =>
  Effect.flatMap(
    Effect.flatMap(ConnectionPool, (pool) => pool.get(host)),
    (conn) => Deployment.readExisting(conn, name)
  )

/** A deployment has no rank of that number. @category errors */
export class RankNotFound extends Schema.TaggedError<RankNotFound>()("RankNotFound", {
  host: Schema.String,
  name: Schema.String,
  rank: Schema.Number,
  /** Its hosts in rank order (one on one host). */
  hosts: Schema.Array(Schema.String)
}) {
  override get message() {
    return `${this.name} on ${this.host} has no rank ${this.rank}: it runs ${this.hosts.length === 1 ? "on one host (rank 0)" : `ranks 0-${this.hosts.length - 1} on ${this.hosts.join(", ")}`}`
  }
}

/**
 * The host that runs rank `rank` of deployment `name` recorded on `host` (every rank's host
 * records the deployment's hosts): where its log is.
 *
 * @category programs
 */
export const hostOfRank = Effect.fn("Logs.hostOfRank")(function* (host: string, name: string, rank: number) {
  const state = yield* stateOf(host, name)
  const hosts = state.ranks?.hosts ?? [host]
  const found = Number.isInteger(rank) ? hosts[rank] : undefined
  if (found === undefined) return yield* new RankNotFound({ host, name, rank, hosts })
  return found
})

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

/**
 * A ready server's log has not grown for `quietMs` and a streamed request got no token within
 * the canary's 10 s: it no longer generates. Said once per quiet spell.
 *
 * @category models
 */
export interface Stalled {
  readonly _tag: "Stalled"
  readonly host: string
  readonly name: string
  /** Since the last line (or the start of following). */
  readonly quietMs: number
  /** The last line it wrote, if any was seen. */
  readonly lastLine: string | undefined
}

/** @category models */
export interface FollowOptions {
  /** Lines of the tail to start with (default 10). */
  readonly lines?: number
  /** After this long without a new line, ask a ready server for a token (default 60 s). */
  readonly quietAfter?: Duration.DurationInput
}

/** The canary's budget: a streamed token within this, or the server does not generate. */
const CANARY = Duration.seconds(10)

/** Completes once the deployment's server has ended, as its placement watches it (at once when none was started). */
const exitOf = (host: string, state: Deployment.State) =>
  Effect.gen(function* () {
    const conn = yield* (yield* ConnectionPool).get(host)
    const { placed } = yield* Placements.ofDeployment(conn, state)
    if (placed !== undefined)
      yield* Stream.runDrain(placed.watch(host, { reconnect: LogTail.followReconnect }))
  })

/**
 * Whether the ready deployment still generates (undefined: not ready yet, not running, or
 * behind an API key), asked with one streamed token.
 */
const canary = (host: string, name: string, engines: Engine.Registry) =>
  Effect.gen(function* () {
    const conn = yield* (yield* ConnectionPool).get(host)
    const state = yield* Deployment.read(conn, name)
    if (state?.ready === undefined || state.meta === undefined) return undefined
    const keyFlag = engines.find((e) => e.name === state.meta?.engine)?.apiKeyFlag
    const argv = state.argv?.argv ?? []
    if (keyFlag !== undefined && argv.some((w) => w === keyFlag || w.startsWith(`${keyFlag}=`)))
      return undefined
    const { placed } = yield* Placements.ofDeployment(conn, state)
    const seen = placed === undefined ? undefined : yield* placed.inspect(conn)
    if (seen?.alive !== true || seen.address === undefined) return undefined
    return yield* generatesAt(conn, state.meta.port, seen.address, CANARY)
  }).pipe(Effect.orElseSucceed(() => undefined))

/**
 * The last `lines` lines (default 10), then every new line as it is written, until the
 * deployment exits: then the lines it wrote last and one `Ended` item; a `Stalled` item when
 * a ready server's log stopped growing and it no longer streams a token.
 *
 * @category programs
 */
export const follow = (host: string, name: string, engines: Engine.Registry, options: FollowOptions = {}) =>
  Stream.unwrap(
    Effect.gen(function* () {
      const state = yield* stateOf(host, name)
      const path = state.logPath
      const last = yield* LogTail.tail(host, path, { lines: options.lines ?? 10 })
      let lastLine = last.at(-1)?.text
      let lastLineAt = yield* Clock.currentTimeMillis
      let saidStalled = false
      const quietMs = Duration.toMillis(options.quietAfter ?? Duration.seconds(60))
      // an empty tail (an empty log, or lines: 0 asked) follows from the start of the log; to the
      // end the placement's watch sees (a group's `exit` file and liveness, a job's state), across
      // dropped connections, then what it wrote last (a crash's traceback) to the last byte
      const lines = LogTail.toEnd(host, path, {
        fromOffset: last.at(-1)?.nextOffset ?? 0,
        ended: exitOf(host, state)
      }).pipe(
        Stream.tap((line) =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            lastLine = line.text
            lastLineAt = now
            saidStalled = false
          })
        )
      )
      // a quiet log is an idle server or a hung one: the canary tells them apart
      const stalls = Stream.fromSchedule(Schedule.spaced(Duration.millis(Math.max(250, quietMs / 4)))).pipe(
        Stream.mapEffect(() =>
          Effect.gen(function* () {
            const quiet = (yield* Clock.currentTimeMillis) - lastLineAt
            if (saidStalled || quiet < quietMs) return undefined
            // as it was before the canary (whose own access line the server may log)
            const before = { since: lastLineAt, line: lastLine }
            if ((yield* canary(host, name, engines)) !== false) return undefined
            saidStalled = true
            const now = yield* Clock.currentTimeMillis
            return {
              _tag: "Stalled",
              host,
              name,
              quietMs: now - before.since,
              lastLine: before.line
            } satisfies Stalled
          })
        ),
        Stream.filter((item): item is Stalled => item !== undefined)
      )
      const live = Stream.merge(lines, stalls, { haltStrategy: "left" })
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
      return Stream.concat(Stream.fromIterable<LogTail.LogLine | Stalled | Ended>(last), live).pipe(
        Stream.concat(ended)
      )
    })
  )
