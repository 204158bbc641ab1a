/**
 * The Qwen3.6-27B story as a library call on the simulated host `sim`: launch with the
 * incident's flags and handle the two typed failures with `catchTags`:
 * `MissingSchedulerStrategy` (the mamba radix-cache ValueError) and `AssertionFailure` (the
 * bare speculative assert). Each carries the flags that fix it; SGLang's parser keeps the last
 * value of a repeated flag, so appending them is enough.
 *
 * The same handler works whether mlops' offline check finds a problem before anything starts
 * (`Violations.asLaunchFailure` turns `LaunchRulesViolated` into its first typed failure, with
 * `ruleId` set) or SGLang meets it at runtime (`preflight: false`: classified from its log).
 *
 *   npx tsx examples/launch-qwen.ts            # found by preflight, before any GPU time
 *   npx tsx examples/launch-qwen.ts --runtime  # met by SGLang, one launch at a time
 */

import { pathToFileURL } from "node:url"
import type { Fix } from "@mlops/serve/Failures"
import * as Launch from "@mlops/serve/Launch"
import * as Violations from "@mlops/serve/Violations"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
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
  /** The failures met on the way, in order (`_tag`, and the rule id when preflight found it). */
  readonly failures: ReadonlyArray<string>
  readonly foundBy: ReadonlyArray<"preflight" | "log">
  /** The flags that finally reached ready. */
  readonly argv: ReadonlyArray<string>
  readonly url: string
}

export const main = (options: { readonly preflight: boolean } = { preflight: true }) =>
  Effect.gen(function* () {
    let argv = storyArgv
    const failures: Array<string> = []
    const foundBy: Array<"preflight" | "log"> = []
    for (let attempt = 0; attempt < 3; attempt++) {
      const outcome = yield* Launch.launchDeployment({
        engine: SglangEngine.engine,
        host: Simulator.alias,
        name: "qwen36",
        argv,
        preflight: options.preflight,
        replace: true
      }).pipe(
        Violations.asLaunchFailure,
        Effect.map((deployment) => ({ _tag: "Ready" as const, deployment })),
        Effect.catchTags({
          MissingSchedulerStrategy: (failure) => Effect.succeed({ _tag: "Fixable" as const, failure }),
          AssertionFailure: (failure) => Effect.succeed({ _tag: "Fixable" as const, failure })
        })
      )
      if (outcome._tag === "Ready")
        return { failures, foundBy, argv, url: outcome.deployment.url } satisfies StoryResult
      const { failure } = outcome
      const by = failure.ruleId === undefined ? "log" : "preflight"
      yield* Console.log(
        `${failure._tag} (found by ${by}${failure.ruleId ? `, rule ${failure.ruleId}` : ""}): ${failure.reason}`
      )
      failures.push(failure._tag)
      foundBy.push(by)
      argv = withFix(argv, failure.fix)
    }
    return yield* Effect.dieMessage(`still failing after fixes: ${failures.join(", ")}`)
  })

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main({ preflight: !process.argv.includes("--runtime") }).pipe(
    Effect.tap((result) => Console.log(JSON.stringify(result, null, 2))),
    Effect.provide(Simulator.layer),
    Effect.runPromise
  )
}
