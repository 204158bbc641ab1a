/**
 * The speculative + mamba corner of the rules against an oracle written from rules.md alone:
 * for every combination of the three speculative numbers, the strategy and the radix cache,
 * on the Qwen3.6-27B-like model and 2x A6000.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import * as Resolve from "../src/Resolve.js"
import * as ServerArgs from "../src/ServerArgs.js"
import { storyContext as ctx, storyModelPath } from "./support/story.js"

const optional = <A>(arb: fc.Arbitrary<A>) => fc.option(arb, { nil: null })
const launch = fc.record({
  speculative_num_steps: optional(fc.integer({ min: 1, max: 5 })),
  speculative_eagle_topk: optional(fc.constantFrom(1, 2, 4)),
  speculative_num_draft_tokens: optional(fc.integer({ min: 1, max: 8 })),
  mamba_scheduler_strategy: fc.constantFrom("auto" as const, "no_buffer" as const, "extra_buffer" as const),
  disable_radix_cache: fc.boolean()
})

/** What rules.md says SGLang reports, one launch at a time. */
const expectedViolations = (l: typeof launch extends fc.Arbitrary<infer A> ? A : never): Array<string> => {
  const out: Array<string> = []
  if (l.mamba_scheduler_strategy === "extra_buffer" && l.disable_radix_cache) out.push("R22")
  else if (l.mamba_scheduler_strategy !== "extra_buffer" && !l.disable_radix_cache) out.push("R24")
  if (l.speculative_num_steps === null) {
    if (l.speculative_eagle_topk !== null || l.speculative_num_draft_tokens !== null) out.push("R12")
  } else if (l.speculative_eagle_topk === null) out.push("R12.topk-missing")
  return out
}

describe("Resolve properties (NEXTN on a hybrid GDN model)", () => {
  it.prop("violations match the rules.md oracle and the combined fix always resolves", [launch], ([l]) => {
    const given = {
      model_path: storyModelPath,
      speculative_algorithm: "NEXTN" as const,
      tp_size: 2,
      ...l
    }
    const explicit = new Set(
      Object.entries(given)
        .filter(([, v]) => v !== null && v !== false)
        .map(([k]) => k)
    )
    const result = Resolve.resolveEither(ServerArgs.make(given), explicit, ctx)
    const expected = expectedViolations(l)
    if (expected.length === 0) {
      assert.isTrue(Either.isRight(result))
      if (!Either.isRight(result)) return
      const e = result.right.effective
      assert.strictEqual(e.speculative_algorithm, "EAGLE")
      assert.strictEqual(e.max_running_requests, 48)
      if (e.speculative_eagle_topk === 1) {
        assert.strictEqual(e.speculative_num_draft_tokens, e.speculative_num_steps! + 1)
      }
      return
    }
    assert.isTrue(Either.isLeft(result))
    if (!Either.isLeft(result)) return
    assert.deepStrictEqual(
      result.left.violations.map((v) => v.ruleId),
      expected
    )
    assert.isTrue(result.left.resolvesAfterFix)
    const fixed = Resolve.resolveEither(
      ServerArgs.make({ ...given, ...result.left.fix } as typeof given),
      new Set([...explicit, ...Object.keys(result.left.fix)]),
      ctx
    )
    assert.isTrue(Either.isRight(fixed))
  })
})
