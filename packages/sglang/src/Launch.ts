/**
 * `launch`: start an SGLang server on one of your hosts and follow it to "ready".
 *
 * Usage (library):
 *
 * ```ts
 * import { Launch } from "@mlops/sglang"
 *
 * // every progress event, then `{ _tag: "Launched", deployment }` as the last element
 * const events = Launch.launch({
 *   host: "ct129",
 *   argv: ["--model-path", "/root/models/Qwen3.6-27B", "--tp", "2", "--speculative-algorithm", "NEXTN"],
 *   env: { SGLANG_ENABLE_SPEC_V2: "1" }
 * }) // Stream<LaunchProgress, LaunchError, ConnectionPool>
 *
 * // or just the result
 * const deployment = yield* Launch.launchDeployment({ host: "sim", argv }) // Effect<Deployment, LaunchError, ConnectionPool>
 * ```
 *
 * Steps: connect (pool) → preflight (python env + SGLang version, GPUs, port, model
 * config, existing deployment; concurrently) → decode + resolve the flags for that version,
 * model and GPUs (`LaunchRulesViolated` lists every problem with the fixed command) →
 * write `~/.mlops/deployments/<name>/` and spawn detached → follow the log through the
 * classifier (phases, adjustments, weight progress; process death, stall and overall
 * timeouts) → ready = the ready line AND `/health` 200 AND one `/generate` AND `/v1/models`.
 * On failure the process group is stopped, the log kept, and the typed failure (with its
 * `fix`) returned; `autoFix: n` applies the fix and relaunches up to n times.
 *
 * Interrupting the stream stops following and leaves the server running, unless
 * `stopOnInterrupt`. With `tunnel: true` the stream does not end after `Launched`: it keeps a
 * local tunnel (`deployment.url`) open until you stop consuming it.
 *
 * @since 0.1.0
 */
import { Effect, Option, Stream } from "effect"
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import type { Deployment } from "./Deployment.js"
import * as program from "./internal/launch/program.js"
import type { LaunchError, LaunchProgress, LaunchRequest } from "./internal/launch/types.js"

export type {
  DeploymentExists,
  LaunchError,
  LaunchProgress,
  LaunchRequest,
  LaunchTimedOut,
  NotEnoughGpus,
  PortUnavailable,
  PreflightFacts,
  PythonEnvUnusable,
  NotHealthy
} from "./internal/launch/types.js"
export {
  DeploymentExists as DeploymentExistsError,
  LaunchTimedOut as LaunchTimedOutError,
  NotEnoughGpus as NotEnoughGpusError,
  PortUnavailable as PortUnavailableError,
  PythonEnvUnusable as PythonEnvUnusableError,
  NotHealthy as NotHealthyError
} from "./internal/launch/types.js"

/**
 * Every step as an event; the last element is `{ _tag: "Launched", deployment }`.
 *
 * @category programs
 */
export const launch = (request: LaunchRequest): Stream.Stream<LaunchProgress, LaunchError, ConnectionPool> =>
  program.launchStream(request)

/**
 * Drain `launch` and return the deployment (for library users; a `tunnel` closes on return).
 *
 * @category programs
 */
export const launchDeployment = Effect.fn("Launch.launchDeployment")(function* (request: LaunchRequest) {
  const last = yield* launch({ ...request, tunnel: false }).pipe(
    Stream.takeUntil((event) => event._tag === "Launched"),
    Stream.runLast
  )
  if (Option.isSome(last) && last.value._tag === "Launched") return last.value.deployment
  return yield* Effect.dieMessage("launch ended without a Launched event")
}) as (request: LaunchRequest) => Effect.Effect<Deployment, LaunchError, ConnectionPool>
