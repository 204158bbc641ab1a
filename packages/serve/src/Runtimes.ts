/**
 * The runtimes the serving programs know, in order of preference: a container image (hosts
 * whose hosts.json entry names an `image`, or a launch given one), then a Python environment on
 * the host (configured or discovered: every host). A service with this default: provide another
 * registry (`Effect.provideService(Runtimes.Runtimes, [...])`) to add a runtime. Adding one is
 * one module and one entry here.
 *
 * @since 0.1.0
 */
import type { HostConfig } from "@mlops/core/HostConfig"
import { Context, Effect } from "effect"
import * as ImageRuntime from "./ImageRuntime.js"
import * as PythonEnvRuntime from "./PythonEnvRuntime.js"
import * as Runtime from "./Runtime.js"

/** What the registry's runtimes fail with (one member per runtime). @category models */
export type RuntimeError = ImageRuntime.Error | PythonEnvRuntime.Error

/** The built-in runtimes, in order. @category registries */
export const builtIn: Runtime.Registry<RuntimeError> = [ImageRuntime.kind, PythonEnvRuntime.kind]

/** The registry the programs use. @category services */
export class Runtimes extends Context.Reference<Runtimes>()("@mlops/serve/Runtimes", {
  defaultValue: (): Runtime.Registry<RuntimeError> => builtIn
}) {}

/** The runtime for a launch on `host` (what `asked` names, else the first that applies). @category resolving */
export const resolve = (
  host: HostConfig,
  asked?: Runtime.Spec
): Effect.Effect<Runtime.Runtime<RuntimeError>, Runtime.InvalidRuntime> =>
  Effect.flatMap(Runtimes, (registry) => Runtime.resolve(registry, host, asked))

/** The runtime a deployment's record names, on `host`. @category resolving */
export const ofRecord = (
  host: HostConfig,
  spec: Runtime.Spec
): Effect.Effect<Runtime.Runtime<RuntimeError>, Runtime.InvalidRuntime> =>
  Effect.flatMap(Runtimes, (registry) => Runtime.fromRecord(registry, spec, host))
