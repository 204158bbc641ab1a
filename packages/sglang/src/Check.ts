/**
 * `check` for SGLang: the serving layer's check (`@mlops/serve/Check`) with this engine, its
 * effective args typed as `ServerArgs`. Either against a host (its SGLang version, GPUs and the
 * model's config.json, probed) or fully offline from a config.json and GPU facts; fails with
 * `LaunchRulesViolated` listing every problem and the fixed command.
 *
 * Offline GPU defaults: `count` 1, `computeCapability` "9.0" (Hopper), `memoryGiB` 80 — an
 * H100 80 GB. Pass the real values for your GPUs.
 *
 * @since 0.1.0
 */
import * as LocalFiles from "@mlops/core/LocalFiles"
import * as ServeCheck from "@mlops/serve/Check"
import { Effect } from "effect"
import type { ServerArgs } from "./ServerArgs.js"
import * as SglangEngine from "./SglangEngine.js"

/** GPU facts for an offline check. @category models */
export type GpuFacts = ServeCheck.GpuFacts

/** @category constants */
export const defaultGpus = ServeCheck.defaultGpus

/** @category models */
export interface CheckResult extends Omit<ServeCheck.CheckResult, "effective"> {
  readonly effective: ServerArgs
}

// the SGLang engine resolves to ServerArgs: the serving layer only carries them as an object
const typed = (result: ServeCheck.CheckResult): CheckResult => ({
  ...result,
  effective: result.effective as ServerArgs
})

/**
 * Offline: a parsed (or JSON text) config.json and GPU facts, for `version` (default the newest
 * shipped release; the nearest one stands in for an unshipped version).
 *
 * @category programs
 */
export const offline = (o: ServeCheck.OfflineRequest): Effect.Effect<CheckResult, ServeCheck.OfflineError> =>
  Effect.map(ServeCheck.offline(SglangEngine.engine, o), typed)

/**
 * Offline with a local config.json file.
 *
 * @category programs
 */
export const localConfig = Effect.fn("Check.localConfig")(function* (
  o: Omit<ServeCheck.OfflineRequest, "modelConfig"> & { readonly configPath: string }
): Effect.fn.Return<CheckResult, ServeCheck.OfflineError | LocalFiles.LocalFileError> {
  const { configPath, ...rest } = o
  const text = yield* LocalFiles.readText(configPath)
  return yield* offline({ ...rest, modelConfig: text })
})

/**
 * Against a host: probes its SGLang version, GPUs and the model config (a launch's preflight
 * without the port check: a running server on the port does not make the flags wrong), then
 * resolves.
 *
 * @category programs
 */
export const host = (o: ServeCheck.HostRequest) => Effect.map(ServeCheck.host(SglangEngine.engine, o), typed)
