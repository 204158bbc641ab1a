/**
 * The load of one benchmark level: `requests` streamed completions, `concurrency` at a time,
 * each timed from its send to its first token (TTFT), between its token chunks (ITL), to its
 * end (end-to-end) and per output token after the first (TPOT: (end-to-end − TTFT) / (tokens −
 * 1), which a chunk of several speculative tokens does not distort as ITL does), its output
 * tokens from the usage the server reports (else its chunks). A request has `timeout` in all
 * and `idleTimeout` between two events; past either it is an error of the level.
 *
 * @internal
 */
import * as HttpClient from "@mlops/core/HttpClient"
import { Clock, Data, Duration, Effect, Stream } from "effect"
import { tokenText } from "../../Readiness.js"

/** One request's figures (times in ms), or why it failed. */
export type RequestOutcome =
  | {
      readonly ok: true
      readonly ttftMs: number
      readonly itlMs: ReadonlyArray<number>
      readonly tpotMs: number | undefined
      readonly e2eMs: number
      readonly outputTokens: number
    }
  | { readonly ok: false; readonly error: string }

export interface LoadRequest {
  readonly model: string
  readonly prompts: ReadonlyArray<string>
  readonly outputTokens: number
  readonly headers: Readonly<Record<string, string>>
  /** The whole request, head and stream. */
  readonly timeout: Duration.DurationInput
  /** Between two events of its stream. */
  readonly idleTimeout: Duration.DurationInput
}

/** Why one request failed, for the level's `firstError`. */
class RequestFailed extends Data.TaggedError("RequestFailed")<{ readonly message: string }> {}

const nowMs = Effect.map(Clock.currentTimeNanos, (ns) => Number(ns) / 1e6)

const usageTokens = (data: string): number | undefined => {
  try {
    const n = (JSON.parse(data) as { usage?: { completion_tokens?: unknown } }).usage?.completion_tokens
    return typeof n === "number" ? n : undefined
  } catch {
    return undefined
  }
}

/** One streamed completion, timed. */
export const one = (
  client: HttpClient.HttpClient,
  request: LoadRequest,
  prompt: string
): Effect.Effect<RequestOutcome> =>
  Effect.scoped(
    Effect.gen(function* () {
      const start = yield* nowMs
      const answer = yield* client.stream({
        method: "POST",
        path: "/v1/completions",
        timeout: request.timeout,
        headers: { ...request.headers, "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({
          model: request.model,
          prompt,
          max_tokens: request.outputTokens,
          temperature: 0,
          // every token asked for, whatever the model would say (both engines take it)
          ignore_eos: true,
          stream: true,
          stream_options: { include_usage: true }
        })
      })
      if (answer.status !== 200) {
        const body = yield* answer.body.pipe(Stream.take(4), Stream.runCollect)
        const text = Buffer.concat([...body].map((c) => Buffer.from(c)))
          .toString("utf8")
          .slice(0, 300)
        return { ok: false, error: `HTTP ${answer.status}: ${text}` } as const
      }
      let first: number | undefined
      let last = 0
      let chunks = 0
      let usage: number | undefined
      const itl: Array<number> = []
      yield* HttpClient.serverSentEvents(answer.body).pipe(
        Stream.timeoutFail(
          () =>
            new RequestFailed({
              message: `no event for ${Duration.format(request.idleTimeout)} (the server stopped streaming)`
            }),
          request.idleTimeout
        ),
        Stream.runForEach((data) =>
          Effect.map(nowMs, (t) => {
            usage = usageTokens(data) ?? usage
            if (tokenText(data) === "") return
            chunks++
            if (first === undefined) first = t
            else itl.push(t - last)
            last = t
          })
        )
      )
      const end = yield* nowMs
      if (first === undefined) return { ok: false, error: "the stream ended without a token" } as const
      const tokens = usage ?? chunks
      return {
        ok: true,
        ttftMs: first - start,
        itlMs: itl,
        tpotMs: tokens > 1 ? (end - first) / (tokens - 1) : undefined,
        e2eMs: end - start,
        outputTokens: tokens
      } as const
    })
  ).pipe(
    // head and stream together within the request's budget
    Effect.timeoutFail({
      duration: request.timeout,
      onTimeout: () =>
        new RequestFailed({ message: `no end of the request within ${Duration.format(request.timeout)}` })
    }),
    Effect.catchAll((e) => Effect.succeed({ ok: false, error: e.message } as const))
  )

/** `count` requests, `concurrency` at a time; the outcomes and the level's wall time. */
export const level = (
  client: HttpClient.HttpClient,
  request: LoadRequest,
  count: number,
  concurrency: number
): Effect.Effect<{ readonly outcomes: ReadonlyArray<RequestOutcome>; readonly wallMs: number }> =>
  Effect.gen(function* () {
    const start = yield* nowMs
    const outcomes = yield* Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) => one(client, request, request.prompts[i % request.prompts.length]!),
      { concurrency }
    )
    return { outcomes, wallMs: (yield* nowMs) - start }
  })

const vocabulary = [
  "river",
  "stone",
  "market",
  "orbit",
  "lantern",
  "meadow",
  "engine",
  "harbor",
  "violet",
  "signal",
  "canyon",
  "pepper",
  "glacier",
  "circuit",
  "falcon",
  "thread",
  "marble",
  "summit",
  "tunnel",
  "copper"
]

/**
 * `count` synthetic prompts of about `words` words each (one token per word, roughly), each
 * different from its first word on so no server answers one from another's prefix cache.
 */
export const syntheticPrompts = (count: number, words: number): ReadonlyArray<string> =>
  Array.from({ length: count }, (_, i) => {
    // a small linear congruential sequence per prompt: fixed, so runs compare
    let state = (i + 1) * 2654435761
    const out = [`#${i}`]
    for (let w = 1; w < Math.max(1, words); w++) {
      state = (state * 1103515245 + 12345) % 2147483648
      out.push(vocabulary[state % vocabulary.length]!)
    }
    return out.join(" ")
  })
