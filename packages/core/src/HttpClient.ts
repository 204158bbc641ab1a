/**
 * An HTTP/1.1 client for a port on the host (or on a machine behind it) through the
 * connection's forwards: keep-alive channels reused across requests, a bounded number of them
 * at once, responses read whole (`request`) or streamed as they arrive (`stream`, with
 * `serverSentEvents` for `text/event-stream` bodies). Works with any `Connection`, the fake
 * host's included.
 *
 * ```ts
 * const client = yield* HttpClient.make(conn, { port: 30000 })
 * const health = yield* client.request({ method: "GET", path: "/health" })
 * const response = yield* client.stream({ method: "POST", path: "/v1/completions", body, headers })
 * yield* HttpClient.serverSentEvents(response.body).pipe(Stream.runForEach(Console.log))
 * ```
 *
 * @since 0.1.0
 */

import type { Duration, Effect, Scope, Stream } from "effect"
import type { Connection } from "./Connection.js"
import type { ConnectError, ForwardFailed } from "./Errors.js"
import * as internal from "./internal/httpClient.js"
import type { TunnelTimeout } from "./Tunnel.js"

/** @category models */
export interface HttpRequest {
  readonly method: string
  /** Path with query string, e.g. `/v1/models`. */
  readonly path: string
  /** Sent as given; `Connection: close` makes the channel single-use. */
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | Uint8Array
  /**
   * Whole request (`request`: waiting for a channel, opening it, the head and the whole body)
   * or until the response head (`stream`); default 30 s. Fails with `TunnelTimeout`.
   */
  readonly timeout?: Duration.DurationInput
}

/** @category models */
export interface HttpResponse {
  readonly status: number
  /** Lower-case names; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>
  /** Decoded as UTF-8 (lossily). */
  readonly body: string
}

/** @category models */
export interface StreamedResponse {
  readonly status: number
  /** Lower-case names; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>
  /**
   * The body as it arrives, read with backpressure; fails with ForwardFailed (`midRequest`)
   * when the channel breaks mid-body. Read it once, within the scope `stream` ran in. Reading
   * it to its end hands the channel back to the client at once; stopping early (or never
   * reading it) closes the channel.
   */
  readonly body: Stream.Stream<Uint8Array, ForwardFailed>
}

/**
 * `ForwardFailed`: the forward could not be opened (nothing listening, forwarding refused;
 * `midRequest` unset), or the channel broke during the exchange (`midRequest: true`).
 * `ConnectError`: the connection itself is gone. `TunnelTimeout`: no answer in time.
 *
 * @category errors
 */
export type HttpError = ForwardFailed | ConnectError | TunnelTimeout

/** @category models */
export interface HttpClient {
  /** Where it sends: `port` on the host, or on `target` behind it. */
  readonly port: number
  readonly target: string | undefined
  /** One request, its whole body read. */
  readonly request: (request: HttpRequest) => Effect.Effect<HttpResponse, HttpError>
  /** The response head, then its body as a Stream; the request and its channel end with the scope. */
  readonly stream: (request: HttpRequest) => Effect.Effect<StreamedResponse, HttpError, Scope.Scope>
}

/** @category models */
export interface HttpClientOptions {
  readonly port: number
  /** The machine the host forwards to (a compute node behind a login node); default the host's loopback. */
  readonly target?: string
  /** At most this many channels open at once (in use or idle); default 4. */
  readonly maxChannels?: number
}

/**
 * A client over one connection: HTTP/1.1 keep-alive, each concurrent request on a forwarded
 * channel of its own, idle channels reused, at most `maxChannels` at once (default 4; more
 * requests wait), all closed with the scope.
 *
 * A request that fails on a reused channel before any response (the server closed the idle
 * channel meanwhile) is sent once more on a fresh channel when its method is idempotent
 * (GET, HEAD, OPTIONS, PUT, DELETE, TRACE).
 *
 * @category constructors
 */
export const make: (
  conn: Connection,
  options: HttpClientOptions
) => Effect.Effect<HttpClient, never, Scope.Scope> = internal.make

/**
 * The data payloads of a server-sent-event body (`data: ...` lines, events separated by blank
 * lines; `[DONE]` included as a payload), as they arrive. Several `data` lines of one event
 * are joined with `\n`; comments and other fields are skipped; an event the body ends
 * without its blank line is still emitted.
 *
 * @category streams
 */
export const serverSentEvents: <E>(body: Stream.Stream<Uint8Array, E>) => Stream.Stream<string, E> =
  internal.serverSentEvents
