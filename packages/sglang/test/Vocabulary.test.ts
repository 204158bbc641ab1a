/**
 * One failure vocabulary before and after the start: each offline rule violation carries the
 * `_tag` the log classifier gives SGLang's exception for it, and a library user catches either
 * with the same `catchTag`.
 */

import { assert, describe, it } from "@effect/vitest"
import * as Violations from "@mlops/serve/Violations"
import { Effect, Either, FastCheck as fc } from "effect"
import * as Argv from "../src/Argv.js"
import * as Tracebacks from "../src/internal/sim/tracebacks.js"
import * as Resolve from "../src/Resolve.js"
import * as Simulator from "../src/Simulator.js"
import { arbitraryServerArgs } from "./arbitraryServerArgs.js"
import * as Classifier from "./support/classifier.js"
import * as Serving from "./support/serving.js"
import { drive, fixedArgv, storyArgv } from "./support/sim.js"
import { storyContext, storyTraits } from "./support/story.js"

const env = { SGLANG_ENABLE_SPEC_V2: "1" }

const storyViolations = (): Violations.LaunchRulesViolated => {
  const decoded = Effect.runSync(Argv.decodeArgv(storyArgv))
  const result = Resolve.resolveEither(decoded.args, decoded.explicit, storyContext)
  if (Either.isRight(result)) return assert.fail("the story's command resolved")
  return result.left
}

describe("one vocabulary", () => {
  it("the story's offline check names MissingSchedulerStrategy, then AssertionFailure", () => {
    const error = storyViolations()
    assert.deepStrictEqual(
      error.violations.map((v) => [v._tag, v.ruleId]),
      [
        ["MissingSchedulerStrategy", "R24"],
        ["AssertionFailure", "R12"]
      ]
    )
    const failures = error.failures
    assert.deepStrictEqual(
      failures.map((f) => f._tag),
      ["MissingSchedulerStrategy", "AssertionFailure"]
    )
    const first = Violations.firstFailure(error)
    assert.strictEqual(first._tag, "MissingSchedulerStrategy")
    assert.strictEqual(first.ruleId, "R24")
    if (first._tag === "MissingSchedulerStrategy")
      assert.strictEqual(first.architecture, storyTraits.architecture)
    assert.deepStrictEqual(first.fix?.flags, { "--mamba-scheduler-strategy": "extra_buffer" })
    const second = failures[1]!
    assert.strictEqual(second._tag, "AssertionFailure")
    if (second._tag === "AssertionFailure") assert.include(second.source, "speculative_eagle_topk")
    // the human text names the tag of each problem
    assert.include(error.message, "1. MissingSchedulerStrategy [R24]")
    assert.include(error.message, "2. AssertionFailure [R12]")
  })

  it.effect("catchTag(MissingSchedulerStrategy) fires when preflight finds it", () =>
    Effect.gen(function* () {
      const caught = yield* drive(
        Serving.launchDeployment({ host: "sim", argv: storyArgv, env }).pipe(
          Violations.asLaunchFailure,
          Effect.map(() => "launched"),
          Effect.catchTag("MissingSchedulerStrategy", (failure) => Effect.succeed(`caught ${failure.ruleId}`))
        )
      )
      assert.strictEqual(caught, "caught R24")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("the same catchTag fires when SGLang's log shows it (preflight off)", () =>
    Effect.gen(function* () {
      const caught = yield* drive(
        Serving.launchDeployment({ host: "sim", argv: storyArgv, env, preflight: false }).pipe(
          Violations.asLaunchFailure,
          Effect.map(() => "launched"),
          Effect.catchTag("MissingSchedulerStrategy", (failure) =>
            Effect.succeed(`caught ${failure.ruleId ?? "from the log"}`)
          )
        )
      )
      assert.strictEqual(caught, "caught from the log")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("asLaunchFailure leaves a launch that succeeds alone", () =>
    Effect.gen(function* () {
      const deployment = yield* drive(
        Serving.launchDeployment({ host: "sim", argv: fixedArgv, env }).pipe(Violations.asLaunchFailure)
      )
      assert.strictEqual(deployment.phases.at(-1)?.phase, "ready")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it("every violation's _tag is what the classifier calls SGLang's exception for it", () => {
    // sampled rather than asserted as a property: a shrinking run re-resolves thousands of args
    const samples = fc.sample(arbitraryServerArgs(), { numRuns: 200, seed: 7 })
    const mismatches: Array<string> = []
    let checked = 0
    for (const args of samples) {
      const result = Resolve.resolveEither(args.args, args.given, storyContext)
      if (Either.isRight(result)) continue
      for (const v of result.left.violations) {
        const lines = Tracebacks.violation(v, storyTraits.architecture)
        const { failure } = Classifier.classifyText(lines.join("\n"), { exitCode: 1 })
        checked++
        if (failure?._tag !== v._tag)
          mismatches.push(`${v.ruleId} ${v._tag} -> ${failure?._tag}: ${v.engineMessage}`)
      }
    }
    assert.deepStrictEqual([...new Set(mismatches)], [])
    assert.isAbove(checked, 20)
  })
})
