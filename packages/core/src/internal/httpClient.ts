/**
 * HTTP/1.1 over a connection's forwards. A client keeps a small pool of channels, each a
 * `Connection.forward` duplex in a scope of its own (a child of the client's scope), and uses
 * node:http as the codec on them: every request is a `ClientRequest` whose `createConnection`
 * hands over the channel it leased, with `Connection: keep-alive`. node:http emits `free` on
 * the channel once a kept-alive exchange is over; only such a channel goes back to the idle
 * list, any other is closed.
 *
 * A lease is a permit of the client's semaphore plus the channel it uses: an idle channel
 * exists only while a permit is free, so leased + idle channels never exceed `maxChannels`.
 *
 * @internal
 */

import * as Http from "node:http"
import type * as Net from "node:net"
import type { Duplex } from "node:stream"
import { Chunk, Duration, Effect, ExecutionStrategy, Exit, Option, Runtime, Scope, Stream } from "effect"
import type { Connection } from "../Connection.js"
import { type ConnectError, ForwardFailed } from "../Errors.js"
import type { HttpClient, HttpError, HttpRequest, HttpResponse, StreamedResponse } from "../HttpClient.js"
import { TunnelTimeout } from "./httpErrors.js"

const DEFAULT_TIMEOUT = Duration.seconds(30)
const DEFAULT_MAX_CHANNELS = 4

/** Methods a request may be sent again for when a reused channel turns out to be closed. */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"])

interface Channel {
  readonly socket: Duplex
  readonly scope: Scope.CloseableScope
  /** False once the far end ended it, it errored or it closed. */
  alive: boolean
}

/** One request on one channel, as node:http reports it. */
interface Exchange {
  readonly req: Http.ClientRequest
  res: Http.IncomingMessage | undefined
  failure: Error | undefined
  /** node:http freed the channel: the response was read to its end and both sides keep it alive. */
  freed: boolean
  /** Called on every head / failure event (set while someone waits for the head). */
  wake: (() => void) | undefined
  readonly onFree: () => void
}

interface Lease {
  permit: boolean
  channel: Channel | undefined
  /** The channel came from the idle list. */
  reused: boolean
  exchange: Exchange | undefined
  released: boolean
}

const noop = () => {}

const flattenHeaders = (headers: Http.IncomingHttpHeaders): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

const bytesOf = (body: string | Uint8Array): Buffer =>
  typeof body === "string"
    ? Buffer.from(body, "utf8")
    : Buffer.from(body.buffer, body.byteOffset, body.byteLength)

/** Resumes after node's pending `process.nextTick`s (where it frees a kept-alive socket). */
const nextTurn = Effect.async<void>((resume) => {
  setImmediate(() => resume(Effect.void))
})

/** A response body as a Stream, read with backpressure; fails when the message breaks off. */
const readBody = (
  res: Http.IncomingMessage,
  broken: (reason: string) => ForwardFailed
): Stream.Stream<Uint8Array, ForwardFailed> =>
  Stream.suspend(() => {
    if (res.readableEnded) return Stream.empty
    if (res.destroyed) {
      return Stream.fail(broken("the response was discarded (its scope closed) before its body was read"))
    }
    let ended = false
    let failure: ForwardFailed | undefined
    let signalled = false
    let wake: (() => void) | undefined
    const signal = () => {
      signalled = true
      const waiting = wake
      wake = undefined
      waiting?.()
    }
    const onEnd = () => {
      ended = true
      signal()
    }
    const onError = (error: Error) => {
      failure ??= broken(`the response broke off: ${error.message}`)
      signal()
    }
    const onClose = () => {
      if (!ended) failure ??= broken("the channel closed before the response ended")
      signal()
    }
    res.on("readable", signal)
    res.on("end", onEnd)
    res.on("error", onError)
    res.on("close", onClose)
    const waitForEvent = Effect.async<void>((resume) => {
      if (signalled) return resume(Effect.void)
      wake = () => resume(Effect.void)
      return Effect.sync(() => {
        wake = undefined
      })
    })
    const pull = (): Effect.Effect<Chunk.Chunk<Uint8Array>, Option.Option<ForwardFailed>> =>
      Effect.suspend(() => {
        signalled = false
        const chunks: Array<Uint8Array> = []
        for (let chunk = res.read() as Buffer | null; chunk !== null; chunk = res.read() as Buffer | null) {
          chunks.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
        }
        if (chunks.length > 0) return Effect.succeed(Chunk.unsafeFromArray(chunks))
        if (failure !== undefined) return Effect.fail(Option.some(failure))
        if (ended) return Effect.fail(Option.none())
        return Effect.zipRight(waitForEvent, Effect.suspend(pull))
      })
    return Stream.repeatEffectChunkOption(Effect.suspend(pull)).pipe(
      Stream.ensuring(
        Effect.sync(() => {
          res.off("readable", signal)
          res.off("end", onEnd)
          res.off("error", onError)
          res.off("close", onClose)
          if (!ended) res.destroy()
        })
      )
    )
  })

/** @internal */
export const make = (
  conn: Connection,
  options: {
    readonly port: number
    readonly target?: string | undefined
    readonly maxChannels?: number | undefined
  }
): Effect.Effect<HttpClient, never, Scope.Scope> =>
  Effect.gen(function* () {
    const host = conn.host.alias
    const { port, target } = options
    const maxChannels = Math.max(1, Math.floor(options.maxChannels ?? DEFAULT_MAX_CHANNELS))
    const runtime = yield* Effect.runtime<never>()
    const clientScope = yield* Effect.scope
    const permits = yield* Effect.makeSemaphore(maxChannels)
    const idle: Array<Channel> = []
    let open = true
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        open = false
        idle.length = 0
      })
    )

    const broken = (reason: string) => new ForwardFailed({ host, port, reason, midRequest: true })
    const closeChannel = (channel: Channel) =>
      Effect.suspend(() => {
        channel.alive = false
        return Scope.close(channel.scope, Exit.void)
      })

    /** Open a channel and put it in the lease, atomically with its success. */
    const openChannel = (lease: Lease): Effect.Effect<void, ForwardFailed | ConnectError> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          const scope = yield* Scope.fork(clientScope, ExecutionStrategy.sequential)
          // disconnected: a timeout does not wait for an opening forward (its acquisition is
          // uninterruptible); one that opens late is released at once by the closed scope
          const socket = yield* restore(
            Effect.disconnect(Scope.extend(conn.forward(port, target), scope))
          ).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
          const channel: Channel = { socket, scope, alive: true }
          const dead = () => {
            if (!channel.alive) return
            channel.alive = false
            const at = idle.indexOf(channel)
            if (at >= 0) {
              idle.splice(at, 1)
              Runtime.runFork(runtime)(Scope.close(scope, Exit.void))
            }
          }
          // also keeps an idle channel's error from being unhandled
          socket.on("error", dead)
          socket.once("end", dead)
          socket.once("close", dead)
          lease.channel = channel
          lease.reused = false
        })
      )

    const acquireChannel = (lease: Lease): Effect.Effect<void, ForwardFailed | ConnectError> =>
      Effect.suspend(() => {
        if (!open) return Effect.fail(new ForwardFailed({ host, port, reason: "the HTTP client was closed" }))
        const stale: Array<Channel> = []
        for (let channel = idle.pop(); channel !== undefined; channel = idle.pop()) {
          if (channel.alive && !channel.socket.destroyed) {
            lease.channel = channel
            lease.reused = true
            break
          }
          stale.push(channel)
        }
        const cleanup = Effect.forEach(stale, closeChannel, { discard: true })
        return lease.channel === undefined ? Effect.zipRight(cleanup, openChannel(lease)) : cleanup
      })

    /** Send the request on the lease's channel (synchronously: node:http queues the bytes). */
    const begin = (channel: Channel, request: HttpRequest): Exchange => {
      const req = Http.request({
        method: request.method,
        path: request.path,
        host: target ?? "127.0.0.1",
        port,
        headers: { connection: "keep-alive", ...request.headers },
        createConnection: () => channel.socket as Net.Socket
      })
      const exchange: Exchange = {
        req,
        res: undefined,
        failure: undefined,
        freed: false,
        wake: undefined,
        onFree: () => {
          exchange.freed = true
        }
      }
      channel.socket.once("free", exchange.onFree)
      req.once("response", (res: Http.IncomingMessage) => {
        res.on("error", noop)
        exchange.res = res
        exchange.wake?.()
      })
      req.on("error", (error: Error) => {
        exchange.failure ??= error
        exchange.wake?.()
      })
      req.end(request.body === undefined ? undefined : bytesOf(request.body))
      return exchange
    }

    const awaitHead = (exchange: Exchange) =>
      Effect.async<Http.IncomingMessage, ForwardFailed>((resume) => {
        const check = () => {
          if (exchange.res !== undefined) {
            exchange.wake = undefined
            resume(Effect.succeed(exchange.res))
          } else if (exchange.failure !== undefined) {
            exchange.wake = undefined
            resume(Effect.fail(broken(`no response: ${exchange.failure.message}`)))
          }
        }
        exchange.wake = check
        check()
        return Effect.sync(() => {
          exchange.wake = undefined
        })
      })

    const attempt = (lease: Lease, request: HttpRequest) =>
      Effect.suspend(() => {
        lease.exchange = begin(lease.channel!, request)
        return awaitHead(lease.exchange)
      })

    /** Give the lease's channel back to the idle list when node:http freed it, else close it. */
    const settle = (lease: Lease): Effect.Effect<void> =>
      Effect.uninterruptible(
        Effect.suspend(() => {
          const { channel, exchange } = lease
          lease.channel = undefined
          lease.exchange = undefined
          if (channel === undefined) return Effect.void
          const finish = Effect.suspend(() => {
            if (exchange !== undefined) channel.socket.off("free", exchange.onFree)
            const reusable =
              open && channel.alive && !channel.socket.destroyed && (exchange === undefined || exchange.freed)
            if (reusable) {
              idle.push(channel)
              return Effect.void
            }
            // the unread rest of a body goes too: it is not readable after its scope
            exchange?.res?.destroy()
            exchange?.req.destroy()
            return closeChannel(channel)
          })
          const freeing =
            exchange !== undefined &&
            !exchange.freed &&
            exchange.req.shouldKeepAlive &&
            exchange.res?.readableEnded === true
          return freeing ? Effect.zipRight(nextTurn, finish) : finish
        })
      )

    const release = (lease: Lease): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (lease.released) return Effect.void
        lease.released = true
        return Effect.ensuring(
          settle(lease),
          Effect.suspend(() => (lease.permit ? permits.release(1) : Effect.void))
        )
      })

    const send = (lease: Lease, request: HttpRequest): Effect.Effect<Http.IncomingMessage, HttpError> =>
      Effect.gen(function* () {
        yield* Effect.uninterruptibleMask((restore) =>
          Effect.tap(restore(permits.take(1)), () => {
            lease.permit = true
          })
        )
        yield* acquireChannel(lease)
        return yield* attempt(lease, request).pipe(
          Effect.catchAll((error) =>
            // a kept-alive channel the server closed meanwhile: once more on a fresh one
            lease.reused && IDEMPOTENT.has(request.method.toUpperCase())
              ? settle(lease).pipe(
                  Effect.zipRight(openChannel(lease)),
                  Effect.zipRight(attempt(lease, request))
                )
              : Effect.fail(error)
          )
        )
      })

    const timeoutOf = (request: HttpRequest) => Duration.decode(request.timeout ?? DEFAULT_TIMEOUT)
    const timed =
      (request: HttpRequest) =>
      <A, E, R>(effect: Effect.Effect<A, E, R>) => {
        const timeout = timeoutOf(request)
        return Effect.timeoutFail(effect, {
          duration: timeout,
          onTimeout: () =>
            new TunnelTimeout({ host, port, path: request.path, timeoutMs: Duration.toMillis(timeout) })
        })
      }

    /** The head, with the lease released by the body's end or by the caller's scope. */
    const respond = (
      request: HttpRequest,
      headTimeout: boolean
    ): Effect.Effect<StreamedResponse, HttpError, Scope.Scope> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
          const lease: Lease = {
            permit: false,
            channel: undefined,
            reused: false,
            exchange: undefined,
            released: false
          }
          yield* Scope.addFinalizer(scope, release(lease))
          const sent = send(lease, request)
          const exit = yield* Effect.exit(restore(headTimeout ? timed(request)(sent) : sent))
          if (Exit.isFailure(exit)) {
            yield* Scope.close(scope, exit)
            return yield* Effect.failCause(exit.cause)
          }
          const res = exit.value
          return {
            status: res.statusCode ?? 0,
            headers: flattenHeaders(res.headers),
            body: readBody(res, broken).pipe(Stream.ensuring(release(lease)))
          } satisfies StreamedResponse
        })
      )

    const attributes = (request: HttpRequest) => ({ host, port, method: request.method, path: request.path })

    const stream = (request: HttpRequest) =>
      respond(request, true).pipe(Effect.withSpan("HttpClient.stream", { attributes: attributes(request) }))

    const request = (request: HttpRequest): Effect.Effect<HttpResponse, HttpError> =>
      Effect.scoped(
        Effect.flatMap(respond(request, false), (response) =>
          Effect.map(Stream.runCollect(response.body), (chunks) => ({
            status: response.status,
            headers: response.headers,
            body: new TextDecoder().decode(Buffer.concat(Chunk.toReadonlyArray(chunks)))
          }))
        )
      ).pipe(timed(request), Effect.withSpan("HttpClient.request", { attributes: attributes(request) }))

    return { port, target, request, stream } satisfies HttpClient
  })

/** @internal */
export const serverSentEvents = <E>(body: Stream.Stream<Uint8Array, E>): Stream.Stream<string, E> =>
  Stream.suspend(() => {
    let data: Array<string> | undefined
    const onLine = (line: string): ReadonlyArray<string> => {
      if (line === "") {
        const event = data === undefined ? [] : [data.join("\n")]
        data = undefined
        return event
      }
      if (line.startsWith(":")) return []
      const colon = line.indexOf(":")
      if ((colon < 0 ? line : line.slice(0, colon)) !== "data") return []
      const value = colon < 0 ? "" : line.slice(colon + 1)
      if (data === undefined) data = []
      data.push(value.startsWith(" ") ? value.slice(1) : value)
      return []
    }
    return body.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.mapConcat(onLine),
      // an event the body ended without its blank line still counts
      Stream.concat(Stream.suspend(() => (data === undefined ? Stream.empty : Stream.make(data.join("\n")))))
    )
  })
