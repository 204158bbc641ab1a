/**
 * The timeout of HTTP through a connection's forward. Defined here so `Tunnel` (which
 * re-exports it) and the HTTP client share it without importing each other.
 *
 * @internal
 */
import { Schema } from "effect"

/** An HTTP request through a tunnel got no complete answer in time. */
export class TunnelTimeout extends Schema.TaggedError<TunnelTimeout>()("TunnelTimeout", {
  host: Schema.String,
  port: Schema.Number,
  path: Schema.String,
  timeoutMs: Schema.Number
}) {
  override get message() {
    return `no answer from ${this.host}:${this.port}${this.path} within ${this.timeoutMs} ms`
  }
}
