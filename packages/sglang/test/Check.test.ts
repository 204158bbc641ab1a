import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { qwen36_27b } from "@mlops/serve/SampleModels"
import { Effect } from "effect"
import * as Check from "../src/Check.js"
import * as Simulator from "../src/Simulator.js"
import { fixedArgv, storyArgv } from "./support/sim.js"

const a6000x2 = { count: 2, computeCapability: "8.6", memoryGiB: 48 }

describe("Check", () => {
  it("documents the offline GPU defaults: one H100 80 GB", () => {
    assert.deepStrictEqual(Check.defaultGpus, { count: 1, computeCapability: "9.0", memoryGiB: 80 })
  })

  it.effect("offline: the story's command lists both problems with the fixed command", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Check.offline({ argv: storyArgv, modelConfig: qwen36_27b, gpus: a6000x2 })
      )
      assert.strictEqual(error._tag, "LaunchRulesViolated")
      if (error._tag !== "LaunchRulesViolated") return
      assert.lengthOf(error.violations, 2)
      assert.include(error.fixedArgv ?? [], "extra_buffer")
    })
  )

  it.effect("offline: the fixed command resolves to EAGLE 1/1/2 with 48 running requests", () =>
    Effect.gen(function* () {
      const result = yield* Check.offline({
        argv: fixedArgv,
        modelConfig: JSON.stringify(qwen36_27b),
        gpus: a6000x2
      })
      assert.strictEqual(result.version, "0.5.11")
      assert.strictEqual(result.effective.speculative_algorithm, "EAGLE")
      assert.strictEqual(result.effective.speculative_num_draft_tokens, 2)
      assert.strictEqual(result.effective.max_running_requests, 48)
      assert.include(
        result.adjustments,
        "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests."
      )
    })
  )

  it.effect("offline from a local config.json file", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-check-"))
      const configPath = path.join(dir, "config.json")
      fs.writeFileSync(configPath, JSON.stringify(qwen36_27b))
      const error = yield* Effect.flip(Check.localConfig({ argv: storyArgv, configPath, gpus: a6000x2 }))
      fs.rmSync(dir, { recursive: true })
      assert.strictEqual(error._tag, "LaunchRulesViolated")
    }).pipe(Effect.provide(NodeFileSystem.layer))
  )

  it.effect("against a host: probes the sim and resolves", () =>
    Effect.gen(function* () {
      const result = yield* Check.host({ host: "sim", argv: fixedArgv })
      assert.strictEqual(result.effective.tp_size, 2)
      const error = yield* Effect.flip(Check.host({ host: "sim", argv: storyArgv }))
      assert.strictEqual(error._tag, "LaunchRulesViolated")
    }).pipe(Effect.provide(Simulator.layer))
  )
})
