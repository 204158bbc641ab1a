/**
 * One HTTP request to a port on the host through `Connection.forward`, with the signature of
 * core's `Tunnel.request`. Kept here because `Tunnel.request` (core, at the time of writing)
 * passes `agent: false`, which makes node:http ignore `createConnection` and dial
 * 127.0.0.1:<port> locally instead of through the forward. Switch back to
 * `Tunnel.request` once that is fixed.
 *
 * @internal
 */

import * as http from "node:http"
import type * as net from "node:net"
import type { Errors } from "@mlops/core"
import type { Connection } from "@mlops/core/Connection"
import { ForwardFailed } from "@mlops/core/Errors"
import { type TunnelRequest, type TunnelResponse, TunnelTimeout } from "@mlops/core/Tunnel"
import { Duration, Effect } from "effect"

export const request = (
  connection: Connection,
  options: TunnelRequest
): Effect.Effect<TunnelResponse, Errors.ForwardFailed | Errors.ConnectError | TunnelTimeout> => {
  const timeout = Duration.decode(options.timeout ?? "30 seconds")
  const host = connection.host.alias
  return Effect.scoped(
    Effect.gen(function* () {
      const duplex = yield* connection.forward(options.port)
      return yield* Effect.async<TunnelResponse, Errors.ForwardFailed>((resume) => {
        const fail = (error: Error) =>
          resume(Effect.fail(new ForwardFailed({ host, port: options.port, reason: error.message })))
        const req = http.request(
          {
            method: options.method,
            path: options.path,
            host: "127.0.0.1",
            port: options.port,
            headers: { connection: "close", ...options.headers },
            createConnection: () => duplex as net.Socket
          },
          (res) => {
            const chunks: Array<Buffer> = []
            res.on("data", (chunk: Buffer) => chunks.push(chunk))
            res.on("error", fail)
            res.on("end", () => {
              const headers: Record<string, string> = {}
              for (const [name, value] of Object.entries(res.headers)) {
                if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value
              }
              resume(
                Effect.succeed({
                  status: res.statusCode ?? 0,
                  headers,
                  body: Buffer.concat(chunks).toString("utf8")
                })
              )
            })
          }
        )
        req.on("error", fail)
        req.end(options.body === undefined ? undefined : Buffer.from(options.body))
        return Effect.sync(() => req.destroy())
      })
    })
  ).pipe(
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: () =>
        new TunnelTimeout({
          host,
          port: options.port,
          path: options.path,
          timeoutMs: Duration.toMillis(timeout)
        })
    })
  )
}
