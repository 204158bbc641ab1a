/**
 * The HTTP endpoints of a simulated SGLang server (lifecycle.md §4): `/health` is 503 until
 * the warmup finished, then 200; `/model_info`, `/server_info`, `/v1/models`, `/generate`.
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import { Effect, Ref } from "effect"
import type { ServerArgs } from "../../ServerArgs.js"

const json = (status: number, body: unknown): FakeHost.HttpResponse => ({
  status,
  body: JSON.stringify(body)
})

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
        default:
          return json(404, { detail: "Not Found" })
      }
    })
