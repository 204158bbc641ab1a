/**
 * The story of issue 3 §2, as one shared fixture: a Qwen3.6-27B-like hybrid GDN model with one
 * MTP layer, on 2x RTX A6000 (48 GB, SM86), launched with
 * `--speculative-algorithm NEXTN --speculative-num-draft-tokens 1 --tp 2`. SGLang 0.5.11 fails
 * it twice (the mamba/radix-cache ValueError, then the bare assertion); both fixes resolve it.
 */

import * as ModelTraits from "@mlops/serve/ModelTraits"
import { qwen36_27b } from "@mlops/serve/SampleModels"
import { Either } from "effect"
import type * as Rule from "../../src/Rule.js"

export const storyModelPath = "/root/models/Qwen3.6-27B"

/** The command of the incident (flags only). */
export const storyArgv = [
  "--model-path",
  storyModelPath,
  "--speculative-algorithm",
  "NEXTN",
  "--speculative-num-draft-tokens",
  "1",
  "--tp",
  "2"
] as const

/** The fix of the first failure (R24), and of the second (R12). */
export const mambaFix = ["--mamba-scheduler-strategy", "extra_buffer"] as const
export const tripleFix = ["--speculative-num-steps", "1", "--speculative-eagle-topk", "1"] as const

/** The incident command with both fixes: resolves to EAGLE 1/1/2 with 48 running requests. */
export const fixedArgv = [...storyArgv, ...mambaFix, ...tripleFix] as const

/** The model's config.json (hand-written from model-config.md, nothing downloaded). */
export const storyConfig = qwen36_27b

export const storyTraits: ModelTraits.ModelTraits = Either.getOrThrow(
  ModelTraits.fromConfigEither(qwen36_27b)
)

/** Two RTX A6000: 49140 MiB each, compute capability 8.6. */
export const a6000x2: Rule.Gpus = { count: 2, computeCapability: "8.6", memoryMiB: 49140 }

/** Traits + GPUs + an empty environment (SGLANG_ENABLE_SPEC_V2 at its default, true) + 0.5.11. */
export const storyContext: Rule.ResolveContext = {
  traits: storyTraits,
  gpus: a6000x2,
  env: {},
  version: "0.5.11"
}
