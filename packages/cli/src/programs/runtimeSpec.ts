/**
 * The runtime a command line asks for: each runtime with options turns its own into its spec
 * (one entry per runtime; today `--python P`, a Python environment); none given: the host's entry
 * and discovery decide.
 */
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import type { Spec } from "@mlops/serve/Runtime"
import { Option } from "effect"

/** The options runtimes read. */
export interface Given {
  readonly python: Option.Option<string>
}

const builders: ReadonlyArray<(given: Given) => Spec | undefined> = [
  (given) => (Option.isSome(given.python) ? PythonEnvRuntime.spec(given.python.value) : undefined)
]

/** The spec the options give, or undefined when they give none. */
export const specOf = (given: Given): Spec | undefined =>
  builders.map((build) => build(given)).find((spec) => spec !== undefined)
