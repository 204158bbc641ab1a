/**
 * `RemoteProcess.watch`: the death watchers of a detached process (the `exit` file, the
 * group's liveness) run on the pool's current connection and are restarted on a new one after
 * a drop, so a death during an outage is reported right after reconnecting.
 *
 * @internal
 */
import { type Duration, Effect, Mailbox, Option, Schedule, Stream } from "effect"
import type { Connection, ExitStatus } from "../Connection.js"
import { ConnectionPool, defaultReconnect, type GetError, isTransient } from "../ConnectionPool.js"
import type { CommandError, ConnectError, ProcessError, RemoteFileError } from "../Errors.js"

/** @internal */
export type WatchEvent =
  | { readonly _tag: "Disconnected"; readonly reason: string }
  | { readonly _tag: "Reconnected" }
  | { readonly _tag: "Exited"; readonly status: ExitStatus | undefined }

/** @internal */
export interface WatchOptions {
  /** Between reads of the `exit` file; default 50 ms. */
  readonly exitPoll?: Duration.DurationInput
  /** Between liveness checks (`ps`); default 2 s. */
  readonly alivePoll?: Duration.DurationInput
  /** Between looks for a sign of an unrecorded end (a file read); default 250 ms. */
  readonly signPoll?: Duration.DurationInput
  /** Re-acquiring the connection after a drop; default `ConnectionPool.defaultReconnect`. */
  readonly reconnect?: Schedule.Schedule<unknown, unknown>
}

/** What the probes of a process fail with: at least the connection's errors, maybe their own. */
type StepError =
  | CommandError
  | ProcessError
  | RemoteFileError
  | ConnectError
  | { readonly _tag: string; readonly message: string }

/**
 * How to tell that `proc` ended: its recorded end (cheap, polled often), its liveness (dearer,
 * polled seldom), and a cheap sign that it may have ended without recording it (a group killed
 * whole, its supervisor with it: the leader gone), which liveness then confirms at once.
 */
export interface Probes<P, E> {
  readonly exitStatus: (conn: Connection, proc: P) => Effect.Effect<ExitStatus | undefined, E>
  readonly isAlive: (conn: Connection, proc: P) => Effect.Effect<boolean, E>
  /** True once it may have ended unrecorded (never answering: no such sign). */
  readonly mayHaveEnded: (conn: Connection, proc: P) => Effect.Effect<boolean, E>
}

const isRemoteFileError = (error: { readonly _tag: string }): error is RemoteFileError =>
  error._tag === "RemoteFileError"

/** A step that failed for a reason another try may not have (a timeout, an sftp hiccup). */
const isRetryable = (error: StepError | GetError): boolean =>
  isTransient(error) ||
  error._tag === "CommandTimeout" ||
  error._tag === "ChannelOpenFailed" ||
  (isRemoteFileError(error) && !error.notFound)

export const watch = <P, E extends StepError>(
  alias: string,
  proc: P,
  options: WatchOptions,
  probes: Probes<P, E>
): Stream.Stream<WatchEvent, E | GetError, ConnectionPool> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const pool = yield* ConnectionPool
      const mailbox = yield* Mailbox.make<WatchEvent, E | GetError>()
      const reconnect = options.reconnect ?? defaultReconnect

      /** Both watchers on one connection; the first to see the end (or to fail) wins. */
      const deathOn = (conn: Connection) => {
        const exited = Effect.gen(function* () {
          for (;;) {
            const status = yield* probes.exitStatus(conn, proc)
            if (status !== undefined) return status
            yield* Effect.sleep(options.exitPoll ?? "50 millis")
          }
        })
        const vanished = probes.isAlive(conn, proc).pipe(
          Effect.repeat({
            schedule: Schedule.spaced(options.alivePoll ?? "2 seconds"),
            until: (alive) => !alive
          }),
          Effect.zipRight(probes.exitStatus(conn, proc))
        )
        // a sign first, then liveness confirms it; a false sign leaves it to the slow poll
        const signalled = Effect.gen(function* () {
          for (;;) {
            if (yield* probes.mayHaveEnded(conn, proc)) {
              if (!(yield* probes.isAlive(conn, proc))) return yield* probes.exitStatus(conn, proc)
              return yield* Effect.never
            }
            yield* Effect.sleep(options.signPoll ?? "250 millis")
          }
        })
        return Effect.raceFirst(
          exited,
          Effect.raceFirst(Effect.disconnect(vanished), Effect.disconnect(signalled))
        )
      }

      let disconnected = false
      const round = Effect.gen(function* () {
        const conn = yield* pool.get(alias)
        if (disconnected) {
          disconnected = false
          yield* mailbox.offer({ _tag: "Reconnected" })
        }
        return yield* deathOn(conn).pipe(
          Effect.tapError((error) =>
            Effect.gen(function* () {
              if (!isTransient(error)) return
              if (!disconnected) yield* mailbox.offer({ _tag: "Disconnected", reason: error.message })
              disconnected = true
              yield* pool.invalidate(alias, conn)
            })
          )
        )
      })

      const program = round.pipe(
        Effect.retry({ schedule: reconnect, while: isRetryable }),
        Effect.flatMap((status) => mailbox.offer({ _tag: "Exited", status })),
        Effect.zipRight(mailbox.end),
        Effect.catchAll((error) => mailbox.fail(error))
      )
      // interruptible even when the stream is built inside a finalizer, so its scope can close
      yield* Effect.forkScoped(Effect.interruptible(program))
      return Mailbox.toStream(mailbox)
    })
  )

/** The status in the stream's last `Exited`. */
export const lastExit = <E, R>(
  events: Stream.Stream<WatchEvent, E, R>
): Effect.Effect<ExitStatus | undefined, E, R> =>
  Effect.map(
    Stream.runLast(
      Stream.filter(events, (e): e is Extract<WatchEvent, { readonly _tag: "Exited" }> => e._tag === "Exited")
    ),
    (last) => Option.getOrUndefined(last)?.status
  )
