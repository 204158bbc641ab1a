/**
 * How fast a simulated server generates, the same for every engine's sim: a step-based model
 * (prefill, then decoding steps) whose speed depends on how many requests run at once and on
 * the speculative settings, and the counters a `/metrics` page shows. It gives `mlops bench`
 * and `mlops sweep` something with known figures to measure.
 *
 * - One step takes `stepMs × (1 + batchSlowdown × (running − 1))`, times `1 + draftCost × steps`
 *   with speculative decoding (the draft model's forwards).
 * - The prefill step gives the first token; each decoding step gives `L` tokens on average:
 *   1 without speculation, else `min(draftTokens, 1 + a + a² + … + a^steps)` with `a` the
 *   acceptance rate (each drafted token kept if the one before it was). Tokens come out
 *   deterministically (after `j` decoding steps, `1 + ⌊j × L⌋` in all), so a run's measured
 *   acceptance length is `L` up to the last step's rounding.
 *
 * Knobs (the server's environment): `MLOPS_SIM_STEP_MS` (20), `MLOPS_SIM_BATCH_SLOWDOWN`
 * (0.02), `MLOPS_SIM_DRAFT_COST` (0.15), `MLOPS_SIM_ACCEPT_RATE` (0.7).
 *
 * @since 0.1.0
 */
import { Effect, Option, Ref, Stream } from "effect"

/** @category models */
export interface DecodeSettings {
  /** One step with one request running, in ms. */
  readonly stepMs: number
  /** How much slower a step gets per further running request (a fraction). */
  readonly batchSlowdown: number
  /** How much slower a step gets per speculative step (a fraction). */
  readonly draftCost: number
  /** The chance a drafted token is kept when the one before it was. */
  readonly acceptRate: number
}

/** Speculative decoding as the engine resolved it: draft steps per decoding step, and the most tokens one step can verify. @category models */
export interface Speculation {
  readonly steps: number
  readonly draftTokens: number
}

/** @category constants */
export const defaults: DecodeSettings = { stepMs: 20, batchSlowdown: 0.02, draftCost: 0.15, acceptRate: 0.7 }

const positive = (text: string | undefined, fallback: number, max = Number.POSITIVE_INFINITY) => {
  const value = text === undefined ? Number.NaN : Number(text)
  return Number.isFinite(value) && value >= 0 && value <= max ? value : fallback
}

/** The settings a server's environment asks for (defaults for what it leaves out or gets wrong). @category constructors */
export const settingsFromEnv = (env: Readonly<Record<string, string>>): DecodeSettings => ({
  stepMs: Math.max(1, positive(env.MLOPS_SIM_STEP_MS, defaults.stepMs)),
  batchSlowdown: positive(env.MLOPS_SIM_BATCH_SLOWDOWN, defaults.batchSlowdown),
  draftCost: positive(env.MLOPS_SIM_DRAFT_COST, defaults.draftCost),
  acceptRate: positive(env.MLOPS_SIM_ACCEPT_RATE, defaults.acceptRate, 1)
})

/** Tokens per decoding step on average. @category figures */
export const acceptLength = (speculation: Speculation | undefined, acceptRate: number): number => {
  if (speculation === undefined || speculation.steps < 1) return 1
  let length = 1
  for (let i = 1; i <= speculation.steps; i++) length += acceptRate ** i
  return Math.min(Math.max(1, speculation.draftTokens), length)
}

/** One step's time in ms with `running` requests. @category figures */
export const stepMillis = (
  settings: DecodeSettings,
  running: number,
  speculation: Speculation | undefined
): number =>
  settings.stepMs *
  (1 + settings.batchSlowdown * Math.max(0, running - 1)) *
  (speculation === undefined ? 1 : 1 + settings.draftCost * speculation.steps)

/** What a `/metrics` page reports: totals since the server started. @category models */
export interface Counters {
  readonly promptTokens: number
  readonly generationTokens: number
  /** Requests that finished. */
  readonly requests: number
  /** Decoding steps that verified drafts (0 without speculation). */
  readonly drafts: number
  readonly draftTokens: number
  /** Drafted tokens kept (a step's tokens beyond its first). */
  readonly acceptedTokens: number
  readonly running: number
}

/** @category models */
export interface Decoder {
  readonly settings: DecodeSettings
  readonly speculation: Speculation | undefined
  /** The configured tokens per decoding step. */
  readonly acceptLength: number
  /**
   * One request: the token counts of its chunks as they are made (the prefill's 1, then each
   * decoding step's), paced by the steps; `outputTokens` in all. Counted as running while read.
   */
  readonly generate: (promptTokens: number, outputTokens: number) => Stream.Stream<number>
  readonly counters: Effect.Effect<Counters>
}

/** A decoder with its own counters (one per simulated server). @category constructors */
export const make = (
  settings: DecodeSettings,
  speculation: Speculation | undefined
): Effect.Effect<Decoder> =>
  Effect.gen(function* () {
    const length = acceptLength(speculation, settings.acceptRate)
    const counters = yield* Ref.make<Counters>({
      promptTokens: 0,
      generationTokens: 0,
      requests: 0,
      drafts: 0,
      draftTokens: 0,
      acceptedTokens: 0,
      running: 0
    })
    const step = Effect.flatMap(Ref.get(counters), (c) =>
      Effect.sleep(stepMillis(settings, c.running, speculation))
    )
    const generate = (promptTokens: number, outputTokens: number): Stream.Stream<number> => {
      const total = Math.max(1, Math.floor(outputTokens))
      // state: decoding steps done, tokens given so far
      const chunks = Stream.unfoldEffect({ steps: -1, given: 0 }, (s) =>
        s.given >= total
          ? Effect.succeed(Option.none())
          : Effect.gen(function* () {
              yield* step
              const steps = s.steps + 1
              const given = Math.min(total, steps === 0 ? 1 : 1 + Math.floor(steps * length + 1e-9))
              const made = given - s.given
              yield* Ref.update(counters, (c) => ({
                ...c,
                promptTokens: c.promptTokens + (steps === 0 ? promptTokens : 0),
                generationTokens: c.generationTokens + made,
                requests: c.requests + (given >= total ? 1 : 0),
                ...(steps > 0 && speculation !== undefined
                  ? {
                      drafts: c.drafts + 1,
                      draftTokens: c.draftTokens + speculation.steps,
                      acceptedTokens: c.acceptedTokens + Math.max(0, made - 1)
                    }
                  : {})
              }))
              return Option.some([made, { steps, given }] as const)
            })
      )
      return Stream.unwrapScoped(
        Effect.acquireRelease(
          Ref.update(counters, (c) => ({ ...c, running: c.running + 1 })),
          () => Ref.update(counters, (c) => ({ ...c, running: c.running - 1 }))
        ).pipe(Effect.as(chunks))
      )
    }
    return { settings, speculation, acceptLength: length, generate, counters: Ref.get(counters) }
  })

/** What one streamed OpenAI completion (or chat completion) answers with. @category models */
export interface Streamed {
  readonly kind: "completion" | "chat"
  readonly id: string
  readonly model: string
  readonly createdSeconds: number
  readonly promptTokens: number
  readonly outputTokens: number
  /** `stream_options.include_usage`: a last chunk with the usage and no choices. */
  readonly includeUsage: boolean
  /** The words given out in turn, one per token (repeated when more tokens are asked). */
  readonly words: ReadonlyArray<string>
  /** The finish reason of the last chunk (`length`, `stop`). */
  readonly finish: string
}

/**
 * The server-sent events of one streamed request, paced by `decoder`: a chunk per step with
 * that step's tokens as words, a last chunk with the finish reason, the usage when asked,
 * then `[DONE]`.
 *
 * @category streams
 */
export const serverSentEvents = (decoder: Decoder, o: Streamed): Stream.Stream<string> => {
  const base =
    o.kind === "completion"
      ? { id: o.id, object: "text_completion", created: o.createdSeconds, model: o.model }
      : { id: o.id, object: "chat.completion.chunk", created: o.createdSeconds, model: o.model }
  const choice = (text: string, finish: string | null) =>
    o.kind === "completion"
      ? { index: 0, text, logprobs: null, finish_reason: finish }
      : { index: 0, delta: finish === null ? { content: text } : {}, logprobs: null, finish_reason: finish }
  const event = (data: unknown) => `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`
  let given = 0
  const word = () => {
    const w = o.words[given % o.words.length] ?? "token"
    given++
    return given === 1 ? w : ` ${w}`
  }
  const tokens = decoder
    .generate(o.promptTokens, o.outputTokens)
    .pipe(
      Stream.map((count) =>
        event({ ...base, choices: [choice(Array.from({ length: count }, word).join(""), null)] })
      )
    )
  const usage = {
    prompt_tokens: o.promptTokens,
    completion_tokens: Math.max(1, Math.floor(o.outputTokens)),
    total_tokens: o.promptTokens + Math.max(1, Math.floor(o.outputTokens))
  }
  const tail = [
    event({ ...base, choices: [choice("", o.finish)] }),
    ...(o.includeUsage ? [event({ ...base, choices: [], usage })] : []),
    event("[DONE]")
  ]
  // a chat stream opens with the assistant's role (OpenAI's first chunk)
  const head =
    o.kind === "chat"
      ? [
          event({
            ...base,
            choices: [
              { index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }
            ]
          })
        ]
      : []
  return Stream.fromIterable(head).pipe(Stream.concat(tokens), Stream.concat(Stream.fromIterable(tail)))
}
