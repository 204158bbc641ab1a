/**
 * The simulated vLLM's HTTP API (reference §3): `/health` 200 once up (503 before), the
 * OpenAI routes behind `--api-key` when one is set, `/version`, `/ping`.
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import { Effect, Ref } from "effect"

export interface Served {
  /** The name clients use (`--served-model-name`, else the model). */
  readonly served: string
  /** The model path or repo id. */
  readonly root: string
  readonly version: string
  readonly ready: Ref.Ref<boolean>
  readonly apiKey: string | undefined
  readonly maxModelLen: number
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
          readonly stream?: boolean
        }
        if (body.model !== undefined && body.model !== s.served)
          return json(404, {
            object: "error",
            message: `The model \`${body.model}\` does not exist.`,
            type: "NotFoundError",
            code: 404
          })
        // streamed (OpenAI's server-sent events): one chunk per token, the last with its finish reason
        if (body.stream === true) {
          const chunk = (text: string, finish: string | null) => ({
            id: "cmpl-sim",
            object: "text_completion",
            model: s.served,
            choices: [{ index: 0, text, logprobs: null, finish_reason: finish }]
          })
          return {
            status: 200,
            body: [JSON.stringify(chunk(" world", null)), JSON.stringify(chunk("", "length")), "[DONE]"]
              .map((data) => `data: ${data}\n\n`)
              .join(""),
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
