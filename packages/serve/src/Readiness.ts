/**
 * Readiness beyond the log line: the engine's requests (`Engine.readiness`), in order, each
 * passing before the next: typically `/health` 200 (retried: servers answer 503 until warmup
 * ends), the model listed by `/v1/models`, and one short generation producing tokens. "Port
 * open" or `/v1/models` alone is not readiness.
 *
 * It has a budget of its own (bounded by what is left of the launch's cap). The requests go
 * through the HTTP client it is given (core's `HttpClient` over the connection's forward: the
 * launch's client replaces a dropped connection and goes on; `status` uses a plain one). With
 * an API key, the requests marked `authorized` carry it.
 *
 * @since 0.1.0
 */

import type { Connection } from "@mlops/core/Connection"
import * as HttpClient from "@mlops/core/HttpClient"
import { Clock, Duration, Effect, Schedule } from "effect"
import type { ReadinessRequest } from "./Engine.js"
import { LaunchTimedOut, NotHealthy } from "./internal/launch/types.js"

/** What readiness sends its requests with: core's `HttpClient`, or one that goes through a launch's reconnecting session. @category models */
export interface Requester<E, R> {
  readonly request: (request: HttpClient.HttpRequest) => Effect.Effect<HttpClient.HttpResponse, E, R>
}

/** One `GET /health`: 200 or not (any error, timeout included, is "no"). @category checks */
export const isHealthy = <E, R>(
  client: Requester<E, R>,
  timeout: Duration.DurationInput
): Effect.Effect<boolean, never, R> =>
  client.request({ method: "GET", path: "/health", timeout }).pipe(
    Effect.map((r) => r.status === 200),
    Effect.orElseSucceed(() => false)
  )

/** One `GET /health` to `port` at `address` as the host reaches it (its loopback, a compute node). @category checks */
export const isHealthyAt = (
  conn: Connection,
  port: number,
  address: string,
  timeout: Duration.DurationInput
): Effect.Effect<boolean> =>
  Effect.scoped(
    Effect.flatMap(HttpClient.make(conn, { port, target: address }), (client) => isHealthy(client, timeout))
  )

/** Default budget from the ready line to all three checks passing. */
export const defaultBudget = Duration.minutes(2)

export const check = <E, R>(
  client: Requester<E, R>,
  o: {
    readonly host: string
    readonly name: string
    readonly startedAt: number
    /** Epoch ms of the launch's deadline. */
    readonly deadline: number
    readonly budget: Duration.Duration
    /** The launch's overall cap (ms), for the error when it is what ran out. */
    readonly overallMs: number
    readonly apiKey: string | undefined
    /** The engine's requests, in order (`Engine.readiness`). */
    readonly requests: ReadonlyArray<ReadinessRequest>
    readonly report: (endpoint: string, status: number, elapsedMs: number) => Effect.Effect<void>
  }
): Effect.Effect<void, E | ReadinessError, R> =>
  Effect.gen(function* () {
    const host = o.host
    const auth = o.apiKey === undefined ? {} : { authorization: `Bearer ${o.apiKey}` }
    const call = (method: string, path: string, authorized: boolean, body?: string) =>
      Effect.gen(function* () {
        const response = yield* client.request({
          method,
          path,
          timeout: "30 seconds",
          headers: {
            ...(authorized ? auth : {}),
            ...(body === undefined ? {} : { "content-type": "application/json" })
          },
          ...(body === undefined ? {} : { body })
        })
        const now = yield* Clock.currentTimeMillis
        yield* o.report(`${method} ${path}`, response.status, now - o.startedAt)
        return response
      })
    const unhealthy = (endpoint: string, status: number | undefined, reason: string) =>
      new NotHealthy({ host, name: o.name, endpoint, reason, ...(status === undefined ? {} : { status }) })

    const checks = Effect.forEach(
      o.requests,
      (request) => {
        const endpoint = `${request.method} ${request.path}`
        const once = call(request.method, request.path, request.authorized, request.body).pipe(
          Effect.filterOrFail(
            (r) => request.passes(r.status, r.body),
            (r) =>
              unhealthy(
                endpoint,
                r.status,
                r.status === 503 ? "the server is not up yet (503 while starting)" : r.body.slice(0, 200)
              )
          )
        )
        return request.retry ? Effect.retry(once, { schedule: Schedule.spaced("500 millis") }) : once
      },
      { discard: true }
    )

    const now = yield* Clock.currentTimeMillis
    const left = Math.max(0, o.deadline - now)
    const capped = left < Duration.toMillis(o.budget)
    yield* checks.pipe(
      Effect.timeoutFail({
        duration: capped ? Duration.millis(left) : o.budget,
        onTimeout: () =>
          capped
            ? new LaunchTimedOut({
                host,
                name: o.name,
                timeoutMs: o.overallMs,
                phase: "ready",
                fix: "the server printed its ready line but did not answer /health in time: look at its log, or raise overallTimeout"
              })
            : unhealthy(
                "GET /health",
                undefined,
                `no healthy answer within ${Duration.format(o.budget)} of the ready line`
              )
      })
    )
  }).pipe(Effect.withSpan("Launch.readiness"))

/** What readiness fails with besides its client's errors. @category models */
export type ReadinessError = NotHealthy | LaunchTimedOut
