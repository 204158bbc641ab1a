/**
 * `mlops bench` on the sim across invocations, as a user types it: a launched deployment
 * benchmarked at two concurrencies (JSON with every figure), the result saved and used as the
 * baseline of a second run (the table and what moved), and the command lines it refuses.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ExitCode } from "../src/ExitCodes.js"
import { session } from "./support/run.js"

// the README's fixed command, with the engine's metrics on
const flags = [
  "--model-path",
  "/root/models/Qwen3.6-27B",
  "--speculative-algorithm",
  "NEXTN",
  "--speculative-num-draft-tokens",
  "1",
  "--tp-size",
  "2",
  "--mamba-scheduler-strategy",
  "extra_buffer",
  "--speculative-num-steps",
  "1",
  "--speculative-eagle-topk",
  "1",
  "--enable-metrics"
]

interface Level {
  readonly concurrency: number
  readonly completed: number
  readonly errors: number
  readonly outputTokens: number
  readonly outputTokensPerS: number
  readonly ttftMs: { readonly p50: number }
  readonly itlMs: { readonly p50: number }
  readonly acceptLength: number
}

describe("mlops bench", () => {
  it.live(
    "benchmarks a running deployment per concurrency, then compares a second run with the saved first",
    () =>
      Effect.gen(function* () {
        const user = session()
        const up = yield* user.mlops("launch", "--host", "sim", "--name", "q", "--", ...flags)
        assert.strictEqual(up.code, 0, up.text)
        const first = yield* user.mlops(
          "bench",
          "--host",
          "sim",
          "--name",
          "q",
          "--concurrency",
          "1,4",
          "--requests",
          "4",
          "--output-len",
          "16",
          "--json"
        )
        assert.strictEqual(first.code, 0, first.text)
        const result = JSON.parse(first.stdout.join("\n")) as { levels: ReadonlyArray<Level>; model: string }
        assert.deepStrictEqual(
          result.levels.map((l) => [l.concurrency, l.completed, l.errors, l.outputTokens]),
          [
            [1, 4, 0, 64],
            [4, 4, 0, 64]
          ]
        )
        for (const level of result.levels) {
          assert.isAbove(level.outputTokensPerS, 0)
          assert.isAbove(level.ttftMs.p50, 0)
          // EAGLE 1/1/2 at the sim's default 70% acceptance: at most 1.7 tokens a step
          assert.isAbove(level.acceptLength, 1.4)
          assert.isAtMost(level.acceptLength, 1.7)
        }
        const saved = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "mlops-bench-")), "base.json")
        fs.writeFileSync(saved, first.stdout.join("\n"))
        const second = yield* user.mlops(
          "bench",
          "--host",
          "sim",
          "--name",
          "q",
          "--concurrency",
          "1,4",
          "--requests",
          "4",
          "--output-len",
          "16",
          "--baseline",
          saved
        )
        assert.strictEqual(second.code, 0, second.text)
        assert.match(
          second.stdout[0] ?? "",
          /^q on sim \(sglang 0\.5\.11, \/root\/models\/Qwen3\.6-27B, 128 words in \/ 16 tokens out\)/
        )
        assert.match(second.stdout[1] ?? "", /conc\s+reqs\s+err\s+tok\/s\s+req\/s\s+TTFT p50\/p99 ms/)
        assert.match(second.text, /vs the baseline of \d{4}-\d\d-\d\dT/)
      }),
    60_000
  )

  it.live("refuses what it cannot run, naming the option, file or deployment", () =>
    Effect.gen(function* () {
      const user = session()
      const bad = yield* user.mlops("bench", "--host", "sim", "--name", "q", "--concurrency", "1,x")
      assert.strictEqual(bad.code, ExitCode.Usage)
      assert.match(
        bad.text,
        /--concurrency takes positive whole numbers separated by commas \(1,8,32\), not "x" in "1,x"/
      )
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-bench-"))
      const notResult = path.join(dir, "other.json")
      fs.writeFileSync(notResult, '{"host": "sim"}')
      const baseline = yield* user.mlops("bench", "--host", "sim", "--name", "q", "--baseline", notResult)
      assert.strictEqual(baseline.code, ExitCode.Usage)
      assert.include(baseline.text, `--baseline ${notResult} is not a saved \`mlops bench --json\` result`)
      const prompts = path.join(dir, "prompts.jsonl")
      fs.writeFileSync(prompts, '{"prompt": "hello"}\n{"messages": []}\n')
      const badPrompts = yield* user.mlops("bench", "--host", "sim", "--name", "q", "--prompts", prompts)
      assert.strictEqual(badPrompts.code, ExitCode.Usage)
      assert.include(badPrompts.text, `${prompts} line 2 has no prompt`)
      const missing = yield* user.mlops("bench", "--host", "sim", "--name", "nothing-here")
      assert.strictEqual(missing.code, ExitCode.Usage)
      assert.match(missing.text, /DeploymentNotFound/)
    })
  )
})
