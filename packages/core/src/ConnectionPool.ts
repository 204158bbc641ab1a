/**
 * One shared connection per host, opened on first use and kept for the pool's scope.
 * A connection that dropped is replaced on the next `get`.
 *
 * @since 0.1.0
 */
import { join } from "node:path"
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Schedule, type Scope } from "effect"
import type { Connection } from "./Connection.js"
import type { ConfigFileError, ConnectError, HostNotFound } from "./Errors.js"
import type { HostConfig } from "./HostConfig.js"
import { type Hosts, mlopsHome } from "./Hosts.js"
import * as internal from "./internal/connectionPool.js"
import { defaultPersist } from "./internal/remoteHelper.js"
import * as ssh from "./internal/sshConnection.js"

/** @category tags */
export class ConnectionPool extends Context.Tag("@mlops/core/ConnectionPool")<
  ConnectionPool,
  {
    readonly get: (alias: string) => Effect.Effect<Connection, HostNotFound | ConfigFileError | ConnectError>
    /**
     * Forget a connection known to be broken (closing it) so the next `get` reconnects. With
     * `connection`, only when it is still the pool's current one: a caller that saw its
     * connection fail never closes the fresh one another caller already made.
     */
    readonly invalidate: (alias: string, connection?: Connection) => Effect.Effect<void>
  }
>() {}

/** What `get` can fail with. @category models */
export type GetError = HostNotFound | ConfigFileError | ConnectError

/**
 * Errors after which another connection may work: the connection dropped, or connecting was
 * refused or timed out (sshd restarting, a network blip). Host keys, authentication and
 * configuration are not transient.
 *
 * @category reconnecting
 */
export const isTransient = (error: { readonly _tag: string }): boolean =>
  error._tag === "ConnectionLost" || error._tag === "ConnectionRefused" || error._tag === "ConnectTimeout"

/**
 * The default schedule for re-acquiring a connection after a drop: exponential from 100 ms,
 * jittered, at most 2 s apart, for 2 minutes.
 *
 * @category reconnecting
 */
export const defaultReconnect: Schedule.Schedule<unknown, unknown> = Schedule.exponential("100 millis").pipe(
  Schedule.jittered,
  Schedule.union(Schedule.spaced("2 seconds")),
  Schedule.upTo("2 minutes")
)

/**
 * The pool's connection to `alias`, re-acquired while connecting fails transiently (per
 * `schedule`, default `defaultReconnect`).
 *
 * @category reconnecting
 */
export const acquire = (
  alias: string,
  schedule: Schedule.Schedule<unknown, unknown> = defaultReconnect
): Effect.Effect<Connection, GetError, ConnectionPool> =>
  Effect.flatMap(ConnectionPool, (pool) =>
    pool.get(alias).pipe(Effect.retry({ schedule, while: isTransient }))
  )

/**
 * Run `f` on the pool's connection to `alias`; when it fails with a transient error, forget
 * that connection (`invalidate(alias, conn)`) and run `f` again on a fresh one, per `reconnect`
 * (default `defaultReconnect`; the first connect is retried the same way). `f` must be safe to
 * repeat: the failed run may have reached the host. `onLost` sees each transient failure.
 *
 * @category reconnecting
 */
export const withConnection = <A, E extends { readonly _tag: string }, R>(
  alias: string,
  f: (conn: Connection) => Effect.Effect<A, E, R>,
  options: {
    readonly reconnect?: Schedule.Schedule<unknown, unknown>
    readonly onLost?: (error: E | GetError) => Effect.Effect<void>
  } = {}
): Effect.Effect<A, E | GetError, R | ConnectionPool> =>
  Effect.flatMap(ConnectionPool, (pool) =>
    pool.get(alias).pipe(
      Effect.flatMap((conn) =>
        f(conn).pipe(
          Effect.tapError((error) => (isTransient(error) ? pool.invalidate(alias, conn) : Effect.void))
        )
      ),
      Effect.tapError((error) =>
        options.onLost !== undefined && isTransient(error) ? options.onLost(error) : Effect.void
      ),
      Effect.retry({
        schedule: options.reconnect ?? defaultReconnect,
        while: isTransient
      })
    )
  )

/**
 * How a live connection is opened. `passphrase` decrypts encrypted identity files (`config`
 * reads it from `MLOPS_SSH_PASSPHRASE`, redacted: it is never printed).
 *
 * @category models
 */
export interface ConnectionOptions {
  /**
   * Session channels open at once per connection (sshd's MaxSessions defaults to 10). Default 8.
   * If the host's MaxSessions is lower, refused opens are retried (jittered) while other channels
   * free their slots, until none has freed for about 10 s (or the command's timeout), and then
   * fail with `ChannelOpenFailed` naming the fix.
   */
  readonly maxChannels?: number
  /** Default timeout of each command and remote step. Default 30 seconds. */
  readonly commandTimeout?: Duration.DurationInput
  readonly passphrase?: Redacted.Redacted<string>
  /**
   * Run commands through one long-lived helper per connection (started once through the login
   * shell; it needs `python3` >= 3.5 on the host and sshd's stream-local forwarding), so they
   * do not pay for the user's `~/.bashrc` each time. Falls back to exec channels when the
   * helper cannot start. Default true.
   */
  readonly remoteHelper?: boolean
  /**
   * How long the login shell may take to start the helper before commands run on exec channels
   * instead. Default: the command timeout, at most 15 s.
   */
  readonly remoteHelperStartTimeout?: Duration.DurationInput
  /**
   * How long the remote helper stays on the host after its last connection closed, so that the
   * next connection (the next `mlops` run) reaches it without the login shell. It lives in
   * `~/.mlops/run/` on the host; it is started again when the host's rc files changed. Zero:
   * the helper ends with its connection. Default 10 minutes.
   */
  readonly remoteHelperPersist?: Duration.DurationInput
  /**
   * The local directory where persistent helpers' sockets are remembered (0700, a file per
   * helper). Default (`config`): `$MLOPS_HOME/helpers`, MLOPS_HOME default `~/.mlops`;
   * without it (`make`), this process's memory.
   */
  readonly remoteHelperSockets?: string
}

/**
 * Settings from the environment: `MLOPS_MAX_CHANNELS` (default 8), `MLOPS_COMMAND_TIMEOUT`
 * (a duration such as `30 seconds`, default 30 s), `MLOPS_REMOTE_HELPER` (`false`/`0` turns
 * the remote helper off, default on), `MLOPS_REMOTE_HELPER_PERSIST` (a duration, or `0` for a
 * helper that ends with its connection; default 10 minutes), `MLOPS_HOME` (the helpers'
 * sockets are remembered in `<MLOPS_HOME>/helpers`, default `~/.mlops`), `MLOPS_SSH_PASSPHRASE`
 * (optional, redacted).
 *
 * @category config
 */
export const config: Config.Config<{
  readonly maxChannels: number
  readonly commandTimeout: Duration.Duration
  readonly remoteHelper: boolean
  readonly remoteHelperPersist: Duration.Duration
  readonly remoteHelperSockets: string
  readonly passphrase?: Redacted.Redacted<string>
}> = Config.all({
  maxChannels: Config.integer("MLOPS_MAX_CHANNELS").pipe(
    Config.withDefault(8),
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 })
  ),
  commandTimeout: Config.duration("MLOPS_COMMAND_TIMEOUT").pipe(Config.withDefault(Duration.seconds(30))),
  remoteHelper: Config.boolean("MLOPS_REMOTE_HELPER").pipe(Config.withDefault(true)),
  remoteHelperPersist: Config.duration("MLOPS_REMOTE_HELPER_PERSIST").pipe(
    Config.orElse(() =>
      Config.map(Config.literal("0", "off")("MLOPS_REMOTE_HELPER_PERSIST"), () => Duration.zero)
    ),
    Config.withDefault(defaultPersist)
  ),
  remoteHelperSockets: Config.map(mlopsHome, (home) => join(home, "helpers")),
  passphrase: Config.option(Config.redacted("MLOPS_SSH_PASSPHRASE"))
}).pipe(
  Config.map(({ passphrase, ...rest }) =>
    Option.isSome(passphrase) && Redacted.value(passphrase.value) !== ""
      ? { ...rest, passphrase: passphrase.value }
      : rest
  )
)

/**
 * Open one live ssh connection to a resolved host (host key checked, jump hops included). It
 * is closed when the scope closes.
 *
 * @category constructors
 */
export const makeConnection: (
  host: HostConfig,
  options?: ConnectionOptions
) => Effect.Effect<Connection, ConnectError, Scope.Scope> = ssh.make

/**
 * A pool over live ssh connections; aliases are resolved with `Hosts`.
 *
 * @category constructors
 */
export const make = (
  options: ConnectionOptions = {}
): Effect.Effect<Context.Tag.Service<ConnectionPool>, never, Hosts | Scope.Scope> => internal.make(options)

/**
 * The live pool, configured from the environment (`config`); `overrides` win.
 *
 * @category layers
 */
export const layer = (overrides: ConnectionOptions = {}) =>
  Layer.scoped(
    ConnectionPool,
    Effect.flatMap(config, (settings) => make({ ...settings, ...overrides }))
  )
