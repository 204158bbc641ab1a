/**
 * The vLLM upgrade check between shipped snapshots: a flag the target removed is named and the
 * target refuses it as an UnknownFlag of that version; a command both accept says so; a check
 * that starts applying in the target is listed with the releases that have it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Upgrade from "../src/Upgrade.js"
import { qwen25_7b } from "./fixtures/models.js"

describe("vLLM upgrade check", () => {
  it.effect(
    "a flag the target removed: named, and the target's refusal is an UnknownFlag of that version",
    () =>
      Effect.gen(function* () {
        const report = yield* Upgrade.compare({
          argv: ["/models/q", "--max-model-len", "4096", "--swap-space", "4"],
          from: "0.13.0",
          to: "0.21.0"
        })
        assert.strictEqual(report.engine, "vLLM")
        assert.deepStrictEqual(
          report.flags.map((f) => [f.flag, f.kind]),
          [["--swap-space", "removed"]]
        )
        assert.strictEqual(report.target._tag, "Refused")
        if (report.target._tag === "Refused") {
          assert.strictEqual(report.target.error._tag, "UnknownFlag")
          assert.include(report.target.error.message, "vLLM 0.21.0")
        }
      })
  )

  it.effect("a command both accept: no flag differences, accepted", () =>
    Effect.gen(function* () {
      const report = yield* Upgrade.compare({
        argv: ["/models/q", "--max_model_len", "4096", "--tensor-parallel-size", "1"],
        from: "0.11.0",
        to: "0.21.0",
        modelConfig: qwen25_7b,
        gpus: { count: 1, computeCapability: "8.9", memoryGiB: 24 }
      })
      assert.deepStrictEqual(report.flags, [])
      assert.deepStrictEqual(report.rules, [])
      assert.strictEqual(report.target._tag, "Accepted")
    })
  )

  it.effect("a version no snapshot is near is noted", () =>
    Effect.gen(function* () {
      const report = yield* Upgrade.compare({ argv: ["/models/q"], from: "0.21.0", to: "0.31.0" })
      assert.isTrue(report.notes.some((n) => n.includes("0.31.0") && n.includes("main-2026-05-19")))
    })
  )

  it.effect("a check only the older release has: it stops applying on the upgrade, with its releases", () =>
    Effect.gen(function* () {
      const argv = [
        "/models/q",
        "--speculative-config",
        '{"model": "/models/draft", "num_speculative_tokens": 3}'
      ]
      const up = yield* Upgrade.compare({ argv, from: "0.11.0", to: "0.13.0" })
      const stopped = up.rules.find((r) => r.ruleId === "speculative.draft-model-unsupported")
      assert.isDefined(stopped, JSON.stringify(up.rules))
      assert.strictEqual(stopped?.change, "stops")
      assert.strictEqual(stopped?.range, "0.11–0.11")
      assert.isFalse(stopped?.inRange)
      // and the other way it starts
      const down = yield* Upgrade.compare({ argv, from: "0.13.0", to: "0.11.0" })
      assert.strictEqual(
        down.rules.find((r) => r.ruleId === "speculative.draft-model-unsupported")?.change,
        "starts"
      )
      assert.strictEqual(down.target._tag, "Refused")
    })
  )
})
