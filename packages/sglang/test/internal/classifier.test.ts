import { readdirSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import type { LaunchEvent } from "@mlops/serve/LaunchEvent"
import { Chunk, Effect, FastCheck, Option, Stream } from "effect"
import * as L from "../../src/internal/lifecycleLines.js"
import { DIR, exit1, killed, phasesOf, read } from "../classifierCases.js"
import * as Classifier from "../support/classifier.js"

describe("incremental use", () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith(".log"))

  it("feeding line by line gives the same events and failure as the whole text", () => {
    for (const file of files) {
      const text = read(file)
      const whole = Classifier.classifyText(text, killed)
      const c = Classifier.make()
      const events: Array<LaunchEvent> = []
      const lines = text.split("\n")
      if (lines[lines.length - 1] === "") lines.pop()
      for (const line of lines) events.push(...c.feed(line))
      assert.deepStrictEqual(events, whole.events, file)
      assert.deepStrictEqual(c.finish(killed), whole.failure, file)
    }
  })

  it.effect("classify over a Stream ends with the final failure", () =>
    Effect.gen(function* () {
      const text = read("oom-then-nccl-echo.log")
      const lines = text.split("\n").filter((l) => l !== "")
      const events = Chunk.toReadonlyArray(
        yield* Stream.runCollect(Classifier.classify(Stream.fromIterable(lines), killed))
      )
      const whole = Classifier.classifyText(text, killed)
      const failed = events.filter((e) => e._tag === "Failed")
      assert.isAtLeast(failed.length, 1)
      assert.deepStrictEqual(failed[failed.length - 1], { _tag: "Failed", failure: whole.failure! })
      assert.deepStrictEqual(phasesOf(events), phasesOf(whole.events))
    })
  )

  it("a Failed event is emitted as soon as the traceback record ends", () => {
    const c = Classifier.make()
    const lines = read("oom-weights-tp2.log").split("\n")
    const firstFailed = lines.findIndex((line) => c.feed(line).some((e) => e._tag === "Failed"))
    // the TP1 record ends where TP0's record starts
    assert.include(lines[firstFailed]!, "TP0] Scheduler hit an exception")
  })

  it("finish is idempotent", () => {
    const c = Classifier.make()
    for (const line of read("nccl-unhandled.log").split("\n")) c.feed(line)
    assert.deepStrictEqual(c.finish(killed), c.finish(killed))
  })
})

describe("messy logs", () => {
  it("a log that goes quiet becomes StartupStalled at its last phase", () => {
    const c = Classifier.make()
    for (const line of read("stalled-silent.log").split("\n")) c.feed(line)
    assert.isUndefined(c.finish())
    const stalled = c.stalled(600_000)
    assert.strictEqual(stalled._tag, "StartupStalled")
    assert.strictEqual(stalled.phase, "cuda-graph")
    assert.strictEqual(stalled.silentForMs, 600_000)
    assert.include(stalled.evidence[stalled.evidence.length - 1]!.text, "Capture cuda graph bs")
  })

  it("ANSI codes are stripped and a \\r progress bar keeps its last segment", () => {
    const { events } = Classifier.classifyText(read("success-messy-tty.log"))
    const progress = events.filter((e) => e._tag === "PhaseProgress")
    assert.deepStrictEqual(
      progress.map((e) => (e._tag === "PhaseProgress" ? e.percent : -1)),
      [100]
    )
    assert.deepStrictEqual(phasesOf(events).slice(0, 4), [
      "starting",
      "args-resolved",
      "distributed-init",
      "weights-loading"
    ])
  })

  it("the launcher's SIGKILL and 'Received sigquit' do not hide the root cause", () => {
    const failure = Classifier.classifyText(read("oom-weights-tp2.log"), killed).failure
    assert.strictEqual(failure?._tag, "OOM")
    assert.isFalse(failure!.evidence.some((e) => e.text.includes("Received sigquit")))
  })

  it("duplicate tracebacks from other ranks are not cited", () => {
    const failure = Classifier.classifyText(read("nccl-unhandled.log"), killed).failure!
    assert.isFalse(failure.evidence.some((e) => e.text.includes("TP0]")))
  })

  it("the early import error is cited first, before the later generic error", () => {
    const failure = Classifier.classifyText(read("dep-linked-import-error.log"), killed).failure!
    assert.include(failure.evidence[0]!.text, "Ignore import error when loading sglang.srt.models.qwen3_5")
    assert.isFalse(failure.evidence.some((e) => e.text.includes("glm_ocr")))
    assert.include(failure.reason, "cannot import name 'Qwen3_5Config'")
  })

  it("continuation lines without a prefix belong to the rank that opened the record", () => {
    const text = [
      "[2026-05-10 12:00:05 TP3] Scheduler hit an exception: Traceback (most recent call last):",
      '  File "/x/model_runner.py", line 1, in f',
      "    g()",
      "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
      "[2026-05-10 12:00:06] Received sigquit from a child process. It usually means the child failed."
    ].join("\n")
    const failure = Classifier.classifyText(text, killed).failure!
    assert.strictEqual(failure._tag, "OOM")
    assert.strictEqual(failure.process, "TP3")
  })

  it("a DP/TP prefix and millisecond timestamps are understood", () => {
    const c = Classifier.make()
    c.feed("[2026-05-10 12:00:00.250] server_args=ServerArgs(tp_size=2)")
    const events = c.feed("[2026-05-10 12:00:01.750 DP1 TP3] Init torch distributed begin.")
    assert.deepStrictEqual(events, [
      { _tag: "PhaseStarted", phase: "distributed-init", at: 1500, process: "DP1 TP3", line: 2 }
    ])
  })

  it("diagnose reports how far a finished log got", () => {
    const diagnosis = Classifier.diagnose(read("port-http.log"), exit1)
    assert.strictEqual(diagnosis.phase, "cuda-graph")
    assert.isFalse(diagnosis.ready)
    assert.strictEqual(Option.getOrThrow(diagnosis.failure)._tag, "PortInUse")
    const ok = Classifier.diagnose(read("success-qwen3-tp1.log"))
    assert.isTrue(ok.ready)
    assert.isTrue(Option.isNone(ok.failure))
  })

  it.prop(
    "steady-state and noise lines anywhere do not change the verdict",
    {
      seed: FastCheck.integer({ min: 0, max: 2 ** 30 }),
      noise: FastCheck.array(FastCheck.string(), { maxLength: 20 })
    },
    ({ seed, noise }) => {
      const base = read("oom-then-nccl-echo.log").split("\n")
      const expected = Classifier.classifyText(base.join("\n"), killed).failure!
      const decode = L.line(
        Date.UTC(2026, 4, 10, 12, 5),
        "TP0",
        L.decodeBatch({ running: 3, tokens: 99, usage: 0.1, throughput: 80 })
      )
      // insert prefixed steady-state lines (they end a traceback record, like any prefixed line)
      // only between records, and random bare noise only before the first record
      const out = [...base]
      let r = seed
      const firstRecord = out.findIndex((l) => l.includes("hit an exception"))
      for (let i = 0; i < 5; i++) {
        r = (r * 1103515245 + 12345) % 2 ** 31
        out.splice(r % firstRecord, 0, decode)
      }
      out.splice(
        1,
        0,
        ...noise.map((s) => s.replace(/[\n\r]/g, " ").replace(/^\s*(Traceback|usage|Fatal)/, "x"))
      )
      const failure = Classifier.classifyText(out.join("\n"), killed).failure!
      assert.strictEqual(failure._tag, expected._tag)
      assert.strictEqual(failure.process, expected.process)
      assert.deepStrictEqual(failure.fix, expected.fix)
    }
  )
})
