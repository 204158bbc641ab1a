/**
 * The HTTP endpoints of a simulated SGLang server (lifecycle.md §4): `/health` is 503 until
 * the warmup finished, then 200; `/model_info`, `/server_info`, `/v1/models`, `/generate`, the
 * OpenAI-compatible completions (`openai.ts`), and with `--enable-metrics` the Prometheus
 * `/metrics` page (production_metrics.md: `sglang:` names, a `model_name` label; the
 * speculative acceptance length is the gauge `sglang:spec_accept_length`).
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import type * as SimDecoding from "@mlops/serve/SimDecoding"
import { Clock, Effect, Ref } from "effect"
import type { ServerArgs } from "../../ServerArgs.js"
import * as OpenAi from "./openai.js"

const json = (status: number, body: unknown): FakeHost.HttpResponse => ({
  status,
  body: JSON.stringify(body)
})

/** Speculative decoding as SGLang resolved it (steps, draft tokens), for the decoder's pace. */
export const speculationOf = (args: ServerArgs): SimDecoding.Speculation | undefined => {
  if (args.speculative_algorithm === null) return undefined
  const steps = args.speculative_num_steps ?? 1
  return { steps, draftTokens: args.speculative_num_draft_tokens ?? steps + 1 }
}

/** The `/metrics` page: SGLang's Prometheus text for the decoder's totals. */
const metrics = (model: string, c: SimDecoding.Counters, speculative: boolean): string => {
  const label = `{model_name=${JSON.stringify(model)}}`
  const metric = (name: string, type: string, help: string, value: number) =>
    `# HELP sglang:${name} ${help}\n# TYPE sglang:${name} ${type}\nsglang:${name}${label} ${value}\n`
  // the gauge is the mean tokens per verify step so far (SGLang's own is over its last log interval)
  const accept = c.drafts === 0 ? 0 : 1 + c.acceptedTokens / c.drafts
  return [
    metric("prompt_tokens_total", "counter", "Number of prefill tokens processed.", c.promptTokens),
    metric(
      "generation_tokens_total",
      "counter",
      "Number of generation tokens processed.",
      c.generationTokens
    ),
    metric("num_requests_total", "counter", "Number of requests processed.", c.requests),
    metric("num_running_reqs", "gauge", "The number of running requests.", c.running),
    ...(speculative
      ? [
          metric(
            "spec_accept_length",
            "gauge",
            "The average acceptance length of speculative decoding.",
            accept
          )
        ]
      : [])
  ].join("")
}

export const handler =
  (o: {
    readonly args: ServerArgs
    readonly architecture: string
    readonly contextLength: number
    readonly version: string
    readonly ready: Ref.Ref<boolean>
    readonly startedAtMs: number
    /** `/health` answers 503 even once ready (SGLang's "Health check failed", a stuck detokenizer). */
    readonly unhealthy?: boolean
    /** Paces streamed answers; its totals are `/metrics`. */
    readonly decoder: SimDecoding.Decoder
  }): FakeHost.HttpHandler =>
  (request) =>
    Effect.gen(function* () {
      const path = request.path.split("?")[0]
      const served = o.args.served_model_name ?? o.args.model_path
      const ready = yield* Ref.get(o.ready)
      switch (`${request.method} ${path}`) {
        case "GET /health":
        case "GET /health_generate":
          return { status: ready && o.unhealthy !== true ? 200 : 503, body: "" }
        case "GET /model_info":
          return json(200, {
            model_path: o.args.model_path,
            tokenizer_path: o.args.tokenizer_path ?? o.args.model_path,
            is_generation: true,
            preferred_sampling_params: null,
            weight_version: "default",
            has_image_understanding: true,
            has_audio_understanding: false,
            model_type: "qwen3_5",
            architectures: [o.architecture]
          })
        case "GET /server_info":
          return json(200, {
            ...o.args,
            status: ready ? "ready" : "starting",
            max_total_num_tokens: 393216,
            max_req_input_len: o.contextLength - 1,
            internal_states: [{ last_gen_throughput: 0 }],
            version: o.version
          })
        case "GET /v1/models":
          return json(200, {
            object: "list",
            data: [
              {
                id: served,
                object: "model",
                created: Math.floor(o.startedAtMs / 1000),
                owned_by: "sglang",
                root: served,
                parent: null,
                max_model_len: o.contextLength
              }
            ]
          })
        case "GET /metrics": {
          if (!o.args.enable_metrics) return json(404, { detail: "Not Found" })
          const counters = yield* o.decoder.counters
          return {
            status: 200,
            body: metrics(served, counters, o.decoder.speculation !== undefined),
            headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" }
          }
        }
        case "POST /generate":
        case "PUT /generate": {
          if (!ready) return json(503, { error: { message: "The server is not ready yet" } })
          return json(200, {
            text: " Paris.",
            output_ids: [12095, 13],
            meta_info: {
              id: "sim-0",
              finish_reason: { type: "length", length: 2 },
              prompt_tokens: 6,
              completion_tokens: 2,
              cached_tokens: 0,
              weight_version: "default"
            }
          })
        }
        case "POST /v1/completions":
        case "POST /v1/chat/completions": {
          if (!ready) return json(503, { error: { message: "The server is not ready yet" } })
          const nowMs = yield* Clock.currentTimeMillis
          const answering = {
            model: served,
            nowSeconds: Math.floor(nowMs / 1000),
            requestId: nowMs,
            decoder: o.decoder
          }
          return path === "/v1/completions"
            ? OpenAi.completions(request.body, answering)
            : OpenAi.chatCompletions(request.body, answering)
        }
        default:
          return json(404, { detail: "Not Found" })
      }
    })
