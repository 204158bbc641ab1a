/**
 * A real `node:http` server on 127.0.0.1:0 running a fake program's HTTP handler, so
 * `forward(port)` can hand out a genuine Duplex (a loopback socket) like ssh2's forwardOut.
 *
 * @internal
 */

import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, Exit, Runtime, type Scope } from "effect"
import type { HttpHandler, HttpRequest } from "../FakeProgram.js"

/** Start the server in `scope`'s lifetime; returns the loopback port. Handlers run on the caller's runtime. */
export const serve = (handler: HttpHandler): Effect.Effect<number, never, Scope.Scope> =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const run = Runtime.runPromiseExit(runtime)
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const headers: Record<string, string> = {}
        for (const [name, value] of Object.entries(req.headers)) {
          if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value
        }
        const request: HttpRequest = {
          method: req.method ?? "GET",
          path: req.url ?? "/",
          headers,
          body: Buffer.concat(chunks).toString("utf8")
        }
        void run(handler(request)).then((exit) => {
          if (Exit.isSuccess(exit)) {
            res.writeHead(exit.value.status, { "content-type": "application/json", ...exit.value.headers })
            res.end(exit.value.body)
          } else {
            res.writeHead(500, { "content-type": "text/plain" })
            res.end("fake handler failed")
          }
        })
      })
    })
    return yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
  })
