/**
 * Readiness beyond the log line: `/health` must answer 200 through the tunnel (retried, since
 * SGLang answers 503 until warmup ends), one short `/generate` must produce tokens, and
 * `/v1/models` must list the model. "Port open" or `/v1/models` alone is not readiness.
 *
 * @internal
 */

import { Tunnel } from "@mlops/core"
import type { Connection } from "@mlops/core/Connection"
import { Clock, type Duration, Effect, Schedule } from "effect"
import { NotHealthy } from "./types.js"

/** One `GET /health` through the tunnel: 200 or not (any error, timeout included, is "no"). */
export const isHealthy = (conn: Connection, port: number, timeout: Duration.DurationInput) =>
  Tunnel.request(conn, { port, method: "GET", path: "/health", timeout }).pipe(
    Effect.map((r) => r.status === 200),
    Effect.orElseSucceed(() => false)
  )

export const check = Effect.fn("Launch.readiness")(function* (
  conn: Connection,
  o: {
    readonly name: string
    readonly port: number
    readonly startedAt: number
    readonly report: (endpoint: string, status: number, elapsedMs: number) => Effect.Effect<void>
  }
) {
  const host = conn.host.alias
  const call = (method: string, path: string, body?: string) =>
    Effect.gen(function* () {
      const response = yield* Tunnel.request(conn, {
        port: o.port,
        method,
        path,
        timeout: "30 seconds",
        ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } })
      })
      const now = yield* Clock.currentTimeMillis
      yield* o.report(`${method} ${path}`, response.status, now - o.startedAt)
      return response
    })
  const unhealthy = (endpoint: string, status: number | undefined, reason: string) =>
    new NotHealthy({ host, name: o.name, endpoint, reason, ...(status === undefined ? {} : { status }) })

  yield* call("GET", "/health").pipe(
    Effect.filterOrFail(
      (r) => r.status === 200,
      (r) => unhealthy("GET /health", r.status, "the server is not up yet (503 while starting)")
    ),
    Effect.retry({ schedule: Schedule.spaced("500 millis"), times: 60 })
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
