/**
 * The runtimes the serving programs know, in order of preference: today a Python environment
 * on the host (configured or discovered). A service with this default: provide another
 * registry (`Effect.provideService(Runtimes.Runtimes, [...])`) to add a runtime. Adding one is
 * one module and one entry here.
 *
 * @since 0.1.0
 */
import type { HostConfig } from "@mlops/core/HostConfig"
import { Context, Effect } from "effect"
import * as PythonEnvRuntime from "./PythonEnvRuntime.js"
import * as Runtime from "./Runtime.js"

/** The built-in runtimes, in order. @category registries */
export const builtIn: Runtime.Registry = [PythonEnvRuntime.kind]

/** The registry the programs use. @category services */
export class Runtimes extends Context.Reference<Runtimes>()("@mlops/serve/Runtimes", {
  defaultValue: (): Runtime.Registry => builtIn
}) {}

/** The runtime for a launch on `host` (what `asked` names, else the first that applies). @category resolving */
export const resolve = (
  host: HostConfig,
  asked?: Runtime.Spec
): Effect.Effect<Runtime.Runtime, Runtime.InvalidRuntime> =>
  Effect.flatMap(Runtimes, (registry) => Runtime.resolve(registry, host, asked))
