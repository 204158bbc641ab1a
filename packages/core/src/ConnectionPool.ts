/**
 * One shared connection per host, opened on first use and kept for the pool's scope.
 * A connection that dropped is replaced on the next `get`.
 *
 * @since 0.1.0
 */
import { Config, Context, Duration, Effect, Layer, type Scope } from "effect"
import type { Connection } from "./Connection.js"
import type { ConfigFileError, ConnectError, HostNotFound } from "./Errors.js"
import type { HostConfig } from "./HostConfig.js"
import type { Hosts } from "./Hosts.js"
import * as internal from "./internal/connectionPool.js"
import * as ssh from "./internal/sshConnection.js"

/** @category tags */
export class ConnectionPool extends Context.Tag("@mlops/core/ConnectionPool")<
  ConnectionPool,
  {
    readonly get: (alias: string) => Effect.Effect<Connection, HostNotFound | ConfigFileError | ConnectError>
    /** Forget a connection known to be broken so the next `get` reconnects. */
    readonly invalidate: (alias: string) => Effect.Effect<void>
  }
>() {}

/**
 * How a live connection is opened. `passphrase` decrypts encrypted identity files (default:
 * env `MLOPS_SSH_PASSPHRASE`).
 *
 * @category models
 */
export interface ConnectionOptions {
  /**
   * Session channels open at once per connection (sshd's MaxSessions defaults to 10). Default 8.
   * If the host's MaxSessions is lower, refused opens are retried (jittered, for about 10 s, cut
   * short by the command's timeout) and then fail with `ChannelOpenFailed` naming the fix.
   */
  readonly maxChannels?: number
  /** Default timeout of each command and remote step. Default 30 seconds. */
  readonly commandTimeout?: Duration.DurationInput
  readonly passphrase?: string
}

/**
 * Settings from the environment: `MLOPS_MAX_CHANNELS` (default 8), `MLOPS_COMMAND_TIMEOUT`
 * (a duration such as `30 seconds`, default 30 s).
 *
 * @category config
 */
export const config: Config.Config<{
  readonly maxChannels: number
  readonly commandTimeout: Duration.Duration
}> = Config.all({
  maxChannels: Config.integer("MLOPS_MAX_CHANNELS").pipe(
    Config.withDefault(8),
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 })
  ),
  commandTimeout: Config.duration("MLOPS_COMMAND_TIMEOUT").pipe(Config.withDefault(Duration.seconds(30)))
})

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
