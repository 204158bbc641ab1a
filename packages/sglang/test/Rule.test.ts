import { assert, describe, it } from "@effect/vitest"
import * as Rule from "../src/Rule.js"

const rule = (versions: ReadonlyArray<string>, step = 12, sub = 1): Rule.Rule =>
  Rule.make({ id: "T", title: "t", versions, order: { step, sub }, kind: "adjust", check: () => undefined })

describe("Rule", () => {
  it("appliesTo matches exact versions, v-prefixes, post releases and x.y.* ranges", () => {
    assert.isTrue(Rule.appliesTo(rule(["0.5.11"]), "0.5.11"))
    assert.isTrue(Rule.appliesTo(rule(["0.5.11"]), "v0.5.11.post1"))
    assert.isFalse(Rule.appliesTo(rule(["0.5.11"]), "0.5.12"))
    assert.isTrue(Rule.appliesTo(rule(["0.5.*"]), "0.5.12"))
    assert.isFalse(Rule.appliesTo(rule(["0.5.*"]), "0.6.0"))
  })

  it("stageOf maps section-1 steps to where the failure shows", () => {
    assert.strictEqual(Rule.stageOf({ step: 17, sub: 1 }), "server-args")
    assert.strictEqual(Rule.stageOf({ step: 19, sub: 1 }), "check-server-args")
    assert.strictEqual(Rule.stageOf({ step: 20, sub: 1 }), "model-init")
  })

  it("compare orders by step, then sub-order", () => {
    const sorted = [rule([], 17, 2), rule([], 12, 9), rule([], 17, 1)].sort(Rule.compare)
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
      sglangMessage: "",
      sourceLine: "assert x",
      fields: ["tp_size"],
      fix: { tp_size: 2 },
      alternatives: [{ tp_size: 1 }]
    })
    assert.deepStrictEqual(Rule.toRecord(rule(["0.5.11"], 19, 3), v), {
      _tag: "AssertionFailure",
      ruleId: "T",
      title: "t",
      stage: "check-server-args",
      errorType: "AssertionError",
      message: "ours",
      sglangMessage: "",
      sourceLine: "assert x",
      fields: ["tp_size"],
      fix: { set: { tp_size: 2 }, alternatives: [{ tp_size: 1 }] }
    })
  })
})
