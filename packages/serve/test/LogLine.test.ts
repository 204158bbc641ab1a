import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { cleanLine, headerProcess, headerTime, messageStart } from "../src/LogLine.js"

describe("logLine", () => {
  it("strips ANSI colour codes", () => {
    assert.strictEqual(cleanLine("\x1b[31m[2026-05-10 12:00:00] boom\x1b[0m"), "[2026-05-10 12:00:00] boom")
    assert.strictEqual(cleanLine("\x1b[2K\x1b[1;32mok"), "ok")
  })

  it("keeps the last non-empty \\r segment and drops a CRLF's \\r", () => {
    assert.strictEqual(cleanLine(" 10%|#   |\r 50%|##  |\r100%|####|"), "100%|####|")
    assert.strictEqual(cleanLine("line\r"), "line")
    assert.strictEqual(cleanLine("a\rb\r\r"), "b")
  })

  it.prop("lines without ESC or CR are returned unchanged", [FastCheck.string()], ([s]) => {
    const plain = s.replace(/[\x1b\r]/g, "")
    assert.strictEqual(cleanLine(plain), plain)
  })

  it("finds the message after the time header and names the process", () => {
    const launcher = "[2026-05-10 12:00:05] Load weight begin."
    const rank = "[2026-05-10 12:00:05 DP0 TP1] Load weight begin."
    const ms = "[2026-05-10 12:00:05.123 TP0] x"
    assert.strictEqual(launcher.slice(messageStart(launcher)), "Load weight begin.")
    assert.strictEqual(rank.slice(messageStart(rank)), "Load weight begin.")
    assert.strictEqual(headerProcess(launcher, messageStart(launcher)), "launcher")
    assert.strictEqual(headerProcess(rank, messageStart(rank)), "DP0 TP1")
    assert.strictEqual(headerProcess(ms, messageStart(ms)), "TP0")
  })

  it("does not take Python or tqdm lines for headers", () => {
    for (const line of [
      '  File "/x.py", line 3, in f',
      "[Gloo] Rank 0 is connected to 0 peer ranks.",
      "[rank0]: Traceback",
      "[2026-05-10] short",
      "Loading safetensors checkpoint shards: 100% Completed | 4/4"
    ]) {
      assert.strictEqual(messageStart(line), -1, line)
    }
  })

  it("reads header times to the millisecond", () => {
    const a = headerTime("[2026-05-10 12:00:05 TP0] x")
    const b = headerTime("[2026-05-10 12:01:06.250] y")
    assert.strictEqual(b - a, 61_250)
    assert.strictEqual(a, Date.UTC(2026, 4, 10, 12, 0, 5))
  })
})
