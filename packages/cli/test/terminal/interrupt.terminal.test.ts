/**
 * Ctrl-C in a real terminal (tmux, 160×50): during loading (the server keeps running, or with
 * --stop-on-interrupt is stopped), and after ready with --tunnel (the timer stops at ready,
 * the tunnel serves OpenAI-compatible requests, Ctrl-C closes it).
 */
import { execFileSync } from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import {
  clockLine,
  count,
  fast,
  lastOutputLine,
  lineIndex,
  linesOf,
  mlops,
  readyFlags,
  terminals
} from "./support.js"

const use = terminals()

const hang = "--env MLOPS_SIM_HANG=cuda-graph"
const loading = (s: string) => /… kv-cache/.test(s)

describe("Ctrl-C in a terminal", () => {
  it("during loading: the phases stay, stderr says it keeps running, the commands paste and work", async () => {
    const term = use()
    mlops(term, `launch --host sim ${hang} -- ${readyFlags}`)
    await term.waitFor("the kv-cache phase running", loading)
    term.keys("C-c")
    const { code, transcript } = await term.finished()
    assert.strictEqual(code, 130, transcript)
    assert.strictEqual(count(transcript, clockLine), 0, "no clock left")
    assert.strictEqual(count(transcript, /^ {4}… /), 0, "no phase left running")
    assert.isAbove(lineIndex(transcript, /■ kv-cache/), lineIndex(transcript, /✓ weights-loading/))
    const said = lineIndex(transcript, /^interrupted: qwen3\.6-27b \(pid \d+\) keeps running on sim$/)
    assert.isAbove(said, lineIndex(transcript, /■ kv-cache/), transcript)
    const follow = linesOf(transcript)[said + 1]!
    const stop = linesOf(transcript)[said + 2]!
    assert.strictEqual(follow, "  follow it: mlops logs --host sim --name qwen3.6-27b -f")
    assert.strictEqual(stop, "  stop it:   mlops stop --host sim --name qwen3.6-27b")

    await term.clear()
    term.run("mlops status --host sim")
    const status = await term.finished()
    assert.match(status.transcript, /qwen3\.6-27b\s+sglang 0\.5\.11\s+running\s+kv-cache/)
    await term.clear()
    // pasted as printed
    term.run(stop.replace(/^ {2}stop it: +/, ""))
    const stopped = await term.finished()
    assert.strictEqual(stopped.code, 0, stopped.transcript)
    assert.match(lastOutputLine(stopped.transcript), /qwen3\.6-27b stopped on sim .*no GPU memory held/)
  })

  it("during loading with --stop-on-interrupt: stderr confirms the stop, status agrees", async () => {
    const term = use()
    mlops(term, `launch --host sim --stop-on-interrupt ${hang} -- ${readyFlags}`)
    await term.waitFor("the kv-cache phase running", loading)
    term.keys("C-c")
    const { code, transcript } = await term.finished()
    assert.strictEqual(code, 130, transcript)
    assert.strictEqual(count(transcript, clockLine), 0, "no clock left")
    assert.match(lastOutputLine(transcript), /^interrupted: qwen3\.6-27b \(pid \d+\) was stopped on sim$/)
    await term.clear()
    term.run("mlops status --host sim")
    const status = await term.finished()
    assert.match(status.transcript, /qwen3\.6-27b\s+sglang 0\.5\.11\s+stopped/)
  })

  it("--tunnel: the result last, no clock after ready, a curl through the tunnel, Ctrl-C closes it", async () => {
    const term = use({ NO_COLOR: "1" })
    mlops(term, `launch --host sim --tunnel ${fast} -- ${readyFlags}`)
    const ready = await term.waitFor("the tunnel line", (s) =>
      /tunnel open: http:\/\/127\.0\.0\.1:\d+/.test(s)
    )
    assert.strictEqual(count(ready, clockLine), 0, ready)
    assert.match(
      lastOutputLine(ready),
      /^⇄ tunnel open: http:\/\/127\.0\.0\.1:\d+ → sim port 30000; Ctrl-C closes it/
    )
    const url = /tunnel open: (http:\/\/127\.0\.0\.1:\d+)/.exec(ready)![1]!
    // a timer would have moved on by now: the screen stays as it was at ready
    await new Promise((resolve) => setTimeout(resolve, 2500))
    assert.strictEqual(term.screen(), ready)
    // what the quickstart tells a user to paste: an OpenAI client call through the tunnel
    const curl = (route: string, body?: unknown) =>
      execFileSync(
        "curl",
        [
          "-sS",
          "--fail-with-body",
          "--max-time",
          "20",
          `${url}${route}`,
          ...(body === undefined ? [] : ["-H", "Content-Type: application/json", "-d", JSON.stringify(body)])
        ],
        { encoding: "utf8" }
      )
    const models = JSON.parse(curl("/v1/models")) as { data: Array<{ id: string }> }
    const model = models.data[0]!.id
    assert.strictEqual(model, "/root/models/Qwen3.6-27B")
    const question = { model, messages: [{ role: "user", content: "What is the capital of France?" }] }
    const completion = JSON.parse(curl("/v1/chat/completions", question)) as {
      object: string
      choices: Array<{ message: { role: string; content: string }; finish_reason: string }>
    }
    assert.strictEqual(completion.object, "chat.completion")
    assert.strictEqual(completion.choices[0]!.message.role, "assistant")
    assert.isAbove(completion.choices[0]!.message.content.length, 0)
    const streamed = curl("/v1/chat/completions", { ...question, stream: true })
    const events = streamed.split("\n\n").filter((e) => e !== "")
    assert.isTrue(
      events.every((e) => e.startsWith("data: ")),
      streamed
    )
    assert.strictEqual(events.at(-1), "data: [DONE]")
    const text = events
      .slice(0, -1)
      .map((e) => JSON.parse(e.slice(6)) as { choices: Array<{ delta: { content?: string } }> })
      .map((chunk) => chunk.choices[0]!.delta.content ?? "")
      .join("")
    assert.strictEqual(text, completion.choices[0]!.message.content)
    term.keys("C-c")
    const { code, transcript } = await term.finished()
    assert.strictEqual(code, 130, transcript)
    assert.match(lastOutputLine(transcript), /^ {2}stop it: {3}mlops stop --host sim --name qwen3\.6-27b$/)
    assert.isAbove(
      lineIndex(transcript, /^tunnel closed: qwen3\.6-27b \(pid \d+\) keeps running on sim$/),
      0,
      transcript
    )
  })

  it("--tunnel --stop-on-interrupt: Ctrl-C after ready closes the tunnel and stops the server, confirmed", async () => {
    const term = use()
    mlops(term, `launch --host sim --tunnel --stop-on-interrupt ${fast} -- ${readyFlags}`)
    await term.waitFor("the tunnel line", (s) => /tunnel open: http/.test(s))
    term.keys("C-c")
    const { code, transcript } = await term.finished()
    assert.strictEqual(code, 130, transcript)
    assert.match(
      lastOutputLine(transcript),
      /^tunnel closed: qwen3\.6-27b \(pid \d+\) was stopped on sim \(terminated\); no GPU memory held$/
    )
    await term.clear()
    term.run("mlops status --host sim")
    assert.match(
      (await term.finished()).transcript,
      /qwen3\.6-27b\s+sglang 0\.5\.11\s+stopped \(terminated\)/
    )
  })
})
