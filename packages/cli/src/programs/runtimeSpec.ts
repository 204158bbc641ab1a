/**
 * The runtime a command line asks for: each runtime with options turns its own into its spec
 * (one entry per runtime: `--python P`, a Python environment; `--image I [--runtime docker|podman]
 * [--pull never|missing|always]`, a container image); none given: the host's entry and discovery
 * decide; two runtimes' options at once are a usage error.
 */
import * as ImageRuntime from "@mlops/serve/ImageRuntime"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import type { Spec } from "@mlops/serve/Runtime"
import { Effect, Option } from "effect"
import { UsageError } from "../commands/shared.js"

/** The options runtimes read (a command without the image options gives none of them). */
export interface Given {
  readonly python: Option.Option<string>
  readonly image?: Option.Option<string>
  readonly containerRuntime?: Option.Option<"docker" | "podman">
  readonly pull?: Option.Option<"never" | "missing" | "always">
}

const value = <A>(option: Option.Option<A> | undefined): A | undefined =>
  option === undefined ? undefined : Option.getOrUndefined(option)

const builders: ReadonlyArray<(given: Given) => Spec | undefined> = [
  (given) => (Option.isSome(given.python) ? PythonEnvRuntime.spec(given.python.value) : undefined),
  (given) => {
    const image = value(given.image)
    const tool = value(given.containerRuntime)
    const pull = value(given.pull)
    // --runtime or --pull alone: the host's hosts.json `image`, run that way
    return image === undefined && tool === undefined && pull === undefined
      ? undefined
      : ImageRuntime.spec({
          ...(image === undefined ? {} : { image }),
          ...(tool === undefined ? {} : { tool }),
          ...(pull === undefined ? {} : { pull })
        })
  }
]

/** The spec the options give, or undefined when they give none. */
export const specOf = (given: Given): Effect.Effect<Spec | undefined, UsageError> =>
  Effect.suspend(() => {
    const specs = builders.map((build) => build(given)).filter((spec): spec is Spec => spec !== undefined)
    if (specs.length > 1)
      return Effect.fail(
        new UsageError({
          message:
            "--python and --image name two ways to run the engine: give one (--python for a Python environment on the host, --image for a container image)"
        })
      )
    return Effect.succeed(specs[0])
  })
