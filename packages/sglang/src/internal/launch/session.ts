/**
 * A launch's hold on its host across dropped connections. Every step takes the connection
 * from the pool when it runs (never one kept from the start); when a step fails because the
 * connection is gone, the pool entry is dropped and the step runs again on a new connection,
 * until the launch's deadline. The first failure of an outage reports `Disconnected`, the
 * first success after it `Reconnected`, shared by every step running at the time (death
 * watchers, the log follow, readiness).
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import type { ConfigFileError, ConnectError, HostNotFound } from "@mlops/core/Errors"
import { Clock, Duration, Effect, Schedule } from "effect"

/** The failures that mean "the connection is gone", not "the step failed". */
const TRANSIENT = new Set(["ConnectionLost", "ConnectionRefused", "ConnectTimeout"])

/** A step that only reads may also be retried when the connection went silent. */
const TRANSIENT_READ = new Set([...TRANSIENT, "CommandTimeout"])

export const isTransient = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "_tag" in error && TRANSIENT.has(String(error._tag))

const isTransientRead = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "_tag" in error && TRANSIENT_READ.has(String(error._tag))

type GetError = HostNotFound | ConfigFileError | ConnectError

export interface Session {
  readonly alias: string
  /** The connection to use now (reconnecting when the last one dropped). */
  readonly connection: Effect.Effect<Connection, GetError>
  /**
   * Run `step` on the current connection. With `retry` (`"read"` for steps safe to repeat,
   * also after a silent connection; `"write"` for idempotent writes), a lost connection is
   * replaced and the step runs again until the deadline.
   */
  readonly run: <A, E, R>(
    step: (conn: Connection) => Effect.Effect<A, E, R>,
    options?: { readonly retry?: "read" | "write" | "never" }
  ) => Effect.Effect<A, E | GetError, R>
  /** True while the connection is known to be down. */
  readonly isDown: Effect.Effect<boolean>
  /** Epoch ms of the last reconnect (0 when it never dropped): silence before it is not the server's. */
  readonly lastReconnectAt: Effect.Effect<number>
  /** Epoch ms of the launch deadline (steps stop retrying there). */
  readonly deadline: number
}

const RETRY_SPACING = "200 millis"

export const make = Effect.fn("Launch.session")(function* (o: {
  readonly alias: string
  readonly deadline: number
  readonly startedAt: number
  readonly onDisconnected: (reason: string, elapsedMs: number) => Effect.Effect<void>
  readonly onReconnected: (downMs: number, elapsedMs: number) => Effect.Effect<void>
}) {
  const pool = yield* ConnectionPool
  let downSince: number | undefined
  let reconnectedAt = 0
  // each broken connection is dropped from the pool once, by whichever step saw it fail first
  const dropped = new WeakSet<Connection>()

  const markDown = (conn: Connection | undefined, error: unknown) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      if (conn !== undefined && !dropped.has(conn)) {
        dropped.add(conn)
        yield* pool.invalidate(o.alias)
      }
      if (downSince !== undefined) return
      downSince = now
      const reason =
        typeof error === "object" && error !== null && "message" in error
          ? String(error.message)
          : String(error)
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

  const remaining = Effect.map(Clock.currentTimeMillis, (now) =>
    Duration.millis(Math.max(0, o.deadline - now))
  )

  const run: Session["run"] = (step, options) => {
    const retry = options?.retry ?? "read"
    if (retry === "never") return Effect.flatMap(pool.get(o.alias), step).pipe(Effect.tap(() => markUp))
    const retriable = retry === "read" ? isTransientRead : isTransient
    const once = pool.get(o.alias).pipe(
      Effect.tapError((error) => (retriable(error) ? markDown(undefined, error) : Effect.void)),
      Effect.flatMap((conn) =>
        step(conn).pipe(Effect.tapError((error) => (retriable(error) ? markDown(conn, error) : Effect.void)))
      ),
      Effect.tap(() => markUp)
    )
    return Effect.flatMap(remaining, (left) =>
      once.pipe(
        Effect.retry({
          while: retriable,
          schedule: Schedule.spaced(RETRY_SPACING).pipe(Schedule.jittered, Schedule.upTo(left))
        })
      )
    )
  }

  return {
    alias: o.alias,
    connection: pool.get(o.alias),
    run,
    isDown: Effect.sync(() => downSince !== undefined),
    lastReconnectAt: Effect.sync(() => reconnectedAt),
    deadline: o.deadline
  } satisfies Session
})
