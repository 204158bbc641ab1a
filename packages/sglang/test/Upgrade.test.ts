import { assert, describe, it } from "@effect/vitest"
import { qwen36_27b } from "@mlops/serve/SampleModels"
import { Effect } from "effect"
import * as Upgrade from "../src/Upgrade.js"
import { storyArgv } from "./support/story.js"

const kinds = (report: Upgrade.UpgradeReport) => report.flags.map((f) => [f.flag, f.kind])

describe("Upgrade", () => {
  it.effect("a removed flag: named with the releases that had it, and the target refuses it", () =>
    Effect.gen(function* () {
      const report = yield* Upgrade.compare({
        argv: ["--model-path", "/m", "--enable-flashinfer-mla", "--tp-size", "2"],
        from: "0.4.3",
        to: "0.5.15"
      })
      assert.deepStrictEqual(kinds(report), [["--enable-flashinfer-mla", "removed"]])
      assert.include(report.flags[0]!.message, "0.4.3–0.4.7")
      assert.strictEqual(report.target._tag, "Refused")
      if (report.target._tag === "Refused") {
        assert.strictEqual(report.target.error._tag, "UnknownFlag")
        assert.include(report.target.error.message, "0.5.15")
      }
    })
  )

  it.effect("a flag deprecated in the target names its successor; the target still accepts it", () =>
    Effect.gen(function* () {
      const report = yield* Upgrade.compare({
        argv: ["--model-path", "/m", "--cuda-graph-bs", "1", "2"],
        from: "0.5.13",
        to: "0.5.14"
      })
      const deprecated = report.flags.find((f) => f.kind === "deprecated")
      assert.strictEqual(deprecated?.replacement, "--cuda-graph-bs-decode")
      assert.strictEqual(report.target._tag, "Accepted")
    })
  )

  it.effect("a prefix that was unique becomes ambiguous: spell the flag out", () =>
    Effect.gen(function* () {
      const report = yield* Upgrade.compare({
        argv: ["--model-path", "/m", "--enable-dp"],
        from: "0.4.0",
        to: "0.5.11"
      })
      const ambiguous = report.flags.find((f) => f.kind === "ambiguous")
      assert.strictEqual(ambiguous?.replacement, "--enable-dp-attention")
      assert.strictEqual(report.target._tag, "Refused")
    })
  )

  it.effect("a spelling that became another flag's alias: renamed, naming the new flag", () =>
    Effect.gen(function* () {
      const report = yield* Upgrade.compare({
        argv: ["--model-path", "/m", "--grpc-http-sidecar-port", "9000"],
        from: "0.5.15",
        to: "main-2026-07-20"
      })
      assert.deepStrictEqual(kinds(report), [["--grpc-http-sidecar-port", "renamed"]])
      assert.strictEqual(report.flags[0]!.replacement, "--smg-http-sidecar-port")
    })
  )

  it.effect("choices that disappear and defaults that move are reported for the flags given", () =>
    Effect.gen(function* () {
      const report = yield* Upgrade.compare({
        argv: ["--model-path", "/m", "--speculative-algorithm", "EAGLE", "--schedule-policy", "lpm"],
        from: "0.4.3",
        to: "0.4.4"
      })
      assert.deepStrictEqual(kinds(report), [
        ["--speculative-algorithm", "choices"],
        ["--schedule-policy", "default"]
      ])
      assert.include(report.flags[0]!.message, "+NEXTN")
    })
  )

  it.effect(
    "between verified releases: the rules that start applying, and whether SGLang or the flags differ",
    () =>
      Effect.gen(function* () {
        const report = yield* Upgrade.compare({
          argv: storyArgv,
          from: "0.5.9",
          to: "0.5.11",
          modelConfig: qwen36_27b,
          gpus: { count: 2, computeCapability: "8.6", memoryGiB: 48 }
        })
        assert.isTrue(report.rulesCompared)
        const r24 = report.rules.find((r) => r.ruleId === "R24")
        assert.deepInclude(r24, {
          change: "starts",
          outcome: "violation",
          inRange: false,
          range: "0.5.10–0.5.13"
        })
        assert.strictEqual(report.rules[0]!.outcome, "violation")
        assert.strictEqual(report.target._tag, "Refused")
        if (report.target._tag === "Refused")
          assert.strictEqual(report.target.error._tag, "LaunchRulesViolated")
      })
  )

  it.effect("an unverified version: rules are not compared, and the report says so", () =>
    Effect.gen(function* () {
      const report = yield* Upgrade.compare({ argv: ["--model-path", "/m"], from: "0.5.11", to: "0.5.12" })
      assert.isFalse(report.rulesCompared)
      assert.deepStrictEqual(report.rules, [])
      assert.isTrue(report.notes.some((n) => n.includes("0.5.12") && n.includes("not verified")))
      assert.isTrue(report.notes.some((n) => n.includes("nearest shipped release 0.5.11")))
    })
  )

  it.effect("the command must parse for the version upgraded from", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Upgrade.compare({
          argv: ["--model-path", "/m", "--cuda-graph-bs-decode", "1"],
          from: "0.5.4",
          to: "0.5.15"
        })
      )
      assert.strictEqual(error._tag, "UnknownFlag")
    })
  )
})
