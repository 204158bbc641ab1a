import { assert, describe, it } from "@effect/vitest"
import * as Rule from "../src/Rule.js"
import * as VersionRange from "../src/VersionRange.js"

const rule = (
  versions: VersionRange.VersionRange = VersionRange.make("0.5.11", null, "test"),
  step = 12,
  sub = 1
): Rule.Rule =>
  Rule.make({ id: "T", title: "t", versions, order: { step, sub }, kind: "adjust", check: () => undefined })

describe("Rule", () => {
  it("appliesTo: the releases of the rule's range, in release order, snapshots of main included", () => {
    const range = rule(VersionRange.make("0.5.9", "0.5.13", "test"))
    for (const v of ["0.5.9", "v0.5.10", "0.5.11", "main-2026-05-19", "0.5.12", "0.5.13"])
      assert.isTrue(Rule.appliesTo(range, v), v)
    for (const v of ["0.5.8", "0.5.14", "main-2026-07-20", "0.4.9", "latest"])
      assert.isFalse(Rule.appliesTo(range, v), v)
    const open = rule(VersionRange.make("0.5.11", null, "test"))
    assert.isTrue(Rule.appliesTo(open, "main-2026-07-20"))
    assert.isFalse(Rule.appliesTo(open, "0.5.10"))
  })

  it("stageOf maps section-1 steps to where the failure shows", () => {
    assert.strictEqual(Rule.stageOf({ step: 17, sub: 1 }), "server-args")
    assert.strictEqual(Rule.stageOf({ step: 19, sub: 1 }), "check-server-args")
    assert.strictEqual(Rule.stageOf({ step: 20, sub: 1 }), "model-init")
  })

  it("compare orders by step, then sub-order", () => {
    const sorted = [rule(undefined, 17, 2), rule(undefined, 12, 9), rule(undefined, 17, 1)].sort(Rule.compare)
    assert.deepStrictEqual(
      sorted.map((r) => [r.order.step, r.order.sub]),
      [
        [12, 9],
        [17, 1],
        [17, 2]
      ]
    )
  })

  it("toRecord keeps the evidence and derives the stage", () => {
    const v = Rule.violation({
      errorType: "AssertionError",
      message: "ours",
      engineMessage: "",
      sourceLine: "assert x",
      fields: ["tp_size"],
      fix: { tp_size: 2 },
      alternatives: [{ tp_size: 1 }]
    })
    assert.deepStrictEqual(Rule.toRecord(rule(undefined, 19, 3), v), {
      _tag: "AssertionFailure",
      ruleId: "T",
      title: "t",
      stage: "check-server-args",
      errorType: "AssertionError",
      message: "ours",
      engineMessage: "",
      sourceLine: "assert x",
      fields: ["tp_size"],
      fix: { set: { tp_size: 2 }, alternatives: [{ tp_size: 1 }] }
    })
  })
})
