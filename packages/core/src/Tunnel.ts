/**
 * HTTP to a port that only listens on the remote host's loopback (an SGLang server), through
 * the connection's `forward`. Works with any `Connection`, the fake host's included.
 *
 * @since 0.1.0
 */

import * as net from "node:net"
import { type Duration, Effect, ExecutionStrategy, Exit, Runtime, Scope } from "effect"
import type { Connection } from "./Connection.js"
import type { ConnectError, ForwardFailed } from "./Errors.js"
import * as HttpClient from "./internal/httpClient.js"
import { TunnelTimeout } from "./internal/httpErrors.js"

/** An HTTP request through a tunnel got no complete answer in time. @category errors */
export { TunnelTimeout }

/** @category models */
export interface TunnelRequest {
  readonly port: number
  readonly method: string
  readonly path: string
  readonly body?: string | Uint8Array
  readonly headers?: Readonly<Record<string, string>>
  /** Default 30 seconds. */
  readonly timeout?: Duration.DurationInput
  /** The machine the host forwards to (a compute node behind a login node); default the host's loopback. */
  readonly target?: string
}

/** @category models */
export interface TunnelResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * One HTTP/1.1 request over a fresh forward (`Connection: close`), the whole body read: a
 * one-request `HttpClient` scoped to the call. For many requests, make an `HttpClient` and
 * keep it (its channels are reused).
 *
 * @category requests
 */
export const request = (
  connection: Connection,
  options: TunnelRequest
): Effect.Effect<TunnelResponse, ForwardFailed | ConnectError | TunnelTimeout> =>
  Effect.scoped(
    Effect.flatMap(
      HttpClient.make(connection, { port: options.port, target: options.target, maxChannels: 1 }),
      (client) =>
        client.request({
          method: options.method,
          path: options.path,
          headers: { connection: "close", ...options.headers },
          ...(options.body === undefined ? {} : { body: options.body }),
          ...(options.timeout === undefined ? {} : { timeout: options.timeout })
        })
    )
  ).pipe(
    Effect.withSpan("Tunnel.request", {
      attributes: { host: connection.host.alias, port: options.port, path: options.path }
    })
  )

/** @category models */
export interface Listener {
  /** `http://127.0.0.1:<local port>` */
  readonly url: string
  readonly localPort: number
}

/**
 * A local listener on `127.0.0.1:<ephemeral>` whose every accepted socket is piped through a
 * new forward to `port` on the host. Closed (with its open tunnels) with the scope.
 *
 * @category listeners
 */
export const listen = (
  connection: Connection,
  port: number,
  /** The machine the host forwards to (a compute node); default the host's loopback. */
  target?: string
): Effect.Effect<Listener, never, Scope.Scope> =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const scope = yield* Effect.scope
    const sockets = new Set<net.Socket>()
    const server = yield* Effect.acquireRelease(
      Effect.async<net.Server>((resume) => {
        const server = net.createServer((socket) => {
          sockets.add(socket)
          socket.once("close", () => sockets.delete(socket))
          socket.on("error", () => {})
          socket.pause()
          Runtime.runCallback(runtime)(
            Effect.gen(function* () {
              const socketScope = yield* Scope.fork(scope, ExecutionStrategy.sequential)
              socket.once("close", () => Runtime.runFork(runtime)(Scope.close(socketScope, Exit.void)))
              const remote = yield* connection.forward(port, target).pipe(Scope.extend(socketScope))
              remote.on("error", () => socket.destroy())
              remote.on("close", () => socket.destroy())
              socket.pipe(remote).pipe(socket)
              socket.resume()
            }),
            { onExit: (exit) => Exit.isFailure(exit) && socket.destroy() }
          )
        })
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          for (const socket of sockets) socket.destroy()
        })
    )
    const address = server.address() as net.AddressInfo
    return { url: `http://127.0.0.1:${address.port}`, localPort: address.port }
  })
