/**
 * The load of one benchmark level: `requests` streamed completions, `concurrency` at a time,
 * each timed from its send to its first token (TTFT), between its token chunks (ITL) and to
 * its end (end-to-end), its output tokens from the usage the server reports (else its chunks).
 *
 * @internal
 */
import * as HttpClient from "@mlops/core/HttpClient"
import { Clock, Duration, Effect, Stream } from "effect"
import { tokenText } from "../../Readiness.js"

/** One request's figures (times in ms), or why it failed. */
export type RequestOutcome =
  | {
      readonly ok: true
      readonly ttftMs: number
      readonly itlMs: ReadonlyArray<number>
      readonly e2eMs: number
      readonly outputTokens: number
    }
  | { readonly ok: false; readonly error: string }

export interface LoadRequest {
  readonly model: string
  readonly prompts: ReadonlyArray<string>
  readonly outputTokens: number
  readonly headers: Readonly<Record<string, string>>
  readonly timeout: Duration.DurationInput
}

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
        Stream.runForEach((data) =>
          Effect.map(nowMs, (t) => {
            usage = usageTokens(data) ?? usage
            if (tokenText(data) === "") return
            chunks++
            if (first === undefined) first = t
            else itl.push(t - last)
            last = t
          })
        ),
        Effect.timeoutFail({
          duration: request.timeout,
          onTimeout: () => new Error(`no end of the stream within ${Duration.format(request.timeout)}`)
        })
      )
      const end = yield* nowMs
      if (first === undefined) return { ok: false, error: "the stream ended without a token" } as const
      return {
        ok: true,
        ttftMs: first - start,
        itlMs: itl,
        e2eMs: end - start,
        outputTokens: usage ?? chunks
      } as const
    })
  ).pipe(Effect.catchAll((e) => Effect.succeed({ ok: false, error: e.message } as const)))

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
