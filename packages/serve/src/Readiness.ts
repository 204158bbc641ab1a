/**
 * Readiness beyond the log line: the engine's requests (`Engine.readiness`), in order, each
 * passing before the next: typically `/health` 200 (retried: servers answer 503 until warmup
 * ends), the model listed by `/v1/models`, and one short generation producing tokens. "Port
 * open" or `/v1/models` alone is not readiness.
 *
 * It has a budget of its own (bounded by what is left of the launch's cap), and every request
 * goes through the launch's session, so a dropped connection is replaced and the checks go
 * on. With an API key, the requests marked `authorized` carry it.
 *
 * @since 0.1.0
 */

import { Tunnel } from "@mlops/core"
import type { Connection } from "@mlops/core/Connection"
import { Clock, Duration, Effect, Schedule } from "effect"
import type { ReadinessRequest } from "./Engine.js"
import type { Session } from "./internal/launch/session.js"
import { LaunchTimedOut, NotHealthy } from "./internal/launch/types.js"

/** One `GET /health` through the tunnel: 200 or not (any error, timeout included, is "no"). */
export const isHealthy = (conn: Connection, port: number, timeout: Duration.DurationInput, target?: string) =>
  Tunnel.request(conn, {
    port,
    method: "GET",
    path: "/health",
    timeout,
    ...(target === undefined ? {} : { target })
  }).pipe(
    Effect.map((r) => r.status === 200),
    Effect.orElseSucceed(() => false)
  )

/** Default budget from the ready line to all three checks passing. */
export const defaultBudget = Duration.minutes(2)

export const check = Effect.fn("Launch.readiness")(function* (
  session: Session,
  o: {
    readonly name: string
    readonly port: number
    /** The machine the server listens on when it is not the host (a Slurm compute node); default the host. */
    readonly target?: string
    readonly startedAt: number
    readonly budget: Duration.Duration
    /** The launch's overall cap (ms), for the error when it is what ran out. */
    readonly overallMs: number
    readonly apiKey: string | undefined
    /** The engine's requests, in order (`Engine.readiness`). */
    readonly requests: ReadonlyArray<ReadinessRequest>
    readonly report: (endpoint: string, status: number, elapsedMs: number) => Effect.Effect<void>
  }
) {
  const host = session.alias
  const auth = o.apiKey === undefined ? {} : { authorization: `Bearer ${o.apiKey}` }
  const call = (method: string, path: string, authorized: boolean, body?: string) =>
    Effect.gen(function* () {
      const response = yield* session.run((conn) =>
        Tunnel.request(conn, {
          port: o.port,
          ...(o.target === undefined ? {} : { target: o.target }),
          method,
          path,
          timeout: "30 seconds",
          headers: {
            ...(authorized ? auth : {}),
            ...(body === undefined ? {} : { "content-type": "application/json" })
          },
          ...(body === undefined ? {} : { body })
        })
      )
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
  const left = Math.max(0, session.deadline - now)
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
})

/** What readiness can fail with. */
export type ReadinessError = Effect.Effect.Error<ReturnType<typeof check>>
