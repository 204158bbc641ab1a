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
})
