/**
 * Literal rule inputs for the per-rule tests: defaults + the given fields, 2x A6000 unless said.
 */
import { assert } from "@effect/vitest"
import * as ModelTraits from "@mlops/serve/ModelTraits"
import { deepseekV3, llama3_8b, qwen3Next80bA3b } from "@mlops/serve/SampleModels"
import { Either } from "effect"
import type * as Rule from "../../src/Rule.js"
import * as ServerArgs from "../../src/ServerArgs.js"
import { a6000x2, storyTraits } from "../support/story.js"

const traitsOf = (config: unknown): ModelTraits.ModelTraits =>
  Either.getOrThrow(ModelTraits.fromConfigEither(config))

export const qwen36 = storyTraits
export const qwenNext = traitsOf(qwen3Next80bA3b)
export const llama = traitsOf(llama3_8b)
export const deepseek = traitsOf(deepseekV3)

export { a6000x2 }
export const h100x8: Rule.Gpus = { count: 8, computeCapability: "9.0", memoryMiB: 81559 }
export const b200x8: Rule.Gpus = { count: 8, computeCapability: "10.0", memoryMiB: 183359 }

/** A rule input: CLI defaults plus `given` (all counted as explicit). */
export const input = (
  given: Partial<ServerArgs.ServerArgs> = {},
  context: Partial<Omit<Rule.RuleInput, "args">> = {}
): Rule.RuleInput => ({
  traits: undefined,
  gpus: a6000x2,
  env: {},
  version: "0.5.11",
  explicit: new Set(Object.keys(given)),
  ...context,
  args: ServerArgs.make({ model_path: "/root/models/m", ...given })
})

/** The outcome, asserted to be a violation. */
export const violation = (outcome: Rule.Outcome | undefined): Rule.Violation => {
  assert.strictEqual(outcome?._tag, "Violation")
  return outcome as Rule.Violation
}

/** The outcome, asserted to be an adjustment. */
export const adjust = (outcome: Rule.Outcome | undefined): Rule.Adjust => {
  assert.strictEqual(outcome?._tag, "Adjust")
  return outcome as Rule.Adjust
}

/** The outcome, asserted to be a log-only warning. */
export const warning = (outcome: Rule.Outcome | undefined): Rule.Warning => {
  assert.strictEqual(outcome?._tag, "Warning")
  return outcome as Rule.Warning
}
