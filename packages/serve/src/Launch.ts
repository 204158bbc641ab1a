/**
 * `launch`: start an inference server (any `Engine`) on one of your hosts and follow it to "ready".
 *
 * Usage (library):
 *
 * ```ts
 * import { Launch } from "@mlops/serve"
 * import { SglangEngine } from "@mlops/sglang/SglangEngine"
 *
 * // every progress event, then `{ _tag: "Launched", deployment }` as the last element
 * const events = Launch.launch({
 *   host: "ct129",
 *   engine: SglangEngine.engine,
 *   argv: ["--model-path", "/root/models/Qwen3.6-27B", "--tp", "2", "--speculative-algorithm", "NEXTN"],
 *   env: { SGLANG_ENABLE_SPEC_V2: "1" }
 * }) // Stream<LaunchProgress, LaunchError, ConnectionPool>
 *
 * // or just the result
 * const deployment = yield* Launch.launchDeployment({ host: "sim", engine, argv }) // Effect<Deployment, LaunchError, ConnectionPool>
 * ```
 *
 * Steps: connect (pool) → an existing deployment of the name (the same launch, decoded, is
 * returned) → preflight (the Python environment, configured or discovered, with its SGLang
 * version; GPUs and what holds memory on them; port; model config; concurrently, every host
 * problem reported at once) → decode + resolve the flags for that version,
 * model and GPUs (`LaunchRulesViolated` lists every problem with the fixed command) →
 * write `<stateDir>/deployments/<name>/` (default `~/.mlops`) and spawn detached → follow the log through the
 * classifier (phases, adjustments, weight progress; process death, stall and overall
 * timeouts) → ready = the ready line AND `/health` 200 AND one `/generate` AND `/v1/models`.
 * On failure the process group is stopped, the log kept, and the typed failure (with its
 * `fix`) returned; `autoFix: n` applies the fix and relaunches up to n times.
 *
 * Events (`LaunchProgress._tag`), in order: `Connected`, then `AlreadyRunning` (an identical
 * healthy deployment: it is the result) or `Replacing` (`replace: true`), `Python` (the
 * environment chosen and why), `Preflight` (host facts), `Resolved` (effective args + SGLang's
 * adjustment lines), `RemoteChecked`, then per
 * attempt `Spawned`, `Log` (classifier events: phases, progress, adjustments, warnings,
 * `Failed`), `HealthChecked` (per endpoint), `AttemptFailed` (with `nextArgv` when auto-fix
 * relaunches), and finally `Launched`; `Disconnected`/`Reconnected` whenever the connection
 * drops and comes back (every step resumes on the new one). Errors: the typed failures of `Failures` (classified
 * from the log), `LaunchRulesViolated` (preflight), `ArgvError`s, the preflight errors below
 * (`NotEnoughGpus`, `GpusBusy`, `PortUnavailable`, `PythonEnvUnusable`, `ModelNotFound`; several
 * at once as `HostNotReady`), `DeploymentExists`,
 * `InvalidDeploymentName`, `LaunchTimedOut`, `NotHealthy`, and core's connection errors.
 *
 * Secrets: secret flag values (`--api-key`, ...) and every `env` value are never in an event,
 * an error or a file on the host (see `Secrets`); SGLang receives them through its environment.
 *
 * Interrupting the stream stops following and leaves the server running, unless
 * `stopOnInterrupt`. With `tunnel: true` the stream does not end after `Launched`: it keeps a
 * local tunnel (`deployment.url`) open until you stop consuming it.
 *
 * @since 0.1.0
 */
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import { Effect, Option, Stream } from "effect"
import * as Deployment from "./Deployment.js"
import type { Engine } from "./Engine.js"
import * as program from "./internal/launch/program.js"
import type { LaunchError, LaunchProgress, LaunchRequest } from "./internal/launch/types.js"

export type {
  GpuHolder,
  HostProblem,
  LaunchError,
  LaunchProgress,
  LaunchRequest,
  PreflightFacts,
  PythonFacts,
  RankOf
} from "./internal/launch/types.js"
export {
  DeploymentExists,
  GpusBusy,
  HostNotReady,
  InvalidDeploymentName,
  InvalidHosts,
  LaunchTimedOut,
  NotEnoughGpus,
  NotHealthy,
  PortUnavailable,
  PythonEnvUnusable,
  RankFailed
} from "./internal/launch/types.js"

/** The default deployment name for an engine's argv: the model directory's name, lower-cased. @category naming */
export const defaultName = (engine: Engine, argv: ReadonlyArray<string>): string =>
  Deployment.defaultName(engine.modelOf(argv), engine.name)

/**
 * Every step as an event; the last element is `{ _tag: "Launched", deployment }`.
 *
 * @category programs
 */
export const launch = (request: LaunchRequest): Stream.Stream<LaunchProgress, LaunchError, ConnectionPool> =>
  program.launchStream(request)

/**
 * Drain `launch` and return the deployment (for library users; no tunnel is kept open).
 *
 * @category programs
 */
export const launchDeployment = (
  request: LaunchRequest
): Effect.Effect<Deployment.Deployment, LaunchError, ConnectionPool> =>
  launch({ ...request, tunnel: false }).pipe(
    Stream.runLast,
    Effect.flatMap((last) =>
      Option.isSome(last) && last.value._tag === "Launched"
        ? Effect.succeed(last.value.deployment)
        : Effect.dieMessage("launch ended without a Launched event")
    ),
    Effect.withSpan("Launch.launchDeployment", { attributes: { host: request.host } })
  )
