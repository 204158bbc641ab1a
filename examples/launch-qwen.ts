/**
 * The Qwen3.6-27B story as a library call on the simulated host `sim`: launch with the
 * incident's flags and preflight off, so SGLang itself meets the problems one at a time, and
 * handle the two typed failures with `catchTags`: `MissingSchedulerStrategy` (the mamba
 * radix-cache ValueError) and `AssertionFailure` (the bare speculative assert). Each carries
 * the flags that fix it; SGLang's parser keeps the last value of a repeated flag, so appending
 * them is enough.
 *
 *   npx tsx examples/launch-qwen.ts
 */

import { pathToFileURL } from "node:url"
import type { Fix } from "@mlops/sglang/Failures"
import * as Launch from "@mlops/sglang/Launch"
import * as Simulator from "@mlops/sglang/Simulator"
import { Console, Effect } from "effect"

export const storyArgv: ReadonlyArray<string> = [
  "--model-path",
  Simulator.modelPath,
  "--speculative-algorithm",
  "NEXTN",
  "--speculative-num-draft-tokens",
  "1",
  "--tp",
  "2"
]

const withFix = (argv: ReadonlyArray<string>, fix: Fix | undefined): ReadonlyArray<string> => [
  ...argv,
  ...Object.entries(fix?.flags ?? {}).flatMap(([flag, value]) =>
    value === null ? [flag] : [flag, String(value)]
  )
]

export interface StoryResult {
  /** The failures met on the way, in order. */
  readonly failures: ReadonlyArray<string>
  /** The flags that finally reached ready. */
  readonly argv: ReadonlyArray<string>
  readonly url: string
}

export const main = Effect.gen(function* () {
  let argv = storyArgv
  const failures: Array<string> = []
  for (let attempt = 0; attempt < 3; attempt++) {
    const outcome = yield* Launch.launchDeployment({
      host: Simulator.alias,
      name: "qwen36",
      argv,
      preflight: false,
      replace: true
    }).pipe(
      Effect.map((deployment) => ({ _tag: "Ready" as const, deployment })),
      Effect.catchTags({
        MissingSchedulerStrategy: (failure) => Effect.succeed({ _tag: "Fixable" as const, failure }),
        AssertionFailure: (failure) => Effect.succeed({ _tag: "Fixable" as const, failure })
      })
    )
    if (outcome._tag === "Ready") return { failures, argv, url: outcome.deployment.url } satisfies StoryResult
    yield* Console.log(`${outcome.failure._tag}: ${outcome.failure.reason}`)
    failures.push(outcome.failure._tag)
    argv = withFix(argv, outcome.failure.fix)
  }
  return yield* Effect.dieMessage(`still failing after fixes: ${failures.join(", ")}`)
})

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main.pipe(
    Effect.tap((result) => Console.log(JSON.stringify(result, null, 2))),
    Effect.provide(Simulator.layer),
    Effect.runPromise
  )
}
