import { assert, describe, it } from "@effect/vitest"
import type { ViolationRecord } from "@mlops/serve/Violations"
import { violationFix } from "../../src/internal/violationFix.js"

describe("violationFix", () => {
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
