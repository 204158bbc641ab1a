/**
 * The OpenAI-compatible routes of a simulated SGLang server (lifecycle.md §4: `/v1/completions`
 * and `/v1/chat/completions`, SSE when `stream: true`), so an OpenAI client pointed at a
 * `--tunnel` URL works. No model runs: the reply is a fixed sentence, cut at `max_tokens`
 * (one word per token; `ignore_eos` gives all `max_tokens`, the sentence repeated), with the
 * usage a client reads. Streams are paced by the server's decoder (`SimDecoding`): a chunk per
 * step, as fast as the running requests and the speculative settings allow.
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import * as SimDecoding from "@mlops/serve/SimDecoding"
import type { Stream } from "effect"

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

const reply = ["This", "is", "the", "simulated", "SGLang", "server:", "no", "model", "ran."]

const json = (status: number, body: unknown): FakeHost.HttpResponse => ({
  status,
  body: JSON.stringify(body),
  headers: { "content-type": "application/json" }
})

/** OpenAI's error shape, as SGLang's OpenAI layer answers a bad request. */
const badRequest = (message: string): FakeHost.HttpResponse =>
  json(400, { object: "error", message, type: "BadRequestError", param: null, code: 400 })

const wordsOf = (text: string) => text.split(/\s+/).filter((w) => w !== "").length

interface Served {
  /** `--served-model-name`, else the model path (what `/v1/models` lists). */
  readonly model: string
  readonly nowSeconds: number
  /** Makes the response id unique. */
  readonly requestId: number
  /** Paces streamed answers and counts tokens for `/metrics`. */
  readonly decoder: SimDecoding.Decoder
}

/** A paced stream of server-sent events. */
const streamed = (events: Stream.Stream<string>): FakeHost.HttpResponse => ({
  status: 200,
  body: events,
  headers: { "content-type": "text/event-stream", "cache-control": "no-cache" }
})

const includeUsage = (request: Record<string, unknown>) =>
  isRecord(request.stream_options) && request.stream_options.include_usage === true

/** The body as an object with the fields every route reads, or a 400. */
type Parsed =
  | { readonly ok: true; readonly request: Record<string, unknown> }
  | { readonly ok: false; readonly response: FakeHost.HttpResponse }

const refuse = (message: string): Parsed => ({ ok: false, response: badRequest(message) })

const parse = (body: string): Parsed => {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return refuse("the request body is not valid JSON")
  }
  if (!isRecord(parsed)) return refuse("the request body must be a JSON object")
  if (parsed.max_tokens !== undefined && (typeof parsed.max_tokens !== "number" || parsed.max_tokens < 1)) {
    return refuse("max_tokens must be a positive integer")
  }
  return { ok: true, request: parsed }
}

const answer = (request: Record<string, unknown>) => {
  const limit = typeof request.max_tokens === "number" ? Math.floor(request.max_tokens) : reply.length
  // ignore_eos (SGLang's sampling parameter, taken in the OpenAI body too): every token asked for
  const words =
    request.ignore_eos === true
      ? Array.from({ length: limit }, (_, i) => reply[i % reply.length]!)
      : reply.slice(0, limit)
  return { words, finish: words.length < reply.length || request.ignore_eos === true ? "length" : "stop" }
}

const usage = (promptTokens: number, completionTokens: number) => ({
  prompt_tokens: promptTokens,
  completion_tokens: completionTokens,
  total_tokens: promptTokens + completionTokens
})

export const completions = (body: string, served: Served): FakeHost.HttpResponse => {
  const parsed = parse(body)
  if (!parsed.ok) return parsed.response
  const request = parsed.request
  const prompt = Array.isArray(request.prompt) ? request.prompt.join(" ") : request.prompt
  if (typeof prompt !== "string") return badRequest("prompt is required (a string or a list of strings)")
  const { words, finish } = answer(request)
  const model = typeof request.model === "string" ? request.model : served.model
  const base = {
    id: `cmpl-sim-${served.requestId}`,
    object: "text_completion",
    created: served.nowSeconds,
    model
  }
  if (request.stream === true) {
    return streamed(
      SimDecoding.serverSentEvents(served.decoder, {
        kind: "completion",
        id: base.id,
        model,
        createdSeconds: served.nowSeconds,
        promptTokens: wordsOf(prompt),
        outputTokens: words.length,
        includeUsage: includeUsage(request),
        words,
        finish
      })
    )
  }
  return json(200, {
    ...base,
    choices: [{ index: 0, text: words.join(" "), logprobs: null, finish_reason: finish }],
    usage: usage(wordsOf(prompt), words.length)
  })
}

export const chatCompletions = (body: string, served: Served): FakeHost.HttpResponse => {
  const parsed = parse(body)
  if (!parsed.ok) return parsed.response
  const request = parsed.request
  const messages = request.messages
  if (!Array.isArray(messages) || messages.length === 0 || !messages.every(isRecord)) {
    return badRequest("messages is required: a non-empty list of {role, content}")
  }
  const promptTokens = messages.reduce(
    (n, m) => n + (typeof m.content === "string" ? wordsOf(m.content) : 0),
    0
  )
  const { words, finish } = answer(request)
  const model = typeof request.model === "string" ? request.model : served.model
  const base = { id: `chatcmpl-sim-${served.requestId}`, created: served.nowSeconds, model }
  if (request.stream === true) {
    return streamed(
      SimDecoding.serverSentEvents(served.decoder, {
        kind: "chat",
        id: base.id,
        model,
        createdSeconds: served.nowSeconds,
        promptTokens,
        outputTokens: words.length,
        includeUsage: includeUsage(request),
        words,
        finish
      })
    )
  }
  return json(200, {
    ...base,
    object: "chat.completion",
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: words.join(" ") },
        logprobs: null,
        finish_reason: finish
      }
    ],
    usage: usage(promptTokens, words.length)
  })
}
