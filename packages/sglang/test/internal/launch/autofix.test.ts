import { assert, describe, it } from "@effect/vitest"
import { applyFix, violationFix } from "../../../src/internal/launch/autofix.js"
import type { ViolationRecord } from "../../../src/Rule.js"

describe("autofix", () => {
  it("sets a flag given under another spelling, keeping everything else in place", () => {
    assert.deepStrictEqual(
      applyFix(["--model-path", "/m", "--tp", "2", "--port=31000"], { flags: { "--tp-size": 1 } }),
      ["--model-path", "/m", "--port=31000", "--tp-size", "1"]
    )
  })

  it("adds switches, drops flags with their values, and splits list values", () => {
    assert.deepStrictEqual(
      applyFix(["--model-path", "/m", "--mem-fraction-static", "0.99", "--cuda-graph-bs", "1", "2"], {
        flags: { "--disable-cuda-graph": null, "--cuda-graph-bs": "4 8" },
        removeFlags: ["--mem-fraction-static"]
      }),
      ["--model-path", "/m", "--disable-cuda-graph", "--cuda-graph-bs", "4", "8"]
    )
  })

  it("has nothing to apply without flags", () => {
    assert.isUndefined(applyFix(["--model-path", "/m"], { action: "free some GPU memory" }))
    assert.isUndefined(applyFix(["--model-path", "/m"], undefined))
  })

  it("turns a rule violation's field fix into flags", () => {
    const violation: ViolationRecord = {
      _tag: "MissingSchedulerStrategy",
      ruleId: "R24",
      title: "t",
      stage: "server-args",
      errorType: "ValueError",
      message: "m",
      engineMessage: "s",
      fields: ["mamba_scheduler_strategy"],
      fix: { set: { mamba_scheduler_strategy: "extra_buffer", disable_radix_cache: false }, alternatives: [] }
    }
    assert.deepStrictEqual(violationFix(violation), {
      flags: { "--mamba-scheduler-strategy": "extra_buffer" },
      removeFlags: ["--disable-radix-cache"]
    })
  })
})
