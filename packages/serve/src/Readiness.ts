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
import { Clock, Duration, Effect, Option, Schedule, Stream } from "effect"
import type { ReadinessRequest } from "./Engine.js"
import { LaunchTimedOut, NotHealthy } from "./internal/launch/types.js"

/** What readiness sends its requests with: core's `HttpClient`, or one that goes through a launch's reconnecting session. @category models */
export interface Requester<E, R> {
  readonly request: (request: HttpClient.HttpRequest) => Effect.Effect<HttpClient.HttpResponse, E, R>
  /**
   * The first server-sent event of the answer that `until` accepts (`event` undefined: the stream
   * ended first); a non-200 answer's body instead.
   */
  readonly firstEvent: (
    request: HttpClient.HttpRequest,
    until: (data: string) => boolean
  ) => Effect.Effect<FirstEvent, E, R>
}

/** @category models */
export interface FirstEvent {
  readonly status: number
  readonly event: string | undefined
  /** A non-200 answer's body (its first 2 KiB). */
  readonly body: string
}

/** `firstEvent` with core's `HttpClient`, for a client made in `scope`. @category constructors */
export const firstEventOf =
  (client: HttpClient.HttpClient) =>
  (
    request: HttpClient.HttpRequest,
    until: (data: string) => boolean
  ): Effect.Effect<FirstEvent, HttpClient.HttpError> =>
    Effect.scoped(
      Effect.gen(function* () {
        const answer = yield* client.stream(request)
        if (answer.status !== 200) {
          const chunks = yield* answer.body.pipe(Stream.take(4), Stream.runCollect)
          const text = Buffer.concat([...chunks].map((c) => Buffer.from(c)))
            .toString("utf8")
            .slice(0, 2048)
          return { status: answer.status, event: undefined, body: text }
        }
        const found = yield* HttpClient.serverSentEvents(answer.body).pipe(
          Stream.filter(until),
          Stream.runHead
        )
        return { status: 200, event: Option.getOrUndefined(found), body: "" }
      })
    )

/** The text of one streamed completion or chat event (`choices[0].text`, its delta's content or reasoning); "" for `[DONE]` and anything else. @category checks */
export const tokenText = (data: string): string => {
  if (data.trim() === "[DONE]") return ""
  try {
    const parsed: unknown = JSON.parse(data)
    const choice = (parsed as { choices?: ReadonlyArray<Record<string, unknown>> }).choices?.[0]
    if (choice === undefined) return ""
    const delta = (choice.delta ?? {}) as Record<string, unknown>
    for (const value of [choice.text, delta.content, delta.reasoning_content, delta.reasoning])
      if (typeof value === "string" && value !== "") return value
    return ""
  } catch {
    return ""
  }
}

/** A short streamed completion of `model`: the request that ends readiness, and status's canary. */
const streamedCompletion = (
  model: string,
  timeout: Duration.DurationInput,
  headers: Readonly<Record<string, string>>
): HttpClient.HttpRequest => ({
  method: "POST",
  path: "/v1/completions",
  timeout,
  headers: { ...headers, "content-type": "application/json", accept: "text/event-stream" },
  body: JSON.stringify({
    model,
    prompt: "The capital city of France is",
    max_tokens: 8,
    temperature: 0,
    stream: true
  })
})

/** The streamed request that ends readiness: a short completion of the model `/v1/models` lists. @category checks */
export const FIRST_TOKEN_ENDPOINT = "POST /v1/completions (stream)"

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
    Effect.flatMap(HttpClient.make(conn, { port, target: address }), (client) =>
      isHealthy({ request: client.request, firstEvent: firstEventOf(client) }, timeout)
    )
  )

/**
 * A canary on a running server: one streamed token of the model `/v1/models` lists, within
 * `timeout` (its `/health` can answer 200 while generation hangs). `undefined` when it cannot be
 * told: a server behind an API key status does not hold, or no model listed.
 *
 * @category checks
 */
export const generatesAt = (
  conn: Connection,
  port: number,
  address: string,
  timeout: Duration.DurationInput
): Effect.Effect<boolean | undefined> =>
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* HttpClient.make(conn, { port, target: address })
      const models = yield* client.request({ method: "GET", path: "/v1/models", timeout })
      const model = models.status === 200 ? modelIdOf(models.body) : undefined
      if (model === undefined) return undefined
      const answer = yield* firstEventOf(client)(
        streamedCompletion(model, timeout, {}),
        (data) => tokenText(data) !== ""
      )
      return answer.status === 200 && answer.event !== undefined
    }).pipe(
      Effect.timeoutTo({
        duration: timeout,
        onSuccess: (r): boolean | undefined => r,
        onTimeout: (): boolean | undefined => false
      }),
      // a request that could not be made (a forward refused, the connection gone) tells nothing
      // about generation: only no token in time, or a refusal, is "not generating"
      Effect.catchAll((error) => Effect.succeed(error._tag === "TunnelTimeout" ? false : undefined))
    )
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
        if (method === "GET" && path === "/v1/models" && response.status === 200) listed = response.body
        return response
      })
    const unhealthy = (endpoint: string, status: number | undefined, reason: string) =>
      new NotHealthy({ host, name: o.name, endpoint, reason, ...(status === undefined ? {} : { status }) })

    // the step being waited on, for the error when the budget runs out
    let waitingOn = "GET /health"
    // the model list the engine's own checks read (asked again only when they did not)
    let listed: string | undefined
    const checks = Effect.forEach(
      o.requests,
      (request) => {
        const endpoint = `${request.method} ${request.path}`
        waitingOn = endpoint
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

    // ready means it generates: one streamed token of the model the server lists (sparkrun's
    // readiness; /health can answer 200 while generation hangs)
    const firstToken = Effect.gen(function* () {
      waitingOn = "GET /v1/models"
      const models =
        listed === undefined ? yield* call("GET", "/v1/models", true) : { status: 200, body: listed }
      const model = modelIdOf(models.body)
      if (models.status !== 200 || model === undefined)
        return yield* unhealthy(
          "GET /v1/models",
          models.status,
          `no model listed: ${models.body.slice(0, 200)}`
        )
      waitingOn = FIRST_TOKEN_ENDPOINT
      // the token may take as long as the budget allows (the budget's timeout names the step)
      const answer = yield* client.firstEvent(
        streamedCompletion(model, o.budget, auth),
        (data) => tokenText(data) !== ""
      )
      const now = yield* Clock.currentTimeMillis
      yield* o.report(FIRST_TOKEN_ENDPOINT, answer.status, now - o.startedAt)
      if (answer.status !== 200)
        return yield* unhealthy(FIRST_TOKEN_ENDPOINT, answer.status, answer.body.slice(0, 200))
      if (answer.event === undefined)
        return yield* unhealthy(FIRST_TOKEN_ENDPOINT, 200, "the stream ended without a token")
    })

    const now = yield* Clock.currentTimeMillis
    const left = Math.max(0, o.deadline - now)
    const capped = left < Duration.toMillis(o.budget)
    yield* Effect.zipRight(checks, firstToken).pipe(
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
                waitingOn,
                undefined,
                `no ${waitingOn === FIRST_TOKEN_ENDPOINT ? "streamed token" : "healthy answer"} within ${Duration.format(o.budget)} of the ready line`
              )
      })
    )
  }).pipe(Effect.withSpan("Launch.readiness"))

/** The first model id of a `/v1/models` answer. @category checks */
export const modelIdOf = (body: string): string | undefined => {
  try {
    const parsed: unknown = JSON.parse(body)
    const data = typeof parsed === "object" && parsed !== null && "data" in parsed ? parsed.data : undefined
    const first: unknown = Array.isArray(data) ? data[0] : undefined
    const id = typeof first === "object" && first !== null && "id" in first ? first.id : undefined
    return typeof id === "string" && id !== "" ? id : undefined
  } catch {
    return undefined
  }
}

/** What readiness fails with besides its client's errors. @category models */
export type ReadinessError = NotHealthy | LaunchTimedOut
