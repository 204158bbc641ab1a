/**
 * One shared connection per host, opened on first use and kept for the pool's scope.
 * A connection that dropped is replaced on the next `get`.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { Connection } from "./Connection.js"
import type { ConfigFileError, ConnectError, HostNotFound } from "./Errors.js"

/** @category tags */
export class ConnectionPool extends Context.Tag("@mlops/core/ConnectionPool")<
  ConnectionPool,
  {
    readonly get: (alias: string) => Effect.Effect<Connection, HostNotFound | ConfigFileError | ConnectError>
    /** Forget a connection known to be broken so the next `get` reconnects. */
    readonly invalidate: (alias: string) => Effect.Effect<void>
  }
>() {}
