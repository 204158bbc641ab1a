import { readdirSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import type { Phase } from "@mlops/serve/LaunchEvent"
import { LaunchEvent, phases } from "@mlops/serve/LaunchEvent"
import { Schema } from "effect"
import { DIR, phasesOf, read, stalledOnly, successes, table } from "./classifierCases.js"
import * as Classifier from "./support/classifier.js"

describe("Classifier fixtures", () => {
  it("every fixture file is in the table", () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith(".log"))
    const known = new Set([...Object.keys(table), ...successes, ...stalledOnly])
    assert.deepStrictEqual(
      files.filter((f) => !known.has(f)),
      []
    )
    const perTag = new Map<string, number>()
    for (const e of Object.values(table)) perTag.set(e.tag, (perTag.get(e.tag) ?? 0) + 1)
    perTag.set("StartupStalled", (perTag.get("StartupStalled") ?? 0) + stalledOnly.length)
    // every class has fixtures; the real-logs corpus (corpus/logs) is the test of record
    assert.strictEqual(perTag.size, 19)
    for (const [tag, n] of perTag) assert.isAtLeast(n, tag === "Unclassified" ? 1 : 2, tag)
  })

  for (const [file, expected] of Object.entries(table)) {
    it(`${file} -> ${expected.tag} (${expected.process}, ${expected.phase})`, () => {
      const text = read(file)
      const { failure } = Classifier.classifyText(text, expected.exit)
      assert.isDefined(failure)
      const f = failure!
      assert.strictEqual(f._tag, expected.tag)
      assert.strictEqual(f.process, expected.process)
      assert.strictEqual(f.phase, expected.phase)
      assert.deepStrictEqual(f.fix, expected.fix)
      const lines = text.split("\n")
      for (const needle of expected.evidence) {
        assert.isTrue(
          f.evidence.some((e) => e.text.includes(needle)),
          `evidence lacks "${needle}": ${JSON.stringify(f.evidence)}`
        )
      }
      for (const e of f.evidence) {
        assert.notInclude(e.text, "\x1b")
        // the cited line number points at the cited text (after cleaning)
        assert.include(lines[e.line - 1]!, e.text.replace(/\r$/, "").slice(-30))
      }
      for (const [key, value] of Object.entries(expected.fields ?? {})) {
        assert.deepStrictEqual((f as unknown as Record<string, unknown>)[key], value, key)
      }
      assert.include(f.message, f.reason.slice(0, 20))
    })
  }
})

describe("successful launches", () => {
  it("hybrid MTP TP2 reaches every phase in lifecycle order, with timings", () => {
    const { events, failure } = Classifier.classifyText(read("success-hybrid-mtp-tp2.log"))
    assert.isUndefined(failure)
    assert.deepStrictEqual(phasesOf(events), [...phases])
    const started = events.filter((e) => e._tag === "PhaseStarted")
    for (let i = 1; i < started.length; i++) assert.isAtLeast(started[i]!.at, started[i - 1]!.at)
    const at = (phase: Phase) => started.find((e) => e.phase === phase)!.at
    // the generator's schedule: weights begin at +3.0 s, CUDA graphs at +14.0 s, ready at +38.0 s
    assert.strictEqual(at("weights-loading"), 3000)
    assert.strictEqual(at("cuda-graph"), 14_000)
    assert.strictEqual(at("ready"), 38_000)
    assert.strictEqual(started.find((e) => e.phase === "distributed-init")!.process, "TP0")
    assert.isTrue(events.some((e) => e._tag === "Ready"))
  })

  it("the ServerArgs line yields the effective values", () => {
    const { events } = Classifier.classifyText(read("success-hybrid-mtp-tp2.log"))
    const args = events.find((e) => e._tag === "ServerArgsLine")
    assert(args?._tag === "ServerArgsLine")
    assert.strictEqual(args.values.attention_backend, "fa3")
    assert.strictEqual(args.values.page_size, 1)
    assert.strictEqual(args.values.speculative_algorithm, "EAGLE")
    assert.strictEqual(args.values.speculative_num_steps, 3)
    assert.strictEqual(args.values.speculative_eagle_topk, 1)
    assert.strictEqual(args.values.speculative_num_draft_tokens, 4)
    assert.strictEqual(args.values.max_running_requests, 48)
    assert.strictEqual(args.values.mem_fraction_static, 0.85)
    assert.strictEqual(args.values.disable_cuda_graph, false)
  })

  it("auto-adjust lines, weight progress, capacity and the listening URL are reported", () => {
    const { events } = Classifier.classifyText(read("success-hybrid-mtp-tp2.log"))
    const adjustments = events.flatMap((e) => (e._tag === "Adjustment" ? [e.text] : []))
    assert.include(
      adjustments,
      "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests."
    )
    assert.include(adjustments, "Attention backend not specified. Use fa3 backend by default.")
    const progress = events.flatMap((e) => (e._tag === "PhaseProgress" ? [`${e.done}/${e.total}`] : []))
    assert.deepStrictEqual(progress, ["0/4", "1/4", "2/4", "3/4", "4/4"])
    const capacity = events.find((e) => e._tag === "Capacity")
    assert(capacity?._tag === "Capacity")
    assert.strictEqual(capacity.maxRunningRequests, 48)
    assert.strictEqual(capacity.maxTotalNumTokens, 812_000)
    const listening = events.find((e) => e._tag === "Listening")
    assert(listening?._tag === "Listening")
    assert.strictEqual(listening.url, "http://0.0.0.0:30000")
  })

  it("a single-GPU launch skips the hybrid and draft phases", () => {
    const { events, failure } = Classifier.classifyText(read("success-qwen3-tp1.log"))
    assert.isUndefined(failure)
    assert.deepStrictEqual(
      phasesOf(events),
      phases.filter((p) => !["mamba-cache", "draft-weights", "draft-cuda-graph"].includes(p))
    )
  })

  it("a ready server killed later is a ProcessExited after phase ready", () => {
    const failure = Classifier.classifyText(read("success-qwen3-tp1.log"), { signal: "SIGKILL" }).failure
    assert(failure?._tag === "ProcessExited")
    assert.strictEqual(failure.phase, "ready")
    assert.strictEqual(failure.signal, "SIGKILL")
  })
})

describe("ranks' lines interleaved in one log", () => {
  // two scheduler ranks of one node write to one log; TP3 runs ahead of TP2 (lines in SGLang
  // 0.5.11's format, as its ranks print them)
  const log = [
    "[2026-12-02 15:29:05 TP2] Init torch distributed begin.",
    "[2026-12-02 15:29:05 TP3] Init torch distributed begin.",
    "[2026-12-02 15:29:05 TP3] Load weight begin. avail mem=46.93 GB",
    "[2026-12-02 15:29:06 TP3] Load weight end. elapsed=2.15 s, type=Qwen3_5ForConditionalGeneration, avail mem=20.07 GB, mem usage=26.86 GB.",
    "[2026-12-02 15:29:06 TP3] KV Cache is allocated. #tokens: 212480, K size: 6.48 GB, V size: 6.48 GB",
    "[2026-12-02 15:29:06 TP2] Load weight begin. avail mem=46.93 GB",
    "[2026-12-02 15:29:06 TP3] Scheduler hit an exception: Traceback (most recent call last):",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 3 has a total capacity of 47.99 GiB of which 1474.20 MiB is free."
  ].join("\n")

  it("another rank's weights loading late is not the draft model's: the OOM after TP3's KV cache keeps its memory fix", () => {
    const { events, failure } = Classifier.classifyText(log, { exitCode: 1, signal: null })
    assert.notInclude(phasesOf(events), "draft-weights")
    assert(failure?._tag === "OOM")
    assert.deepStrictEqual(Object.keys(failure.fix?.flags ?? {}), ["--mem-fraction-static"])
  })

  it("the same rank loading again after its KV cache is its draft model", () => {
    const draft = `${log.split("\n").slice(0, 5).join("\n")}\n[2026-12-02 15:29:07 TP3] Load weight begin. avail mem=5.00 GB`
    assert.include(phasesOf(Classifier.classifyText(draft).events), "draft-weights")
  })
})

describe("LaunchEvent schema", () => {
  it("every event of a failed launch survives a JSON round trip, failures as typed errors", () => {
    const { events } = Classifier.classifyText(read("oom-weights-tp2.log"), { exitCode: 137 })
    const json = JSON.parse(JSON.stringify(events.map((e) => Schema.encodeSync(LaunchEvent)(e))))
    const decoded = (json as Array<unknown>).map((e) => Schema.decodeUnknownSync(LaunchEvent)(e))
    assert.deepStrictEqual(
      decoded.map((e) => e._tag),
      events.map((e) => e._tag)
    )
    const failed = decoded.find((e) => e._tag === "Failed")
    assert(failed?._tag === "Failed")
    assert.strictEqual(failed.failure._tag, "OOM")
    assert.instanceOf(failed.failure, Error)
    assert.include(failed.failure.message, "CUDA out of memory")
  })
})
