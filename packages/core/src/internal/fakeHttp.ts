/**
 * A real `node:http` server on 127.0.0.1:0 running a fake program's HTTP handler, so
 * `forward(port)` can hand out a genuine Duplex (a loopback socket) like ssh2's forwardOut.
 *
 * @internal
 */

import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, Exit, Fiber, Runtime, type Scope, Stream } from "effect"
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
            const { status, headers, body } = exit.value
            res.writeHead(status, { "content-type": "application/json", ...headers })
            if (typeof body === "string") {
              res.end(body)
              return
            }
            // paced chunks: each written as it comes; a client that goes away (before or while it
            // streams) stops the stream
            const writing = Runtime.runFork(runtime)(
              Stream.runForEach(body, (chunk) =>
                res.destroyed ? Effect.interrupt : Effect.sync(() => res.write(chunk))
              ).pipe(Effect.ensuring(Effect.sync(() => res.end())))
            )
            res.on("close", () => {
              if (!res.writableFinished) Runtime.runFork(runtime)(Fiber.interrupt(writing))
            })
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
