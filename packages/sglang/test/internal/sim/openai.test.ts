import { assert, describe, it } from "@effect/vitest"
import type { FakeHost } from "@mlops/core/testing"
import * as SimDecoding from "@mlops/serve/SimDecoding"
import { Chunk, Effect, Ref, Stream } from "effect"
import { handler } from "../../../src/internal/sim/http.js"
import type { ServerArgs } from "../../../src/ServerArgs.js"

// the routes an OpenAI client uses, as the reference describes them (lifecycle.md §4)
const serve = (ready: boolean) =>
  Effect.gen(function* () {
    const readyRef = yield* Ref.make(ready)
    // 1 ms steps: the pacing is SimDecoding's own test; here only what the routes say
    const decoder = yield* SimDecoding.make({ ...SimDecoding.defaults, stepMs: 1 }, undefined)
    return handler({
      args: { model_path: "/root/models/Qwen3.6-27B", served_model_name: null } as unknown as ServerArgs,
      architecture: "Qwen3_5ForConditionalGeneration",
      contextLength: 262144,
      version: "0.5.11",
      ready: readyRef,
      startedAtMs: 0,
      decoder
    })
  })

/** The whole body, a streamed one read to its end. */
const text = (res: FakeHost.HttpResponse): Effect.Effect<string> =>
  typeof res.body === "string"
    ? Effect.succeed(res.body)
    : Effect.map(Stream.runCollect(res.body), (chunks) => Chunk.join(chunks, ""))

const post = (path: string, body: unknown, ready = true) =>
  Effect.flatMap(serve(ready), (h) =>
    h({ method: "POST", path, headers: {}, body: typeof body === "string" ? body : JSON.stringify(body) })
  )

const chat = { model: "/root/models/Qwen3.6-27B", messages: [{ role: "user", content: "Hello there" }] }

describe("sim OpenAI-compatible routes", () => {
  it.effect("chat completion: an assistant message, finish_reason, usage", () =>
    Effect.gen(function* () {
      const res = yield* post("/v1/chat/completions", chat)
      assert.strictEqual(res.status, 200)
      const body = JSON.parse(yield* text(res))
      assert.strictEqual(body.object, "chat.completion")
      assert.strictEqual(body.model, chat.model)
      assert.strictEqual(body.choices[0].message.role, "assistant")
      assert.strictEqual(body.choices[0].finish_reason, "stop")
      assert.strictEqual(body.usage.prompt_tokens, 2)
      assert.strictEqual(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens)
    })
  )

  it.live("stream: true is SSE: chunks with deltas whose text is the whole reply, then data: [DONE]", () =>
    Effect.gen(function* () {
      const whole = JSON.parse(yield* text(yield* post("/v1/chat/completions", chat))).choices[0].message
        .content
      const res = yield* post("/v1/chat/completions", { ...chat, stream: true })
      assert.strictEqual(res.headers?.["content-type"], "text/event-stream")
      const body = yield* text(res)
      assert.isTrue(body.endsWith("data: [DONE]\n\n"))
      const events = body
        .split("\n\n")
        .filter((e) => e !== "")
        .map((e) => e.replace(/^data: /, ""))
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e))
      assert.isTrue(chunks.every((c) => c.object === "chat.completion.chunk"))
      assert.strictEqual(chunks[0].choices[0].delta.role, "assistant")
      assert.strictEqual(chunks.map((c) => c.choices[0].delta.content ?? "").join(""), whole)
      assert.strictEqual(chunks.at(-1).choices[0].finish_reason, "stop")
    })
  )

  it.live("completions: text, max_tokens cuts it (finish_reason length), streaming too", () =>
    Effect.gen(function* () {
      const res = yield* post("/v1/completions", { prompt: "The capital of France is", max_tokens: 2 })
      const body = JSON.parse(yield* text(res))
      assert.strictEqual(body.object, "text_completion")
      assert.strictEqual(body.choices[0].text.split(" ").length, 2)
      assert.strictEqual(body.choices[0].finish_reason, "length")
      assert.strictEqual(body.usage.completion_tokens, 2)
      const streamed = yield* post("/v1/completions", { prompt: "Hi", max_tokens: 2, stream: true })
      const texts = (yield* text(streamed))
        .split("\n\n")
        .filter((e) => e.startsWith("data: {"))
        .map((e) => JSON.parse(e.slice(6)).choices[0].text)
      assert.strictEqual(texts.join(""), body.choices[0].text)
    })
  )

  it.effect("bad requests are 400 in OpenAI's error shape; before ready 503", () =>
    Effect.gen(function* () {
      for (const [path, body] of [
        ["/v1/chat/completions", "{not json"],
        ["/v1/chat/completions", { model: "m" }],
        ["/v1/completions", { model: "m" }],
        ["/v1/completions", { prompt: "x", max_tokens: 0 }]
      ] as const) {
        const res = yield* post(path, body)
        assert.strictEqual(res.status, 400, `${path} ${JSON.stringify(body)}`)
        assert.strictEqual(JSON.parse(yield* text(res)).object, "error")
      }
      assert.strictEqual((yield* post("/v1/chat/completions", chat, false)).status, 503)
    })
  )
})
