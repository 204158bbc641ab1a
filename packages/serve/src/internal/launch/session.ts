/**
 * A launch's hold on its host across dropped connections. Every step takes the connection
 * from the pool when it runs (core's `ConnectionPool.withConnection`), never one kept from the
 * start: when a step fails because the connection is gone, that connection is dropped from the
 * pool and the step runs again on a new one, until the launch's deadline. The first failure of
 * an outage reports `Disconnected`, the first success after it `Reconnected`, shared by every
 * step running at the time (the death watch, the log follow, readiness).
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import { CommandTimeout, ConnectionLost, ForwardFailed, RemoteFileError } from "@mlops/core/Errors"
import * as HttpClient from "@mlops/core/HttpClient"
import { Clock, Effect, Option, Schedule } from "effect"
import { firstEventOf, type Requester } from "../../Readiness.js"

export { isTransient } from "@mlops/core/ConnectionPool"

/** How long a failed step waits to see whether its connection is closing. */
const DYING_GRACE = "1 second"

const isCutMidFlight = (e: { readonly _tag: string }): boolean =>
  (e instanceof RemoteFileError && !e.notFound) ||
  e._tag === "ChannelOpenFailed" ||
  (e instanceof ForwardFailed && e.midRequest === true)

/** How often a step that failed as if cut mid-flight, on a connection that stayed open, runs again. */
const CUT_RETRIES = 2

/** How soon a lost connection is tried again: often, since a verdict may be waiting. */
const RETRY_SPACING = "250 millis"

export interface Session {
  readonly alias: string
  /**
   * Run `step` on the current connection. With `retry` `"read"` (steps safe to repeat) a lost
   * or silent (timed out) connection is replaced and the step runs again until the deadline;
   * `"write"` (idempotent writes) retries only a lost one; `"never"` runs once.
   */
  readonly run: <A, E extends { readonly _tag: string }, R>(
    step: (conn: Connection) => Effect.Effect<A, E, R>,
    options?: { readonly retry?: "read" | "write" | "never" }
  ) => Effect.Effect<A, E | ConnectionLost | ConnectionPool.GetError, R | ConnectionPool.ConnectionPool>
  /**
   * HTTP to `port` on the host (or on `target` behind it), each request a step of the session:
   * one cut mid-flight or on a lost connection is sent again on a new one.
   */
  readonly http: (
    port: number,
    target?: string
  ) => Requester<
    HttpClient.HttpError | ConnectionLost | ConnectionPool.GetError,
    ConnectionPool.ConnectionPool
  >
  /** The reconnect schedule for core helpers that re-acquire connections themselves (bounded by the deadline). */
  readonly reconnect: Schedule.Schedule<unknown, unknown>
  /** Report an outage seen by a core helper (`RemoteProcess.watch`, ...). */
  readonly markDown: (reason: string) => Effect.Effect<void>
  /** Report that a core helper reached the host again. */
  readonly markUp: Effect.Effect<void>
  /** True while the connection is known to be down. */
  readonly isDown: Effect.Effect<boolean>
  /** Epoch ms of the last reconnect (0 when it never dropped): silence before it is not the server's. */
  readonly lastReconnectAt: Effect.Effect<number>
  /** Epoch ms of the launch deadline (steps stop retrying there). */
  readonly deadline: number
}

export const make = Effect.fn("Launch.session")(function* (o: {
  readonly alias: string
  readonly deadline: number
  readonly startedAt: number
  readonly onDisconnected: (reason: string, elapsedMs: number) => Effect.Effect<void>
  readonly onReconnected: (downMs: number, elapsedMs: number) => Effect.Effect<void>
}) {
  let downSince: number | undefined
  let reconnectedAt = 0

  const markDown = (reason: string) =>
    Effect.gen(function* () {
      if (downSince !== undefined) return
      const now = yield* Clock.currentTimeMillis
      downSince = now
      yield* o.onDisconnected(reason, now - o.startedAt)
    })

  const markUp = Effect.gen(function* () {
    if (downSince === undefined) return
    const now = yield* Clock.currentTimeMillis
    const downMs = now - downSince
    downSince = undefined
    reconnectedAt = now
    yield* o.onReconnected(downMs, now - o.startedAt)
  })

  // every retry sequence ends at the launch's deadline (on the Clock), whenever it began
  const reconnect = Schedule.spaced(RETRY_SPACING).pipe(
    Schedule.jittered,
    Schedule.checkEffect(() => Effect.map(Clock.currentTimeMillis, (now) => now < o.deadline))
  )

  const run: Session["run"] = (step, options) => {
    const retry = options?.retry ?? "read"
    if (retry === "never") {
      return Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get(o.alias)).pipe(
        Effect.flatMap(step),
        Effect.tap(() => markUp)
      )
    }
    // What the connection's death looks like from one step: a read that got no answer in time
    // (safe to repeat), or a file, channel or forward error while the connection is closing (an
    // sftp request or a readiness request cut mid-flight). Both become ConnectionLost, so the step runs again on a new one.
    const guarded = <A, E extends { readonly _tag: string }, R>(
      conn: Connection,
      effect: Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | ConnectionLost, R> =>
      Effect.catchIf(
        effect,
        (e): e is E => (retry === "read" && e instanceof CommandTimeout) || isCutMidFlight(e),
        (e) =>
          e instanceof CommandTimeout
            ? Effect.fail(new ConnectionLost({ host: o.alias, reason: e.message }))
            : Effect.flatMap(
                Effect.timeoutOption(conn.closed, DYING_GRACE),
                (lost): Effect.Effect<never, E | ConnectionLost> =>
                  Option.isSome(lost) ? Effect.fail(lost.value) : Effect.fail(e)
              )
      )
    const attempt = ConnectionPool.withConnection(o.alias, (conn) => guarded(conn, step(conn)), {
      reconnect,
      onLost: (error) => markDown("message" in error ? String(error.message) : error._tag)
    }).pipe(
      // a cut that kills the sftp or forwarding process before the connection itself leaves the
      // connection open and the request failed: try the step again a few times before believing it
      Effect.retry({ schedule: Schedule.spaced(RETRY_SPACING), times: CUT_RETRIES, while: isCutMidFlight })
    )
    return Effect.zipLeft(attempt, markUp)
  }

  const http: Session["http"] = (port, target) => ({
    request: (request) =>
      run((conn) =>
        Effect.scoped(
          Effect.flatMap(
            HttpClient.make(conn, { port, ...(target === undefined ? {} : { target }) }),
            (client) => client.request(request)
          )
        )
      ),
    firstEvent: (request, until) =>
      run((conn) =>
        Effect.scoped(
          Effect.flatMap(
            HttpClient.make(conn, { port, ...(target === undefined ? {} : { target }) }),
            (client) => firstEventOf(client)(request, until)
          )
        )
      )
  })

  return {
    alias: o.alias,
    run,
    http,
    reconnect,
    markDown,
    markUp,
    isDown: Effect.sync(() => downSince !== undefined),
    lastReconnectAt: Effect.sync(() => reconnectedAt),
    deadline: o.deadline
  } satisfies Session
})
