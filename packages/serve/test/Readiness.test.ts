import { assert, describe, it } from "@effect/vitest"
import * as Deployment from "../src/Deployment.js"
import * as Readiness from "../src/Readiness.js"

describe("Readiness: the streamed token", () => {
  it("reads a token from a completion chunk, a chat delta's content or its reasoning; nothing from [DONE], an empty text, a finish chunk or another payload", () => {
    const completion = JSON.stringify({ choices: [{ index: 0, text: " Paris", finish_reason: null }] })
    const chat = JSON.stringify({ choices: [{ index: 0, delta: { content: "Hi" } }] })
    const reasoning = JSON.stringify({
      choices: [{ index: 0, delta: { content: "", reasoning_content: "Let" } }]
    })
    const finish = JSON.stringify({ choices: [{ index: 0, text: "", finish_reason: "length" }] })
    const role = JSON.stringify({ choices: [{ index: 0, delta: { role: "assistant" } }] })
    assert.strictEqual(Readiness.tokenText(completion), " Paris")
    assert.strictEqual(Readiness.tokenText(chat), "Hi")
    assert.strictEqual(Readiness.tokenText(reasoning), "Let")
    for (const nothing of ["[DONE]", " [DONE] ", finish, role, "{}", "not json", '{"choices":[]}'])
      assert.strictEqual(Readiness.tokenText(nothing), "", nothing)
  })

  it("says the times as sparkrun names them, and which were not reached", () => {
    assert.strictEqual(
      Deployment.describeTimeToReady({ portOpenMs: 12_140, httpReadyMs: 30_400, firstTokenMs: null }),
      "TTR port 12.1 s · TTR HTTP 30.4 s · TTFT -"
    )
    assert.strictEqual(
      Deployment.describeTimeToReady({ portOpenMs: null, httpReadyMs: null, firstTokenMs: null }),
      "TTR port - · TTR HTTP - · TTFT -"
    )
  })
})
