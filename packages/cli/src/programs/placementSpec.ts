/**
 * The placement a launch's command line asks for: each placement with options turns its own
 * into its spec (one entry per placement); none given: the host's entry decides; two
 * placements' options at once are a usage error.
 */
import type { Spec } from "@mlops/serve/Placement"
import { Effect, type Option } from "effect"
import type { placementOptions } from "../commands/placementOptions.js"
import { UsageError } from "../commands/shared.js"
import * as ContainerPlacementOptions from "./containerPlacement.js"
import * as SlurmPlacementOptions from "./slurmPlacement.js"

type Given = { readonly [K in keyof typeof placementOptions]: Option.Option<string> }

const builders: ReadonlyArray<(given: Given) => Effect.Effect<Spec | undefined, UsageError>> = [
  SlurmPlacementOptions.specOf,
  ContainerPlacementOptions.specOf
]

/** The spec the options give, or undefined when they give none. */
export const specOf = (given: Given): Effect.Effect<Spec | undefined, UsageError> =>
  Effect.gen(function* () {
    const specs = (yield* Effect.forEach(builders, (build) => build(given))).filter(
      (spec): spec is Spec => spec !== undefined
    )
    if (specs.length > 1) {
      return yield* new UsageError({
        message: `the options of several placements were given (${specs.map((s) => s.kind).join(", ")}): give one's`
      })
    }
    return specs[0]
  })
