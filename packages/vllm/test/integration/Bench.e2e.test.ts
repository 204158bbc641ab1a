/**
 * `Bench` over a real sshd against the stand-in vLLM with n-gram speculation: its streams are
 * paced as its docstring says (its own Python, not mlops' sim), and the acceptance length comes
 * from vLLM's spec_decode counters over the run (1 + accepted / drafts), worked out here by hand.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import * as Bench from "@mlops/serve/Bench"
import * as Launch from "@mlops/serve/Launch"
import * as Stop from "@mlops/serve/Stop"
import { Effect } from "effect"
import { VllmEngine } from "../../src/Engine.js"

import { alias, E2E, freePort, TestLayer } from "./support.js"

describe("vLLM Bench end to end (real sshd, stand-in vLLM)", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.scoped(
      "tokens/s and ITL at the stand-in's pace; acceptance length from the spec_decode counters",
      () =>
        Effect.gen(function* () {
          const { standin } = yield* E2E
          const port = yield* freePort
          const name = `vllm-bench-${process.pid}-${Date.now().toString(36)}`
          yield* Effect.addFinalizer(() =>
            Effect.ignore(Stop.stop(alias, name)).pipe(
              Effect.andThen(() =>
                fs.rmSync(path.join(standin.stateDir, "deployments", name), { recursive: true, force: true })
              )
            )
          )
          yield* Launch.launchDeployment({
            host: alias,
            engine: VllmEngine,
            name,
            argv: [
              standin.modelPath,
              "--host",
              "127.0.0.1",
              "--port",
              String(port),
              "--max-model-len",
              "8192",
              "--speculative-config",
              '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'
            ],
            env: {
              STANDIN_PHASE_SECONDS: "0.02",
              STANDIN_STEP_MS: "20",
              STANDIN_ACCEPT_RATE: "0.5",
              STANDIN_BATCH_SLOWDOWN: "0"
            }
          })
          const result = yield* Bench.run(alias, name, [VllmEngine], {
            concurrency: [1, 4],
            requests: 8,
            outputTokens: 32,
            inputTokens: 16
          })
          // 3 draft tokens at a = 0.5: 1 + 0.5 + 0.25 + 0.125 = 1.875 tokens a step of 20 × (1 +
          // 0.15 × 3) = 29 ms; 32 tokens = the prefill's 1 + 17 steps (1 + ⌊17 × 1.875⌋ ≥ 32):
          // 18 × 29 ms a request, and 31 tokens in 17 verify steps: 1 + 14 / 17 = 1.824
          const step = 29
          const alone = 32 / ((18 * step) / 1000)
          const [one, four] = result.levels
          assert.deepStrictEqual(
            result.levels.map((l) => [l.concurrency, l.completed, l.errors, l.outputTokens]),
            [
              [1, 8, 0, 256],
              [4, 8, 0, 256]
            ]
          )
          assert.isAtMost(one!.outputTokensPerS, alone * 1.05)
          assert.isAtLeast(one!.outputTokensPerS, alone * 0.6)
          assert.isAtMost(four!.outputTokensPerS, 4 * alone * 1.05)
          assert.isAtLeast(four!.outputTokensPerS, 4 * alone * 0.4)
          assert.isAtLeast(one!.itlMs.p50!, step * 0.95)
          assert.isAtMost(one!.itlMs.p50!, step * 1.8)
          assert.closeTo(one!.acceptLength!, 1 + 14 / 17, 1e-9)
          assert.closeTo(four!.acceptLength!, 1 + 14 / 17, 1e-9)
          assert.strictEqual(four!.engineGenerationTokens, 256)
          assert.deepStrictEqual(result.notes, [])
        })
    )
  })
})
