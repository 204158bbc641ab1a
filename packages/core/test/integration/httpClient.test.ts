/**
 * The HTTP client over real ssh forwards (direct-tcpip through the harness sshd) to a local
 * node:http server on 127.0.0.1 that streams server-sent events slowly and counts the sockets
 * sshd opens to it (one per forwarded channel).
 */
import * as http from "node:http"
import * as net from "node:net"
import type { Duplex } from "node:stream"
import { assert, layer } from "@effect/vitest"
import { Chunk, Effect, Exit, Fiber, Scope, Stream } from "effect"
import type { Connection } from "../../src/Connection.js"
import { makeConnection } from "../../src/ConnectionPool.js"
import * as HttpClient from "../../src/HttpClient.js"
import { failureOf, failureTag } from "../support/exits.js"
import * as Sshd from "../support/Sshd.js"

interface SseServer {
  readonly port: number
  /** Sockets open now. */
  readonly open: () => number
  /** The most sockets open at once. */
  readonly maxOpen: () => number
  /** Sockets accepted so far. */
  readonly accepted: () => number
}

/**
 * `GET /events?n=N&every=MS`: `data: {"i":0}` at once, then one more every MS until N were
 * sent, then `data: [DONE]` and the end (chunked).
 */
const sseServer = Effect.acquireRelease(
  Effect.async<http.Server & SseServer>((resume) => {
    const sockets = new Set<net.Socket>()
    let maxOpen = 0
    let accepted = 0
    const server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1")
      const count = Number(url.searchParams.get("n") ?? "10")
      const every = Number(url.searchParams.get("every") ?? "100")
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      let i = 0
      const send = () => {
        if (i < count) res.write(`data: {"i":${i++}}\n\n`)
        else {
          clearInterval(timer)
          res.end("data: [DONE]\n\n")
        }
      }
      const timer = setInterval(send, every)
      send()
      res.on("close", () => clearInterval(timer))
    })
    server.on("connection", (socket) => {
      accepted++
      sockets.add(socket)
      maxOpen = Math.max(maxOpen, sockets.size)
      socket.on("close", () => sockets.delete(socket))
    })
    server.listen(0, "127.0.0.1", () =>
      resume(
        Effect.succeed(
          Object.assign(server, {
            port: (server.address() as net.AddressInfo).port,
            open: () => sockets.size,
            maxOpen: () => maxOpen,
            accepted: () => accepted
          })
        )
      )
    )
  }),
  (server) =>
    Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
      server.closeAllConnections()
    })
)

/**
 * Answers `<method> <path> #<n on this socket>`, but drops the socket (no answer) on the
 * second request of every socket: a kept-alive connection the server closed meanwhile.
 */
const dropsSecondRequest = Effect.acquireRelease(
  Effect.async<http.Server & { readonly port: number }>((resume) => {
    const served = new WeakMap<net.Socket, number>()
    const server = http.createServer((req, res) => {
      const n = (served.get(req.socket) ?? 0) + 1
      served.set(req.socket, n)
      if (n === 2) return void req.socket.destroy()
      req.resume()
      req.on("end", () => res.end(`${req.method} ${req.url} #${n}`))
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed(Object.assign(server, { port: (server.address() as net.AddressInfo).port })))
    )
  }),
  (server) =>
    Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
      server.closeAllConnections()
    })
)

/** Forwards the client opened (and their duplexes), open now, and the most open at once. */
const counting = (conn: Connection) => {
  const forwards = { opened: 0, open: 0, maxOpen: 0, duplexes: [] as Array<Duplex> }
  const counted: Connection = {
    ...conn,
    forward: (port, target) =>
      Effect.tap(conn.forward(port, target), (duplex) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            forwards.duplexes.push(duplex)
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
  }
  return { conn: counted, forwards }
}

/** Poll until `check` holds; false after `timeoutMs`. */
const until = (check: () => boolean, timeoutMs: number) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    while (!check()) {
      if (Date.now() > deadline) return false
      yield* Effect.sleep("10 millis")
    }
    return true
  })

const expected = (n: number) => [...Array.from({ length: n }, (_, i) => `{"i":${i}}`), "[DONE]"]

layer(Sshd.layer(), { excludeTestServices: true, timeout: "30 seconds" })("live HTTP client", (it) => {
  const connect = Effect.flatMap(Sshd.TestSshd, (sshd) => makeConnection(sshd.hostConfig))

  it.scoped("a streamed body arrives as it is sent; serverSentEvents yields the payloads in order", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const server = yield* sseServer
      const client = yield* HttpClient.make(conn, { port: server.port })
      const started = Date.now()
      const response = yield* client.stream({ method: "GET", path: "/events?n=10&every=100" })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers["content-type"], "text/event-stream")
      const seen: Array<{ readonly payload: string; readonly atMs: number }> = []
      yield* HttpClient.serverSentEvents(response.body).pipe(
        Stream.runForEach((payload) => Effect.sync(() => seen.push({ payload, atMs: Date.now() - started })))
      )
      assert.deepStrictEqual(
        seen.map((s) => s.payload),
        expected(10)
      )
      const first = seen[0]!.atMs
      const last = seen.at(-1)!.atMs
      assert.isAtLeast(last - first, 800, `first at ${first} ms, last at ${last} ms: streamed, not buffered`)
      // the same endpoint read whole, on the channel the stream handed back
      const whole = yield* client.request({ method: "GET", path: "/events?n=3&every=20" })
      assert.strictEqual(
        whole.body,
        `${expected(3)
          .map((p) => `data: ${p}\n\n`)
          .join("")}`
      )
      assert.strictEqual(server.accepted(), 1, "one channel, kept alive")
    })
  )

  it.scoped(
    "16 concurrent streams over one client with maxChannels 4: all succeed, never more than 4 channels",
    () =>
      Effect.gen(function* () {
        const { conn, forwards } = counting(yield* connect)
        const server = yield* sseServer
        const client = yield* HttpClient.make(conn, { port: server.port, maxChannels: 4 })
        const results = yield* Effect.forEach(
          Array.from({ length: 16 }, (_, i) => i),
          () =>
            Effect.scoped(
              Effect.flatMap(client.stream({ method: "GET", path: "/events?n=3&every=50" }), (response) =>
                Stream.runCollect(HttpClient.serverSentEvents(response.body))
              )
            ),
          { concurrency: "unbounded" }
        )
        for (const events of results) assert.deepStrictEqual(Chunk.toReadonlyArray(events), expected(3))
        assert.isAtMost(server.maxOpen(), 4, "sockets open at once on the server")
        assert.isAtMost(forwards.maxOpen, 4, "forwards open at once in the client")
        assert.strictEqual(forwards.opened, 4, "the 4 channels were reused for the other 12")
        assert.strictEqual(server.accepted(), 4)
      })
  )

  it.scoped("an interrupted consumer or a scope closed mid-body leaves no socket open on the server", () =>
    Effect.gen(function* () {
      const { conn, forwards } = counting(yield* connect)
      const server = yield* sseServer
      const client = yield* HttpClient.make(conn, { port: server.port })
      const long = { method: "GET", path: "/events?n=1000&every=100" } as const

      // interrupting whoever reads the body
      let received = 0
      const reader = yield* Effect.fork(
        Effect.scoped(
          Effect.flatMap(client.stream(long), (response) =>
            Stream.runForEach(response.body, () =>
              Effect.sync(() => {
                received++
              })
            )
          )
        )
      )
      assert.isTrue(yield* until(() => received >= 2 && server.open() === 1, 5_000))
      yield* Fiber.interrupt(reader)
      assert.strictEqual(forwards.open, 0, "the client closed the channel at once")
      assert.isTrue(
        yield* until(() => server.open() === 0, 1_000),
        "the server's socket closed within a second"
      )

      // closing the scope of a body still being read: the reader fails, it does not hang
      const scope = yield* Scope.make()
      const response = yield* client.stream(long).pipe(Scope.extend(scope))
      const events: Array<string> = []
      const reading = yield* Effect.fork(
        HttpClient.serverSentEvents(response.body).pipe(
          Stream.runForEach((payload) => Effect.sync(() => events.push(payload))),
          Effect.exit
        )
      )
      assert.isTrue(yield* until(() => events.length >= 2, 5_000))
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(forwards.open, 0)
      assert.isTrue(
        yield* until(() => server.open() === 0, 1_000),
        "the server's socket closed within a second"
      )
      const read = yield* Fiber.join(reading).pipe(Effect.timeout("2 seconds"))
      const error = failureOf(read)
      assert.isTrue(error?._tag === "ForwardFailed" && error.midRequest === true, String(error))
      // and another stream can be read to its end early: the channel is closed at once
      const firstTwo = yield* Effect.scoped(
        Effect.flatMap(client.stream(long), (r) =>
          Stream.runCollect(HttpClient.serverSentEvents(r.body).pipe(Stream.take(2)))
        )
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(firstTwo), ['{"i":0}', '{"i":1}'])
      assert.strictEqual(forwards.open, 0)
      assert.isTrue(yield* until(() => server.open() === 0, 1_000))
      assert.strictEqual(server.accepted(), 3)
    })
  )

  it.scoped(
    "a kept-alive channel the server dropped: a GET goes again on a fresh channel, a POST fails",
    () =>
      Effect.gen(function* () {
        const { conn, forwards } = counting(yield* connect)
        const server = yield* dropsSecondRequest
        const client = yield* HttpClient.make(conn, { port: server.port, maxChannels: 1 })
        assert.strictEqual((yield* client.request({ method: "GET", path: "/a" })).body, "GET /a #1")
        assert.strictEqual((yield* client.request({ method: "GET", path: "/b" })).body, "GET /b #1")
        assert.strictEqual(forwards.opened, 2, "the second went again on a fresh channel")
        const posted = yield* Effect.exit(client.request({ method: "POST", path: "/c", body: "{}" }))
        const error = failureOf(posted)
        assert.isTrue(error?._tag === "ForwardFailed" && error.midRequest === true, String(error))
        assert.strictEqual(forwards.opened, 2, "a POST is not sent twice")
        assert.strictEqual((yield* client.request({ method: "POST", path: "/d" })).body, "POST /d #1")
      })
  )

  it.scoped("many requests on one kept-alive channel leave no listeners behind on it", () =>
    Effect.gen(function* () {
      const { conn, forwards } = counting(yield* connect)
      const server = yield* sseServer
      const client = yield* HttpClient.make(conn, { port: server.port, maxChannels: 1 })
      for (let i = 0; i < 30; i++) {
        const response = yield* client.request({ method: "POST", path: "/events?n=1&every=1", body: "x" })
        assert.strictEqual(response.status, 200)
      }
      assert.strictEqual(forwards.opened, 1)
      const [duplex] = forwards.duplexes
      for (const name of duplex!.eventNames()) {
        assert.isAtMost(duplex!.listenerCount(name), 3, `listeners for ${String(name)}`)
      }
    })
  )

  it.scoped("a connection cut mid-body fails the body stream with ForwardFailed midRequest, not a hang", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.TestSshd
      const conn = yield* connect
      const server = yield* sseServer
      const client = yield* HttpClient.make(conn, { port: server.port })
      const response = yield* client.stream({ method: "GET", path: "/events?n=1000&every=100" })
      const received: Array<string> = []
      const reader = yield* Effect.fork(
        HttpClient.serverSentEvents(response.body).pipe(
          Stream.runForEach((payload) => Effect.sync(() => received.push(payload))),
          Effect.exit
        )
      )
      assert.isTrue(yield* until(() => received.length >= 3, 5_000))
      yield* sshd.killSessionProcesses
      const exit = yield* Fiber.join(reader).pipe(Effect.timeout("5 seconds"))
      assert.strictEqual(failureTag(exit), "ForwardFailed")
      const error = failureOf(exit)
      assert.isTrue(error?._tag === "ForwardFailed" && error.midRequest === true, String(error))
      assert.deepStrictEqual(received.slice(0, 3), ['{"i":0}', '{"i":1}', '{"i":2}'])
      // the next request on the dead connection fails typed as well
      const after = yield* Effect.exit(
        client.request({ method: "GET", path: "/events?n=1", timeout: "5 seconds" })
      )
      assert.isTrue(Exit.isFailure(after))
      assert.notStrictEqual(failureTag(after), "Die")
    })
  )
})

/** Accepts and closes every connection at once, before any answer (another program holding the port). */
const hangsUp = Effect.acquireRelease(
  Effect.async<{ readonly port: number; readonly close: () => void }>((resume) => {
    const server = net.createServer((socket) => socket.end())
    server.listen(0, "127.0.0.1", () =>
      resume(
        Effect.succeed({
          port: (server.address() as net.AddressInfo).port,
          close: () => server.close()
        })
      )
    )
  }),
  (server) => Effect.sync(() => server.close())
)

layer(Sshd.layer(), { excludeTestServices: true, timeout: "60 seconds" })(
  "live HTTP client, a port whose holder hangs up",
  (it) => {
    it.scoped(
      "requests one after another each fail with ForwardFailed within their timeout, none hangs",
      () =>
        Effect.gen(function* () {
          const sshd = yield* Sshd.TestSshd
          const conn = yield* makeConnection(sshd.hostConfig)
          const holder = yield* hangsUp
          for (let i = 0; i < 4; i++) {
            const started = Date.now()
            const result = yield* Effect.scoped(
              Effect.flatMap(HttpClient.make(conn, { port: holder.port }), (client) =>
                client.request({ method: "GET", path: "/health", timeout: "2 seconds" })
              )
            ).pipe(Effect.either, Effect.timeout("8 seconds"), Effect.option)
            assert.isTrue(result._tag === "Some", `request ${i + 1} still waits after 8 s`)
            if (result._tag === "Some") assert.strictEqual(result.value._tag, "Left", `request ${i + 1}`)
            assert.isBelow(Date.now() - started, 8000)
          }
        })
    )
  }
)
