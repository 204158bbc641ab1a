/**
 * The simulated vLLM's HTTP API (reference §3): `/health` 200 once up (503 before), the
 * OpenAI routes behind `--api-key` when one is set, `/version`, `/ping`, and the Prometheus
 * `/metrics` page vLLM always serves (`vllm:` counters; speculative decoding's
 * `vllm:spec_decode_num_drafts_total`, `..._num_draft_tokens_total`, `..._num_accepted_tokens_total`,
 * whose `1 + accepted / drafts` is the acceptance length). Streamed completions are paced by
 * the server's decoder (`SimDecoding`).
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import * as SimDecoding from "@mlops/serve/SimDecoding"
import { Clock, Effect, Ref } from "effect"

export interface Served {
  /** The name clients use (`--served-model-name`, else the model). */
  readonly served: string
  /** The model path or repo id. */
  readonly root: string
  readonly version: string
  readonly ready: Ref.Ref<boolean>
  readonly apiKey: string | undefined
  readonly maxModelLen: number
  /** Paces streamed answers; its totals are `/metrics`. */
  readonly decoder: SimDecoding.Decoder
}

/** Speculative decoding as `--speculative-config` asks for it: `num_speculative_tokens` drafts per step. */
export const speculationOf = (
  values: Readonly<Record<string, unknown>>
): SimDecoding.Speculation | undefined => {
  const config = values.speculative_config
  const parsed: unknown = typeof config === "string" ? safeJson(config) : config
  if (typeof parsed !== "object" || parsed === null) return undefined
  const k = (parsed as { num_speculative_tokens?: unknown }).num_speculative_tokens
  const steps = typeof k === "number" && k >= 1 ? Math.floor(k) : 1
  return { steps, draftTokens: steps + 1 }
}

const safeJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** vLLM's Prometheus text for the decoder's totals (a `model_name` label, as vLLM's own). */
const metrics = (model: string, c: SimDecoding.Counters, speculative: boolean): string => {
  const label = `{engine="0",model_name=${JSON.stringify(model)}}`
  const metric = (name: string, type: string, help: string, value: number) =>
    `# HELP vllm:${name} ${help}\n# TYPE vllm:${name} ${type}\nvllm:${name}${label} ${value}\n`
  return [
    metric("num_requests_running", "gauge", "Number of requests in model execution batches.", c.running),
    metric("prompt_tokens_total", "counter", "Number of prefill tokens processed.", c.promptTokens),
    metric(
      "generation_tokens_total",
      "counter",
      "Number of generation tokens processed.",
      c.generationTokens
    ),
    metric("request_success_total", "counter", "Count of successfully processed requests.", c.requests),
    ...(speculative
      ? [
          metric("spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.", c.drafts),
          metric("spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.", c.draftTokens),
          metric(
            "spec_decode_num_accepted_tokens_total",
            "counter",
            "Number of accepted tokens.",
            c.acceptedTokens
          )
        ]
      : [])
  ].join("")
}

const json = (status: number, body: unknown): FakeHost.HttpResponse => ({
  status,
  body: JSON.stringify(body),
  headers: { "content-type": "application/json" }
})

export const handler =
  (s: Served): FakeHost.HttpHandler =>
  (request) =>
    Effect.gen(function* () {
      const path = request.path.split("?", 1)[0]!
      if (!(yield* Ref.get(s.ready))) return json(503, { error: "the engine is starting" })
      if (path === "/health") return { status: 200, body: "" }
      if (path === "/ping") return { status: 200, body: "" }
      if (path === "/version") return json(200, { version: s.version })
      if (path === "/metrics")
        return {
          status: 200,
          body: metrics(s.served, yield* s.decoder.counters, s.decoder.speculation !== undefined),
          headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" }
        }
      const authorization = request.headers.authorization ?? request.headers.Authorization
      if (path.startsWith("/v1/") && s.apiKey !== undefined && authorization !== `Bearer ${s.apiKey}`)
        return json(401, { error: "Unauthorized" })
      if (path === "/v1/models" && request.method === "GET")
        return json(200, {
          object: "list",
          data: [
            { id: s.served, object: "model", owned_by: "vllm", root: s.root, max_model_len: s.maxModelLen }
          ]
        })
      if (path === "/v1/completions" && request.method === "POST") {
        const body = JSON.parse(request.body || "{}") as {
          readonly model?: string
          readonly prompt?: unknown
          readonly stream?: boolean
          readonly max_tokens?: number
          readonly ignore_eos?: boolean
          readonly stream_options?: { readonly include_usage?: boolean }
        }
        if (body.model !== undefined && body.model !== s.served)
          return json(404, {
            object: "error",
            message: `The model \`${body.model}\` does not exist.`,
            type: "NotFoundError",
            code: 404
          })
        // streamed (OpenAI's server-sent events): a chunk per step, paced, the last with its finish reason
        if (body.stream === true) {
          const asked = typeof body.max_tokens === "number" && body.max_tokens >= 1 ? body.max_tokens : 16
          const outputTokens = body.ignore_eos === true ? asked : 1
          const prompt = typeof body.prompt === "string" ? body.prompt : ""
          return {
            status: 200,
            body: SimDecoding.serverSentEvents(s.decoder, {
              kind: "completion",
              id: "cmpl-sim",
              model: s.served,
              createdSeconds: Math.floor((yield* Clock.currentTimeMillis) / 1000),
              promptTokens: prompt.split(/\s+/).filter((w) => w !== "").length,
              outputTokens,
              includeUsage: body.stream_options?.include_usage === true,
              words: ["world"],
              finish: "length"
            }),
            headers: { "content-type": "text/event-stream", "cache-control": "no-cache" }
          }
        }
        return json(200, {
          id: "cmpl-sim",
          object: "text_completion",
          model: s.served,
          choices: [{ index: 0, text: " world", finish_reason: "length" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
        })
      }
      return json(404, { detail: "Not Found" })
    })
