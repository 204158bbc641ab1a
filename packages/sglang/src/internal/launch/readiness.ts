/**
 * Readiness beyond the log line: `/health` must answer 200 through the tunnel (retried, since
 * SGLang answers 503 until warmup ends), one short `/generate` must produce tokens, and
 * `/v1/models` must list the model. "Port open" or `/v1/models` alone is not readiness.
 *
 * It has a budget of its own (bounded by what is left of the launch's cap), and every request
 * goes through the launch's session, so a dropped connection is replaced and the checks go
 * on. With `--api-key`, the requests that need it carry it (`/health` never does: SGLang
 * exempts it).
 *
 * @internal
 */

import { Tunnel } from "@mlops/core"
import type { Connection } from "@mlops/core/Connection"
import { Clock, Duration, Effect, Schedule } from "effect"
import type { Session } from "./session.js"
import { LaunchTimedOut, NotHealthy } from "./types.js"

/** One `GET /health` through the tunnel: 200 or not (any error, timeout included, is "no"). */
export const isHealthy = (conn: Connection, port: number, timeout: Duration.DurationInput) =>
  Tunnel.request(conn, { port, method: "GET", path: "/health", timeout }).pipe(
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
    readonly startedAt: number
    readonly budget: Duration.Duration
    /** The launch's overall cap (ms), for the error when it is what ran out. */
    readonly overallMs: number
    readonly apiKey: string | undefined
    readonly report: (endpoint: string, status: number, elapsedMs: number) => Effect.Effect<void>
  }
) {
  const host = session.alias
  const auth = o.apiKey === undefined ? {} : { authorization: `Bearer ${o.apiKey}` }
  const call = (method: string, path: string, body?: string) =>
    Effect.gen(function* () {
      const response = yield* session.run((conn) =>
        Tunnel.request(conn, {
          port: o.port,
          method,
          path,
          timeout: "30 seconds",
          headers: {
            ...(path === "/health" ? {} : auth),
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

  const checks = Effect.gen(function* () {
    yield* call("GET", "/health").pipe(
      Effect.filterOrFail(
        (r) => r.status === 200,
        (r) => unhealthy("GET /health", r.status, "the server is not up yet (503 while starting)")
      ),
      Effect.retry({ schedule: Schedule.spaced("500 millis") })
    )
    const generated = yield* call(
      "POST",
      "/generate",
      JSON.stringify({
        text: "The capital city of France is",
        sampling_params: { max_new_tokens: 1, temperature: 0 }
      })
    )
    if (generated.status !== 200) {
      return yield* unhealthy("POST /generate", generated.status, generated.body.slice(0, 200))
    }
    const models = yield* call("GET", "/v1/models")
    if (models.status !== 200 || !models.body.includes('"data"')) {
      return yield* unhealthy("GET /v1/models", models.status, models.body.slice(0, 200))
    }
  })

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
