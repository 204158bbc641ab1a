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
import { Context, Duration, Effect, Either, Layer, Option, type Schedule, Stream } from "effect"
import type { RunError } from "./Command.js"
import { ConnectionPool, defaultReconnect, isTransient } from "./ConnectionPool.js"
import {
  parseNodes,
  parsePartitions,
  SINFO_NODE_FORMAT,
  type SlurmNode,
  type SlurmPartition
} from "./internal/slurmClusterParsers.js"
import { type Argv, failed, query, run, SUBMIT_TIMEOUT } from "./internal/slurmCommands.js"
import {
  parseSacct,
  parseScontrolJobs,
  parseSqueue,
  SACCT_FIELDS,
  SQUEUE_FORMAT
} from "./internal/slurmJobParsers.js"
import { parseSubmitted } from "./internal/slurmParsers.js"
import * as preflightCheck from "./internal/slurmPreflight.js"
import {
  type SlurmError,
  SlurmJobNotFound,
  SlurmJobStillActive,
  SlurmOutputUnreadable,
  SlurmPreflightFailed,
  SlurmSubmitRefused
} from "./SlurmErrors.js"
import { describeState, isActive, type SlurmJob } from "./SlurmJob.js"

export type { SlurmNode, SlurmPartition } from "./internal/slurmClusterParsers.js"
export type { PreflightRequest, PreflightResult } from "./internal/slurmPreflight.js"

/** Every failure of a Slurm command that is not about the job itself. @category models */
export type Failure = SlurmError | RunError

/** @category models */
export interface SlurmApi {
  /** `sbatch --parsable SCRIPT` (options in the script's `#SBATCH` lines): the job id. */
  readonly submit: (host: string, script: string) => Effect.Effect<string, SlurmSubmitRefused | Failure>
  /** The job wherever Slurm still knows it: squeue, then scontrol, then sacct, then sacct -c. */
  readonly job: (host: string, jobId: string) => Effect.Effect<SlurmJob, SlurmJobNotFound | Failure>
  /** Queued and running jobs of every user (status), optionally only names starting with `namePrefix`. */
  readonly jobs: (
    host: string,
    options?: { readonly namePrefix?: string }
  ) => Effect.Effect<ReadonlyArray<SlurmJob>, Failure>
  readonly partitions: (host: string) => Effect.Effect<ReadonlyArray<SlurmPartition>, Failure>
  readonly nodes: (host: string) => Effect.Effect<ReadonlyArray<SlurmNode>, Failure>
  /** Whether the request can run, before anything is submitted: every problem at once. */
  readonly preflight: (
    host: string,
    request: preflightCheck.PreflightRequest
  ) => Effect.Effect<preflightCheck.PreflightResult, SlurmPreflightFailed | Failure>
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
  /** `scancel [--signal=S] ID`; a job that already ended is not an error. */
  readonly cancel: (
    host: string,
    jobId: string,
    options?: { readonly signal?: string }
  ) => Effect.Effect<void, Failure>
  /** `scancel`, then wait (default 60 s) until the job has left the running states: its final record. */
  readonly stop: (
    host: string,
    jobId: string,
    options?: { readonly within?: Duration.DurationInput; readonly pollInterval?: Duration.DurationInput }
  ) => Effect.Effect<SlurmJob, SlurmJobStillActive | SlurmJobNotFound | Failure>
}

/** @category models */
export interface FollowOptions {
  readonly poll?: Duration.DurationInput
  readonly reconnect?: Schedule.Schedule<unknown, unknown>
}

/** @category services */
export class Slurm extends Context.Tag("@mlops/core/Slurm")<Slurm, SlurmApi>() {}

const INVALID_JOB = /Invalid job id specified/
const ALREADY_ENDED = /already completing or completed|Invalid job id specified/
const NO_ACCOUNTING = /accounting storage is disabled/i

/** sbatch's words after `Batch job submission failed:`, or its first error line. */
const submitReason = (stderr: string): string => {
  const failedLine = /Batch job submission failed: (.+)/.exec(stderr)?.[1]
  if (failedLine !== undefined) return failedLine.trim()
  const line = stderr.split("\n").find((l) => l.trim() !== "")
  return (line ?? "no output").replace(/^sbatch: error: /, "").trim()
}

const SUBMIT_FIXES: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /Requested node configuration is not available/,
    "no node of the partition has what the job asks for (GPUs of the GRES, constraint, memory, CPUs): compare with `sinfo -o '%P %G %f %m %c'`"
  ],
  [
    /Invalid partition name/,
    'use a partition `sinfo -s` lists (--partition, or "slurm.partition" in hosts.json)'
  ],
  [
    /Invalid account/,
    'use an account `sacctmgr show assoc user=$USER` lists (--account, or "slurm.account")'
  ],
  [/Invalid qos/i, 'use a QoS `sacctmgr show assoc user=$USER format=qos` lists (--qos, or "slurm.qos")'],
  [
    /violates accounting\/QOS policy/,
    "the QoS or association limits refuse it (GPUs per user, wall time): `sacctmgr show qos`"
  ],
  [/time limit is invalid/, "lower --time to the partition's MaxTime (`scontrol show partition`)"],
  [
    /Invalid generic resource|Invalid Trackable RESource/,
    "use the cluster's GRES name (`sinfo -o '%G'`; names are case-sensitive)"
  ],
  [/Invalid feature specification/, "use a feature `sinfo -o '%f'` lists (--constraint)"]
]

const parsed = <A>(host: string, argv: Argv, either: Either.Either<A, string>) =>
  Either.match(either, {
    onLeft: (reason) => Effect.fail(new SlurmOutputUnreadable({ host, command: argv.join(" "), reason })),
    onRight: Effect.succeed
  })

const submit = Effect.fn("Slurm.submit")(function* (
  host: string,
  script: string
): Effect.fn.Return<string, SlurmSubmitRefused | Failure, ConnectionPool> {
  const argv: Argv = ["sbatch", "--parsable", script]
  const result = yield* run(host, argv, SUBMIT_TIMEOUT)
  if (result.exitCode !== 0) {
    const reason = submitReason(result.stderr)
    const fix =
      SUBMIT_FIXES.find(([pattern]) => pattern.test(reason))?.[1] ??
      `read sbatch's message; the script is ${script}`
    return yield* new SlurmSubmitRefused({ host, reason, fix })
  }
  return yield* parsed(host, argv, parseSubmitted(result.stdout))
})

const only = (jobs: ReadonlyArray<SlurmJob>, jobId: string) => jobs.find((job) => job.id === jobId)

/** squeue lists queued and running jobs; one that ended is not listed (or, once purged, "Invalid job id"). */
const fromSqueue = (host: string, jobId: string) =>
  Effect.gen(function* () {
    const argv: Argv = ["squeue", "-h", "-j", jobId, "-o", SQUEUE_FORMAT]
    const result = yield* run(host, argv)
    if (result.exitCode !== 0) {
      if (INVALID_JOB.test(result.stderr)) return undefined
      return yield* failed(host, argv, result)
    }
    return only(yield* parsed(host, argv, parseSqueue(result.stdout)), jobId)
  })

/** Any job the controller still remembers (MinJobAge after it ended). */
const fromScontrol = (host: string, jobId: string) =>
  Effect.gen(function* () {
    const argv: Argv = ["scontrol", "show", "job", "-o", jobId]
    const result = yield* run(host, argv)
    if (result.exitCode !== 0) {
      if (INVALID_JOB.test(result.stderr)) return undefined
      return yield* failed(host, argv, result)
    }
    return only(yield* parsed(host, argv, parseScontrolJobs(result.stdout)), jobId)
  })

/** sacct from the database; without one (`accounting storage is disabled`), from the jobcomp file (`-c`). */
const fromSacct = (host: string, jobId: string) =>
  Effect.gen(function* () {
    const argv = (jobcomp: boolean): Argv => [
      "sacct",
      ...(jobcomp ? ["-c"] : []),
      "-P",
      "-n",
      "-o",
      SACCT_FIELDS,
      "-j",
      jobId
    ]
    for (const jobcomp of [false, true]) {
      const result = yield* run(host, argv(jobcomp))
      if (result.exitCode !== 0) {
        if (NO_ACCOUNTING.test(result.stderr) && !jobcomp) continue
        // a cluster with neither: no record to find
        if (NO_ACCOUNTING.test(result.stderr) || /jobcomp|No such file/i.test(result.stderr)) return undefined
        return yield* failed(host, argv(jobcomp), result)
      }
      const jobs = yield* parsed(host, argv(jobcomp), parseSacct(result.stdout))
      const job = only(jobs, jobId)
      if (job !== undefined || !jobcomp) return job
    }
    return undefined
  })

const job = Effect.fn("Slurm.job")(function* (
  host: string,
  jobId: string
): Effect.fn.Return<SlurmJob, SlurmJobNotFound | Failure, ConnectionPool> {
  const queued = yield* fromSqueue(host, jobId)
  if (queued !== undefined && isActive(queued.state)) return queued
  const remembered = yield* fromScontrol(host, jobId)
  if (remembered !== undefined) return remembered
  const accounted = yield* fromSacct(host, jobId)
  if (accounted !== undefined) return accounted
  if (queued !== undefined) return queued
  return yield* new SlurmJobNotFound({
    host,
    jobId,
    fix: "it ended longer ago than the controller keeps records (MinJobAge) and the cluster has no accounting; the deployment's log says how it ended"
  })
})

const jobs = Effect.fn("Slurm.jobs")(function* (
  host: string,
  options: { readonly namePrefix?: string } = {}
): Effect.fn.Return<ReadonlyArray<SlurmJob>, Failure, ConnectionPool> {
  const all = yield* query(host, ["squeue", "-h", "-o", SQUEUE_FORMAT], parseSqueue)
  const prefix = options.namePrefix
  return prefix === undefined ? all : all.filter((j) => j.name.startsWith(prefix))
})

const partitions = (host: string) => query(host, ["scontrol", "show", "partition", "-o"], parsePartitions)
const nodes = (host: string) => query(host, ["sinfo", "-h", "-N", "-o", SINFO_NODE_FORMAT], parseNodes)

const preflight = Effect.fn("Slurm.preflight")(function* (
  host: string,
  request: preflightCheck.PreflightRequest
): Effect.fn.Return<preflightCheck.PreflightResult, SlurmPreflightFailed | Failure, ConnectionPool> {
  const [known, all] = yield* Effect.all([partitions(host), nodes(host)], { concurrency: 2 })
  return yield* Either.match(preflightCheck.check(request, known, all), {
    onLeft: ({ partition, problems }) => Effect.fail(new SlurmPreflightFailed({ host, partition, problems })),
    onRight: Effect.succeed
  })
})

const follow = (host: string, jobId: string, options: FollowOptions = {}) => {
  const poll = job(host, jobId).pipe(
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

const cancel = Effect.fn("Slurm.cancel")(function* (
  host: string,
  jobId: string,
  options: { readonly signal?: string } = {}
): Effect.fn.Return<void, Failure, ConnectionPool> {
  const argv: Argv = [
    "scancel",
    ...(options.signal === undefined ? [] : [`--signal=${options.signal}`, "--full"]),
    jobId
  ]
  const result = yield* run(host, argv)
  if (result.exitCode !== 0 && !ALREADY_ENDED.test(result.stderr)) return yield* failed(host, argv, result)
})

const stop = Effect.fn("Slurm.stop")(function* (
  host: string,
  jobId: string,
  options: { readonly within?: Duration.DurationInput; readonly pollInterval?: Duration.DurationInput } = {}
): Effect.fn.Return<SlurmJob, SlurmJobStillActive | SlurmJobNotFound | Failure, ConnectionPool> {
  yield* cancel(host, jobId)
  const within = Duration.toMillis(options.within ?? "60 seconds")
  const started = Date.now()
  for (;;) {
    const current = yield* job(host, jobId)
    if (!isActive(current.state)) return current
    const waitedMs = Date.now() - started
    if (waitedMs >= within)
      return yield* new SlurmJobStillActive({
        host,
        jobId,
        state: current.slurmState,
        waitedMs,
        fix: `\`scancel --signal=KILL --full ${jobId}\` on ${host}; if it stays ${current.slurmState}, its node is in trouble (\`scontrol show job ${jobId}\`)`
      })
    yield* Effect.sleep(options.pollInterval ?? "500 millis")
  }
})

/** @category constructors */
export const make: Effect.Effect<SlurmApi, never, ConnectionPool> = Effect.map(ConnectionPool, (pool) => {
  const provide = <A, E>(effect: Effect.Effect<A, E, ConnectionPool>) =>
    Effect.provideService(effect, ConnectionPool, pool)
  return {
    submit: (host, script) => provide(submit(host, script)),
    job: (host, jobId) => provide(job(host, jobId)),
    jobs: (host, options) => provide(jobs(host, options)),
    partitions: (host) => provide(partitions(host)),
    nodes: (host) => provide(nodes(host)),
    preflight: (host, request) => provide(preflight(host, request)),
    follow: (host, jobId, options) =>
      Stream.provideService(follow(host, jobId, options), ConnectionPool, pool),
    cancel: (host, jobId, options) => provide(cancel(host, jobId, options)),
    stop: (host, jobId, options) => provide(stop(host, jobId, options))
  }
})

/** @category layers */
export const layer: Layer.Layer<Slurm, never, ConnectionPool> = Layer.effect(Slurm, make)
