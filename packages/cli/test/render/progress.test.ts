import { assert, describe, it } from "@effect/vitest"
import type * as Launch from "@mlops/serve/Launch"
import * as Progress from "../../src/render/progress.js"

const style = { live: true, color: false }
const phase = (name: "weights-loading" | "kv-cache", elapsedMs: number): Launch.LaunchProgress =>
  ({
    _tag: "Log",
    elapsedMs,
    event: { _tag: "PhaseStarted", phase: name, at: elapsedMs, process: "TP0", line: 1 }
  }) as const

describe("render/progress", () => {
  it("live mode rewrites the phase block in place and keeps permanent lines above it", () => {
    let state = Progress.initial(0)
    const first = Progress.live(style, state, phase("weights-loading", 100), 100)
    assert.notInclude(first.text, "\x1b[") // nothing on screen yet to rewind
    assert.include(first.text, "… weights-loading")
    state = first.state
    const second = Progress.live(style, state, phase("kv-cache", 2100), 2100)
    // rewinds exactly the lines the previous block took, then redraws
    assert.isTrue(second.text.startsWith(`\x1b[${state.blockLines}F\x1b[J`))
    assert.match(second.text, /✓ weights-loading\s+2\.0 s/)
    assert.include(second.text, "… kv-cache")
    const tick = Progress.live(style, second.state, undefined, 3100)
    assert.include(tick.text, "3.1 s elapsed")
  })

  it("plain mode prints one line per phase with its elapsed time", () => {
    const lines = Progress.plain({ live: false, color: false }, phase("kv-cache", 1500))
    assert.deepStrictEqual(lines, ["  · kv-cache +1.5 s"])
  })

  it("live mode: capacity, listening and health lines sit under the phases; at ready the result comes last", () => {
    let state = Progress.initial(0)
    const step = (event: Launch.LaunchProgress | undefined, at: number) => {
      const next = Progress.live(style, state, event, at)
      state = next.state
      return next.text
    }
    step(phase("weights-loading", 100), 100)
    const noted = step(
      {
        _tag: "Log",
        elapsedMs: 200,
        event: { _tag: "Listening", url: "http://127.0.0.1:30000", at: 200, process: "", line: 9 }
      } as Launch.LaunchProgress,
      200
    )
    const rows = noted
      .replace(/^\x1b\[\d+F\x1b\[J/, "")
      .trimEnd()
      .split("\n")
    assert.match(rows[0]!, /… weights-loading/)
    assert.strictEqual(rows[1], "    listening on http://127.0.0.1:30000 (warming up)")
    assert.match(rows[2]!, /elapsed$/)
    assert.strictEqual(state.blockLines, 3)
    // a failure: the block's last drawing has no clock and marks where it ended
    const frozen = Progress.freeze(style, state, 900, "failed")
    assert.isTrue(frozen.text.startsWith("\x1b[3F\x1b[J"))
    assert.notInclude(frozen.text, "elapsed")
    assert.match(frozen.text, /✗ weights-loading/)
    assert.include(frozen.text, "listening on")
    // once final, a tick draws nothing
    assert.strictEqual(Progress.live(style, frozen.state, undefined, 5000).text, "")
  })

  it("a line wider than the terminal takes several rows to rewind", () => {
    assert.strictEqual(Progress.screenRows(["x".repeat(161), "short"], 160), 3)
    assert.strictEqual(Progress.screenRows(["\x1b[32m✓\x1b[39m ok"], 4), 1)
    assert.strictEqual(Progress.screenRows(["x".repeat(500)], undefined), 1)
  })

  it("the last attempt's failure is not printed as an attempt (the command's error says it once)", () => {
    const failure = { _tag: "OOM", message: "Out of GPU memory" }
    const last = { _tag: "AttemptFailed", attempt: 1, failure } as unknown as Launch.LaunchProgress
    assert.deepStrictEqual(Progress.lines(style, last), [])
    const retried = {
      _tag: "AttemptFailed",
      attempt: 1,
      failure,
      nextArgv: ["--tp", "2"]
    } as unknown as Launch.LaunchProgress
    assert.match(Progress.lines(style, retried)[0]!, /attempt 1 failed: Out of GPU memory/)
  })
})
