/**
 * The HTTP client on the fake host: its forwards are loopback sockets to a real node:http
 * server running a fake program's handler, so node:http does the same work as over ssh.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Layer, Scope, Stream } from "effect"
import type { Connection } from "../src/Connection.js"
import { ConnectionPool } from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import * as HttpClient from "../src/HttpClient.js"
import * as RemoteCommand from "../src/RemoteCommand.js"
import * as Tunnel from "../src/Tunnel.js"
import { failureOf, failureTag } from "./support/exits.js"

const PORT = 30000

/** Forwards opened, open now, and the most open at once. */
interface Forwards {
  opened: number
  open: number
  maxOpen: number
}

const counting = (conn: Connection, forwards: Forwards): Connection => ({
  ...conn,
  forward: (port, target) =>
    Effect.tap(conn.forward(port, target), () =>
      Effect.acquireRelease(
        Effect.sync(() => {
          forwards.opened++
          forwards.open++
          forwards.maxOpen = Math.max(forwards.maxOpen, forwards.open)
        }),
        () =>
          Effect.sync(() => {
            forwards.open--
          })
      )
    )
})

/** A fake host whose program `serve` listens on PORT with `handler`, started; then `f`. */
const withServer = <A, E>(
  handler: FakeHost.HttpHandler,
  f: (conn: Connection, forwards: Forwards) => Effect.Effect<A, E, Scope.Scope>
) =>
  Effect.gen(function* () {
    const pool = yield* ConnectionPool
    const conn = yield* pool.get("gpu")
    const host = yield* FakeHost.host("gpu")
    yield* host.start(RemoteCommand.make(["serve"]))
    while ((yield* host.ports).length === 0) yield* Effect.sleep("5 millis")
    const forwards: Forwards = { opened: 0, open: 0, maxOpen: 0 }
    return yield* f(counting(conn, forwards), forwards)
  }).pipe(
    Effect.scoped,
    Effect.provide(
      Layer.fresh(
        FakeHost.layer([
          {
            alias: "gpu",
            programs: [
              { match: "serve", run: (ctx) => Effect.zipRight(ctx.listen(PORT, handler), Effect.never) }
            ]
          }
        ])
      )
    )
  )

const echo: FakeHost.HttpHandler = (req) =>
  Effect.succeed({
    status: req.path === "/missing" ? 404 : 200,
    headers: { "x-echo": "yes" },
    body: JSON.stringify({
      method: req.method,
      path: req.path,
      body: req.body,
      custom: req.headers["x-custom"]
    })
  })

describe("HttpClient on the fake host", () => {
  it.live("request: status, headers and body both ways", () =>
    withServer(echo, (conn) =>
      Effect.gen(function* () {
        const client = yield* HttpClient.make(conn, { port: PORT })
        assert.deepStrictEqual([client.port, client.target], [PORT, undefined])
        const got = yield* client.request({ method: "GET", path: "/health?x=1" })
        assert.strictEqual(got.status, 200)
        assert.strictEqual(got.headers["x-echo"], "yes")
        assert.deepStrictEqual(JSON.parse(got.body), { method: "GET", path: "/health?x=1", body: "" })
        const posted = yield* client.request({
          method: "POST",
          path: "/generate",
          headers: { "content-type": "application/json", "x-custom": "c" },
          body: new TextEncoder().encode('{"text":"é"}')
        })
        assert.deepStrictEqual(JSON.parse(posted.body), {
          method: "POST",
          path: "/generate",
          body: '{"text":"é"}',
          custom: "c"
        })
        const missing = yield* client.request({ method: "GET", path: "/missing" })
        assert.strictEqual(missing.status, 404)
      })
    )
  )

  it.live("keep-alive: sequential requests reuse one forwarded channel", () =>
    withServer(echo, (conn, forwards) =>
      Effect.gen(function* () {
        const client = yield* HttpClient.make(conn, { port: PORT })
        for (let i = 0; i < 5; i++) {
          const response = yield* client.request({ method: "GET", path: `/n/${i}` })
          assert.strictEqual(JSON.parse(response.body).path, `/n/${i}`)
        }
        assert.strictEqual(forwards.opened, 1)
        // a streamed body read to its end hands the channel back too
        const streamed = yield* Effect.scoped(
          Effect.flatMap(client.stream({ method: "GET", path: "/s" }), (r) => Stream.runCollect(r.body))
        )
        assert.isAbove(Chunk.size(streamed), 0)
        yield* client.request({ method: "GET", path: "/after" })
        assert.strictEqual(forwards.opened, 1)
        assert.strictEqual(forwards.open, 1, "the idle channel stays open")
      })
    )
  )

  it.live("a response with Connection: close is not reused; the next request opens a new channel", () =>
    withServer(
      (req) =>
        Effect.succeed({
          status: 200,
          body: req.path,
          headers: req.path === "/last" ? { connection: "close" } : {}
        }),
      (conn, forwards) =>
        Effect.gen(function* () {
          const client = yield* HttpClient.make(conn, { port: PORT })
          assert.strictEqual((yield* client.request({ method: "GET", path: "/last" })).body, "/last")
          assert.strictEqual((yield* client.request({ method: "GET", path: "/next" })).body, "/next")
          assert.strictEqual(forwards.opened, 2)
          assert.strictEqual(forwards.open, 1)
        })
    )
  )

  it.live("concurrency is bounded by maxChannels: more requests wait, all succeed", () => {
    let running = 0
    let maxRunning = 0
    const slow: FakeHost.HttpHandler = (req) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          running++
          maxRunning = Math.max(maxRunning, running)
        }),
        () => Effect.as(Effect.sleep("150 millis"), { status: 200, body: req.path }),
        () =>
          Effect.sync(() => {
            running--
          })
      )
    return withServer(slow, (conn, forwards) =>
      Effect.gen(function* () {
        const client = yield* HttpClient.make(conn, { port: PORT, maxChannels: 3 })
        const bodies = yield* Effect.forEach(
          Array.from({ length: 10 }, (_, i) => i),
          (i) => Effect.map(client.request({ method: "GET", path: `/r/${i}` }), (r) => r.body),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(
          bodies,
          Array.from({ length: 10 }, (_, i) => `/r/${i}`)
        )
        assert.strictEqual(maxRunning, 3, "three at a time on the server")
        assert.strictEqual(forwards.maxOpen, 3)
        assert.strictEqual(forwards.opened, 3, "and the three channels were reused")
      })
    )
  })

  it.live("a closed port fails with ForwardFailed (not midRequest); so does Tunnel.request", () =>
    withServer(echo, (conn) =>
      Effect.gen(function* () {
        const client = yield* HttpClient.make(conn, { port: PORT + 1 })
        const exit = yield* Effect.exit(client.request({ method: "GET", path: "/" }))
        assert.strictEqual(failureTag(exit), "ForwardFailed")
        const error = failureOf(exit)
        assert.isTrue(error?._tag === "ForwardFailed" && error.midRequest === undefined)
        const streamed = yield* Effect.exit(Effect.scoped(client.stream({ method: "GET", path: "/" })))
        assert.strictEqual(failureTag(streamed), "ForwardFailed")
        const viaTunnel = yield* Effect.exit(
          Tunnel.request(conn, { port: PORT + 1, method: "GET", path: "/" })
        )
        assert.strictEqual(failureTag(viaTunnel), "ForwardFailed")
        // the forward target: the fake host has nothing behind it
        const behind = yield* HttpClient.make(conn, { port: PORT, target: "node-9" })
        assert.strictEqual(behind.target, "node-9")
        assert.strictEqual(
          failureTag(yield* Effect.exit(behind.request({ method: "GET", path: "/" }))),
          "ForwardFailed"
        )
      })
    )
  )

  it.live(
    "a handler slower than the timeout: TunnelTimeout, its channel closed, the client still works",
    () =>
      withServer(
        (req) =>
          req.path === "/slow"
            ? Effect.as(Effect.sleep("2 seconds"), { status: 200, body: "late" })
            : Effect.succeed({ status: 200, body: "quick" }),
        (conn, forwards) =>
          Effect.gen(function* () {
            const client = yield* HttpClient.make(conn, { port: PORT, maxChannels: 1 })
            const started = Date.now()
            const exit = yield* Effect.exit(
              client.request({ method: "GET", path: "/slow", timeout: "200 millis" })
            )
            assert.strictEqual(failureTag(exit), "TunnelTimeout")
            const error = failureOf(exit)
            assert.isTrue(
              error?._tag === "TunnelTimeout" && error.timeoutMs === 200 && error.path === "/slow"
            )
            assert.isBelow(Date.now() - started, 1500)
            assert.strictEqual(forwards.open, 0, "the timed-out channel is closed")
            // its permit is back: the one channel serves the next request
            assert.strictEqual((yield* client.request({ method: "GET", path: "/quick" })).body, "quick")
            // stream(): the timeout covers the head
            const head = yield* Effect.exit(
              Effect.scoped(client.stream({ method: "GET", path: "/slow", timeout: "200 millis" }))
            )
            assert.strictEqual(failureTag(head), "TunnelTimeout")
            const viaTunnel = yield* Effect.exit(
              Tunnel.request(conn, { port: PORT, method: "GET", path: "/slow", timeout: "200 millis" })
            )
            assert.strictEqual(failureTag(viaTunnel), "TunnelTimeout")
          })
      )
  )

  it.live("stream: a body left unread closes its channel with the scope; the permit is back", () =>
    withServer(echo, (conn, forwards) =>
      Effect.gen(function* () {
        const client = yield* HttpClient.make(conn, { port: PORT, maxChannels: 1 })
        const scope = yield* Scope.make()
        const response = yield* client.stream({ method: "GET", path: "/unread" }).pipe(Scope.extend(scope))
        assert.strictEqual(response.status, 200)
        assert.strictEqual(forwards.open, 1)
        yield* Scope.close(scope, Exit.void)
        assert.strictEqual(forwards.open, 0)
        const body = yield* Stream.runCollect(response.body).pipe(Effect.exit)
        assert.strictEqual(failureTag(body), "ForwardFailed", "a body read after its scope closed")
        assert.strictEqual((yield* client.request({ method: "GET", path: "/again" })).status, 200)
      })
    )
  )

  it.live("the client's scope closes its channels; a request after it fails", () =>
    withServer(echo, (conn, forwards) =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const client = yield* HttpClient.make(conn, { port: PORT }).pipe(Scope.extend(scope))
        yield* Effect.forEach([1, 2, 3], (i) => client.request({ method: "GET", path: `/${i}` }), {
          concurrency: "unbounded"
        })
        assert.strictEqual(forwards.open, 3)
        yield* Scope.close(scope, Exit.void)
        assert.strictEqual(forwards.open, 0)
        const late = yield* Effect.exit(client.request({ method: "GET", path: "/late" }))
        assert.strictEqual(failureTag(late), "ForwardFailed")
      })
    )
  )
})

describe("serverSentEvents", () => {
  const bytes = (...parts: ReadonlyArray<string>) =>
    Stream.fromIterable(parts.map((part) => new TextEncoder().encode(part)))

  it.effect("data payloads in order, across chunk boundaries, [DONE] included", () =>
    Effect.gen(function* () {
      const events = yield* Stream.runCollect(
        HttpClient.serverSentEvents(
          bytes(
            ': keep-alive comment\n\ndata: {"i":0}\n\nda',
            'ta: {"i":1}\r\n\r\nevent: x\nid: 3\ndata: first\ndata:second\n\n',
            "data: [DONE]\n\n"
          )
        )
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(events), ['{"i":0}', '{"i":1}', "first\nsecond", "[DONE]"])
    })
  )

  it.effect("multi-byte characters split between chunks; a last event without its blank line", () =>
    Effect.gen(function* () {
      const encoded = new TextEncoder().encode("data: é\n\ndata: [DONE]")
      const body = Stream.fromIterable([encoded.slice(0, 7), encoded.slice(7)])
      const events = yield* Stream.runCollect(HttpClient.serverSentEvents(body))
      assert.deepStrictEqual(Chunk.toReadonlyArray(events), ["é", "[DONE]"])
    })
  )

  it.effect("the body's failure passes through", () =>
    Effect.gen(function* () {
      const body = Stream.concat(bytes("data: a\n\n"), Stream.fail("cut" as const))
      const exit = yield* Effect.exit(Stream.runCollect(HttpClient.serverSentEvents(body)))
      assert.isTrue(Exit.isFailure(exit) && failureOf(exit) === "cut")
    })
  )
})
