/**
 * The Slurm scheduler as a host sees it: the client commands a cluster's login node runs, each
 * a `RemoteCommand` over the host's pooled connection with a timeout, their output parsed into
 * typed values. Written for Slurm 22.05 and later: squeue with an explicit `--format` (no
 * `--only-job-state`, which 22.05 lacks), and a job that left the queue is looked up with
 * `scontrol show job`, then `sacct` (accounting database), then `sacct -c` (jobcomp file).
 *
 * ```ts
 * const slurm = yield* Slurm
 * yield* slurm.preflight("login1", { partition: "gpu", gpus: 2, time: "4:00:00" })
 * const id = yield* slurm.submit("login1", "/home/me/.mlops/deployments/qwen/job.sh")
 * const job = yield* slurm.job("login1", id) // { state: { _tag: "Pending", reason: "Resources" }, ... }
 * ```
 *
 * @since 0.1.0
 */
import { Context, type Duration, Effect, Layer, Option, type Schedule, Stream } from "effect"
import type { RunError } from "./Command.js"
import type { Connection } from "./Connection.js"
import { ConnectionPool, defaultReconnect, isTransient } from "./ConnectionPool.js"
import * as client from "./internal/slurmClient.js"
import type { SlurmNode, SlurmPartition } from "./internal/slurmClusterParsers.js"
import type { PreflightRequest, PreflightResult } from "./internal/slurmPreflight.js"
import type {
  SlurmError,
  SlurmJobNotFound,
  SlurmJobStillActive,
  SlurmPreflightFailed,
  SlurmSubmitRefused
} from "./SlurmErrors.js"
import { describeState, isActive, type SlurmJob } from "./SlurmJob.js"

export type { SlurmNode, SlurmPartition } from "./internal/slurmClusterParsers.js"
export type { PreflightRequest, PreflightResult } from "./internal/slurmPreflight.js"

/** Every failure of a Slurm command that is not about the job itself. @category models */
export type Failure = SlurmError | RunError

/** @category models */
export interface StopOptions {
  /** How long the job may take to leave the running states after scancel (default 60 s). */
  readonly within?: Duration.DurationInput
  readonly pollInterval?: Duration.DurationInput
}

/** @category models */
export interface FollowOptions {
  readonly poll?: Duration.DurationInput
  readonly reconnect?: Schedule.Schedule<unknown, unknown>
}

/**
 * The client commands on one open connection to a login node (what a placement holding a
 * `Connection` uses). @category models
 */
export interface SlurmClient {
  /** `sbatch --parsable SCRIPT` (options in the script's `#SBATCH` lines): the job id. */
  readonly submit: (script: string) => Effect.Effect<string, SlurmSubmitRefused | client.Failure>
  /** Returns once no `sbatch --parsable SCRIPT` runs on the login node (at most sbatch's timeout). */
  readonly submitsSettled: (script: string) => Effect.Effect<void, client.Failure>
  /** Whether an `sbatch --parsable SCRIPT` runs on the login node now (a submit under way). */
  readonly submitting: (script: string) => Effect.Effect<boolean, client.Failure>
  /** The queued or running job of this name whose `--comment` is `comment` (a lost submit found again). */
  readonly submittedWith: (
    jobName: string,
    comment: string
  ) => Effect.Effect<string | undefined, client.Failure>
  /** The job wherever Slurm still knows it: squeue, then scontrol, then sacct, then sacct -c. */
  readonly job: (jobId: string) => Effect.Effect<SlurmJob, SlurmJobNotFound | client.Failure>
  /** Queued and running jobs of every user, optionally only names starting with `namePrefix`. */
  readonly jobs: (options?: {
    readonly namePrefix?: string
  }) => Effect.Effect<ReadonlyArray<SlurmJob>, client.Failure>
  readonly partitions: Effect.Effect<ReadonlyArray<SlurmPartition>, client.Failure>
  readonly nodes: Effect.Effect<ReadonlyArray<SlurmNode>, client.Failure>
  /** The address slurmd registered for a node (`NodeAddr`): where a server on it is reached. */
  readonly nodeAddress: (node: string) => Effect.Effect<string, client.Failure>
  /** Whether the request can run, before anything is submitted: every problem at once. */
  readonly preflight: (
    request: PreflightRequest
  ) => Effect.Effect<PreflightResult, SlurmPreflightFailed | client.Failure>
  /** `scancel [--signal=S --full] ID`; a job that already ended is not an error. */
  readonly cancel: (
    jobId: string,
    options?: { readonly signal?: string }
  ) => Effect.Effect<void, client.Failure>
  /** `scancel`, then wait until the job has left the running states: its final record. */
  readonly stop: (
    jobId: string,
    options?: StopOptions
  ) => Effect.Effect<SlurmJob, SlurmJobStillActive | SlurmJobNotFound | client.Failure>
}

/** The Slurm commands on `conn`. @category constructors */
export const clientOf = (conn: Connection): SlurmClient => ({
  submit: (script) => client.submit(conn, script),
  submittedWith: (jobName, comment) => client.submittedWith(conn, jobName, comment),
  submitsSettled: (script) => client.submitsSettled(conn, script),
  submitting: (script) => client.submitting(conn, script),
  job: (jobId) => client.job(conn, jobId),
  jobs: (options) => client.jobs(conn, options),
  partitions: client.partitions(conn),
  nodes: client.nodes(conn),
  nodeAddress: (node) => client.nodeAddress(conn, node),
  preflight: (request) => client.preflight(conn, request),
  cancel: (jobId, options) => client.cancel(conn, jobId, options),
  stop: (jobId, options) => client.stop(conn, jobId, options)
})

type OnHost<F> = F extends (...args: infer A) => Effect.Effect<infer R, infer E, never>
  ? (host: string, ...args: A) => Effect.Effect<R, E | RunError>
  : F extends Effect.Effect<infer R, infer E, never>
    ? (host: string) => Effect.Effect<R, E | RunError>
    : never

/** @category models */
export type SlurmApi = { readonly [K in keyof SlurmClient]: OnHost<SlurmClient[K]> } & {
  /**
   * The job's record each time its state changes (a new reason while pending, the node once
   * running, how it ended), polled every `poll` (default 1 s); the stream ends after the first
   * record that is not active. A dropped connection is re-acquired (`reconnect`).
   */
  readonly follow: (
    host: string,
    jobId: string,
    options?: FollowOptions
  ) => Stream.Stream<SlurmJob, SlurmJobNotFound | Failure>
}

/** The scheduler behind login nodes, by host alias, over the `ConnectionPool`. @category services */
export class Slurm extends Context.Tag("@mlops/core/Slurm")<Slurm, SlurmApi>() {}

/** @category constructors */
export const make: Effect.Effect<SlurmApi, never, ConnectionPool> = Effect.map(ConnectionPool, (pool) => {
  const on = <A, E>(host: string, use: (slurm: SlurmClient) => Effect.Effect<A, E>) =>
    Effect.flatMap(pool.get(host), (conn) => use(clientOf(conn)))
  const follow = (host: string, jobId: string, options: FollowOptions = {}) => {
    const poll = on(host, (slurm) => slurm.job(jobId)).pipe(
      Effect.retry({ schedule: options.reconnect ?? defaultReconnect, while: isTransient })
    )
    return Stream.paginateEffect(undefined as string | undefined, (seen) =>
      Effect.gen(function* () {
        for (;;) {
          if (seen !== undefined) yield* Effect.sleep(options.poll ?? "1 second")
          const current = yield* poll
          const key = `${describeState(current)} ${current.nodes ?? ""}`
          const next = isActive(current.state) ? Option.some(key) : Option.none()
          if (key !== seen) return [current, next] as const
        }
      })
    ).pipe(Stream.withSpan("Slurm.follow", { attributes: { host, jobId } }))
  }
  return {
    submit: (host, script) => on(host, (slurm) => slurm.submit(script)),
    submittedWith: (host, jobName, comment) => on(host, (slurm) => slurm.submittedWith(jobName, comment)),
    submitsSettled: (host, script) => on(host, (slurm) => slurm.submitsSettled(script)),
    submitting: (host, script) => on(host, (slurm) => slurm.submitting(script)),
    job: (host, jobId) => on(host, (slurm) => slurm.job(jobId)),
    jobs: (host, options) => on(host, (slurm) => slurm.jobs(options)),
    partitions: (host) => on(host, (slurm) => slurm.partitions),
    nodes: (host) => on(host, (slurm) => slurm.nodes),
    nodeAddress: (host, node) => on(host, (slurm) => slurm.nodeAddress(node)),
    preflight: (host, request) => on(host, (slurm) => slurm.preflight(request)),
    cancel: (host, jobId, options) => on(host, (slurm) => slurm.cancel(jobId, options)),
    stop: (host, jobId, options) => on(host, (slurm) => slurm.stop(jobId, options)),
    follow
  }
})

/** @category layers */
export const layer: Layer.Layer<Slurm, never, ConnectionPool> = Layer.effect(Slurm, make)
