/**
 * One connection per host alias, shared, scoped to the pool. Concurrent `get`s for the same
 * alias share one connect; a dropped connection is replaced on the next `get`.
 *
 * @internal
 */
import { Deferred, Effect, ExecutionStrategy, Exit, Scope } from "effect"
import type { Connection } from "../Connection.js"
import type { ConfigFileError, ConnectError, HostNotFound } from "../Errors.js"
import { Hosts } from "../Hosts.js"
import { type ConnectionOptions, make as makeConnection } from "./sshConnection.js"

type GetError = HostNotFound | ConfigFileError | ConnectError

interface Entry {
  readonly connection: Deferred.Deferred<Connection, GetError>
  readonly scope: Scope.CloseableScope
  /** Set when the connection's `closed` fired. */
  dead: boolean
  /** The connection, once open. */
  current: Connection | undefined
}

export const make = (options: ConnectionOptions) =>
  Effect.gen(function* () {
    const hosts = yield* Hosts
    const poolScope = yield* Effect.scope
    const lock = yield* Effect.makeSemaphore(1)
    const entries = new Map<string, Entry>()

    const discard = (alias: string, entry: Entry) =>
      Effect.suspend(() => {
        if (entries.get(alias) === entry) entries.delete(alias)
        return Scope.close(entry.scope, Exit.void)
      })

    const connect = (alias: string, entry: Entry) =>
      Effect.gen(function* () {
        const host = yield* hosts.resolve(alias)
        const connection = yield* makeConnection(host, options).pipe(Scope.extend(entry.scope))
        entry.current = connection
        // mark dead when it drops, so the next get replaces it; interruptible even when the
        // pool is used inside a finalizer (a fiber forked there inherits uninterruptibility, and
        // closing the entry would wait on it forever)
        yield* connection.closed.pipe(
          Effect.tap(() =>
            Effect.sync(() => {
              entry.dead = true
            })
          ),
          Effect.interruptible,
          Effect.forkIn(entry.scope)
        )
        return connection
      }).pipe(
        Effect.exit,
        Effect.flatMap((exit) =>
          Effect.zipRight(
            Exit.isFailure(exit) ? discard(alias, entry) : Effect.void,
            Deferred.done(entry.connection, exit)
          )
        )
      )

    /** The live entry for `alias`, creating (and starting the connect of) a new one if needed. */
    const entryFor = (alias: string) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          const existing = entries.get(alias)
          if (existing !== undefined && !existing.dead) return existing
          if (existing !== undefined) yield* Effect.forkIn(discard(alias, existing), poolScope)
          const entry: Entry = {
            connection: yield* Deferred.make<Connection, GetError>(),
            scope: yield* Scope.fork(poolScope, ExecutionStrategy.sequential),
            dead: false,
            current: undefined
          }
          entries.set(alias, entry)
          // forked into the pool, so one caller's interruption does not strand the others
          yield* Effect.forkIn(Effect.interruptible(connect(alias, entry)), poolScope)
          return entry
        })
      )

    const get = (alias: string): Effect.Effect<Connection, GetError> =>
      Effect.flatMap(entryFor(alias), (entry) => Deferred.await(entry.connection)).pipe(
        Effect.withSpan("ConnectionPool.get", { attributes: { alias } })
      )

    const invalidate = (alias: string, connection?: Connection): Effect.Effect<void> =>
      lock.withPermits(1)(
        Effect.suspend(() => {
          const entry = entries.get(alias)
          if (entry === undefined) return Effect.void
          if (connection !== undefined && entry.current !== connection) return Effect.void
          return discard(alias, entry)
        })
      )

    return { get, invalidate }
  })
