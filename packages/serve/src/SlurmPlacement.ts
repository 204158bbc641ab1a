/**
 * A server as a Slurm batch job, submitted from a cluster's login node (the host alias): the
 * placement for hosts whose hosts.json entry has `"slurm"` (or a launch given Slurm settings).
 *
 * - preflight: the partition exists and is up, a node has enough GPUs of the GRES for tp × pp,
 *   the time limit fits, account/QoS allowed: every problem at once, before anything is written.
 * - spawn: the job script, its 0600 env file and a fresh 0600 log in the deployment's run
 *   directory (on the cluster's shared home), then `sbatch --parsable`; a submit whose answer is
 *   lost to a dropped connection is settled by the start's token (the job's `--comment`). The
 *   engine is the job's main process.
 * - watch: the job's states (PENDING with its reason, RUNNING on a node), then how it ended,
 *   reported as `SlurmJobEnded`: the log's failure with Slurm's word on the end.
 * - the server is reached at its node's address (`NodeAddr`) through the login node; a stop is
 *   `scancel` and a check that the job left the running states (the scheduler's end of the job
 *   is the confirmation that its GPUs are free).
 *
 * The run directory holds `job.sh`, `env`, `job` (the job id) and `token`.
 *
 * @since 0.1.0
 */

import type { Connection, ExitStatus } from "@mlops/core/Connection"
import { ConnectionPool, defaultReconnect, isTransient } from "@mlops/core/ConnectionPool"
import type { CommandError, ConnectError, RemoteFileError } from "@mlops/core/Errors"
import { ProcessError } from "@mlops/core/Errors"
import type { HostConfig } from "@mlops/core/HostConfig"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import * as Slurm from "@mlops/core/Slurm"
import {
  SlurmJobNotFound,
  type SlurmJobStillActive,
  type SlurmPreflightFailed,
  type SlurmSubmitRefused
} from "@mlops/core/SlurmErrors"
import { describeState, firstNode, isActive, type SlurmJob } from "@mlops/core/SlurmJob"
import * as SlurmScript from "@mlops/core/SlurmScript"
import * as SlurmSettings from "@mlops/core/SlurmSettings"
import { type Duration, Effect, Either, Schema, Stream } from "effect"
import * as Deployment from "./Deployment.js"
import { Fix, LaunchFailure, renderFix } from "./Failures.js"
import type { Inspection, Kind, Placed, Placement, Reporter, Spec, WatchEvent } from "./Placement.js"
import { headAddress, hostCommand, InvalidPlacement } from "./Placement.js"

/** The kind's name, in specs and records. @category constants */
export const name = "slurm"

/** The prefix of the names of the jobs mlops submits. @category constants */
export const jobPrefix = "mlops-"

/** The job ended: the server is gone. @category errors */
export class SlurmJobEnded extends Schema.TaggedError<SlurmJobEnded>()("SlurmJobEnded", {
  host: Schema.String,
  jobId: Schema.String,
  /** Slurm's words: `FAILED ExitCode=1:0`. */
  state: Schema.String,
  node: Schema.optional(Schema.String),
  /** What the log says went wrong, when it says. */
  failure: Schema.optional(LaunchFailure),
  /** The log's failure's fix, when it has one. */
  fix: Schema.optional(Fix)
}) {
  override get message() {
    const where = this.node === undefined ? "" : ` on ${this.node}`
    const slurm = `Slurm job ${this.jobId}${where} (${this.host}): ${this.state}`
    if (this.failure === undefined) return `the server ended; ${slurm}`
    const fix = this.failure.fix === undefined ? "" : ` (fix: ${renderFix(this.failure.fix)})`
    return `${this.failure.message}${fix}; ${slurm}`
  }
}

/** What it fails with: the scheduler's errors (its commands, preflight, submit, a job it lost or could not stop), the job's end, the connection's. @category models */
export type Error =
  | Slurm.Failure
  | SlurmPreflightFailed
  | SlurmSubmitRefused
  | SlurmJobNotFound
  | SlurmJobStillActive
  | SlurmJobEnded
  | ProcessError
  | RemoteFileError
  | ConnectError
  | CommandError

/** A Slurm spec: the settings of the job, over the login node's hosts.json entry. @category models */
export const SlurmSpec = Schema.Struct({
  kind: Schema.Literal(name),
  settings: Schema.optionalWith(SlurmSettings.SlurmSettings, { default: () => ({}) })
})
/** @category models */
export type SlurmSpec = typeof SlurmSpec.Type

/** The spec for these settings (the CLI's `--partition`, `--time`, ...: over the host entry's). @category constructors */
export const spec = (settings: SlurmSettings.SlurmSettings = {}): Spec => ({ kind: name, settings })

/** @category models */
export interface Options {
  /** Between state polls while watching (default 1 s: a crash is named within about that). */
  readonly poll?: Duration.DurationInput
}

/** The job's `--comment`: the start's token (Slurm shows it in `squeue -o %k`). */
const commentOf = (token: string) => `mlops:${token}`

const files = (runDir: string) => ({
  script: `${runDir}/job.sh`,
  env: `${runDir}/env`,
  job: `${runDir}/job`,
  token: `${runDir}/token`
})

const SIGNALS: Readonly<Record<number, string>> = {
  1: "HUP",
  2: "INT",
  6: "ABRT",
  9: "KILL",
  11: "SEGV",
  15: "TERM"
}

/** Slurm's `code:signal` as an exit status (exactly one of the two). @category models */
export const exitStatusOf = (job: SlurmJob): ExitStatus | undefined => {
  if (isActive(job.state)) return undefined
  const exit = "exitCode" in job.state ? job.state.exitCode : undefined
  if (exit === undefined) return { exitCode: null, signal: job.slurmState }
  return exit.signal !== 0
    ? { exitCode: null, signal: SIGNALS[exit.signal] ?? String(exit.signal) }
    : { exitCode: exit.code, signal: null }
}

/** How an ended job is reported: its log's failure with Slurm's word on the end. */
const reporter =
  (host: string, job: SlurmJob): Reporter<Error> =>
  (failure) =>
    new SlurmJobEnded({
      host,
      jobId: job.id,
      state: describeState(job),
      ...(job.nodes == null ? {} : { node: job.nodes }),
      ...(failure === undefined ? {} : { failure }),
      ...(failure?.fix === undefined ? {} : { fix: failure.fix })
    })

const placedOf = (
  host: string,
  record: { readonly runDir: string; readonly logPath: string },
  id: string,
  options: Options
): Placed<Error> => {
  const client = (conn: Connection) => Slurm.clientOf(conn)
  const lookup = (conn: Connection) =>
    client(conn)
      .job(id)
      .pipe(Effect.catchTag("SlurmJobNotFound", () => Effect.succeed(undefined)))
  const address = (
    conn: Connection,
    job: SlurmJob
  ): Effect.Effect<string, Slurm.Failure | SlurmJobNotFound> =>
    job.state._tag === "Running"
      ? // across nodes, rank 0 serves HTTP on the first
        client(conn).nodeAddress(firstNode(job.state.node))
      : Effect.fail(
          new SlurmJobNotFound({
            host,
            jobId: job.id,
            fix: `the job is ${job.slurmState}, not running: wait for it (\`squeue -j ${job.id}\`)`
          })
        )
  return {
    host,
    runDir: record.runDir,
    logPath: record.logPath,
    server: {
      placement: name,
      label: `Slurm job ${id}`,
      started: `submitted Slurm job ${id}`,
      ids: { job: id }
    },
    isAlive: (conn) => Effect.map(lookup(conn), (job) => job !== undefined && isActive(job.state)),
    watch: (alias, watchOptions) =>
      Stream.unwrap(
        Effect.map(Slurm.make, (slurm) =>
          slurm
            .follow(alias, id, {
              ...(options.poll === undefined ? {} : { poll: options.poll }),
              ...(watchOptions?.reconnect === undefined ? {} : { reconnect: watchOptions.reconnect })
            })
            .pipe(
              Stream.flatMap((job): Stream.Stream<WatchEvent<Error>> => {
                const state: WatchEvent<Error> = {
                  _tag: "State",
                  state: describeState(job),
                  // waiting in the queue is not a stall
                  waiting: job.state._tag === "Pending"
                }
                return isActive(job.state)
                  ? Stream.make(state)
                  : Stream.make(state, {
                      _tag: "Exited" as const,
                      status: exitStatusOf(job),
                      report: reporter(host, job)
                    })
              })
            )
        )
      ),
    // what is left of a job whose server died: SIGKILL to every step, then wait for it to end
    kill: (conn) =>
      Effect.gen(function* () {
        yield* client(conn).cancel(id, { signal: "KILL" })
        const after = yield* client(conn)
          .stop(id, { within: "30 seconds" })
          .pipe(Effect.catchTag("SlurmJobStillActive", () => Effect.succeed(undefined)))
        return after === undefined ? ("still-running" as const) : ("gone" as const)
      }),
    stop: (conn, grace) =>
      Effect.gen(function* () {
        const before = yield* lookup(conn)
        if (before === undefined || !isActive(before.state)) return "exited-before" as const
        // Slurm's own TERM → KILL (KillWait) runs after scancel; `grace` bounds the wait on top of it
        const after = yield* client(conn).stop(id, { within: grace ?? "60 seconds" })
        const outcome = exitStatusOf(after)?.signal === "KILL" ? ("killed" as const) : ("terminated" as const)
        // recorded as a deliberate stop, as on a plain host: status shows it stopped, not failed
        yield* Deployment.recordStop(conn, record.runDir, outcome)
        return outcome
      }),
    address: (conn) => Effect.flatMap(client(conn).job(id), (job) => address(conn, job)),
    // the scheduler is asked once: liveness, the end, the node and the elapsed time come from its answer
    inspect: (conn) =>
      Effect.gen(function* () {
        const job = yield* lookup(conn)
        if (job === undefined) {
          return {
            alive: false,
            exit: undefined,
            state: "unknown to Slurm",
            address: undefined,
            gpuMemoryMiB: undefined,
            runningMs: undefined,
            details: { job: id },
            report: (failure) => failure
          } satisfies Inspection<Error>
        }
        const alive = isActive(job.state)
        const where = job.state._tag === "Running" ? yield* Effect.option(address(conn, job)) : undefined
        return {
          alive,
          exit: exitStatusOf(job),
          state: `${describeState(job)}${job.gpus == null ? "" : `, ${job.gpus} GPUs`}`,
          address: where?._tag === "Some" ? where.value : undefined,
          // the GPU memory of a job's processes is on its node, not visible from the login node
          gpuMemoryMiB: undefined,
          runningMs: job.elapsedSeconds == null ? undefined : job.elapsedSeconds * 1000,
          details: {
            job: job.id,
            state: describeState(job),
            ...(job.nodes == null ? {} : { node: job.nodes }),
            ...(job.gpus == null ? {} : { gpus: job.gpus }),
            ...(job.elapsedSeconds == null ? {} : { elapsedSeconds: job.elapsedSeconds })
          },
          report: alive ? (failure) => failure : reporter(host, job)
        } satisfies Inspection
      }),
    // the scheduler's end of the job (which `stop` waits for) is the confirmation on its node
    gpuRelease: () => Effect.succeed({ confirm: () => Effect.succeed(undefined) }),
    // nothing is kept beside the run directory
    discard: () => Effect.void,
    // its processes are on a compute node, never the login node's
    holds: () => false
  }
}

const placement = (
  alias: string,
  settings: SlurmSettings.SlurmSettings,
  options: Options
): Placement<Error> => {
  const what = [
    settings.partition === undefined ? "the default partition" : `partition ${settings.partition}`,
    ...(settings.time === undefined ? [] : [`time ${settings.time}`]),
    ...(settings.gres === undefined ? [] : [`GRES ${settings.gres}`]),
    ...((settings.nodes ?? 1) > 1 ? [`${settings.nodes} nodes`] : [])
  ]
  // the partition preflight checked (the cluster's default when none is set): the job goes there,
  // whatever the login node's SBATCH_* environment would pick
  let checkedPartition: string | undefined
  return {
    spec: spec(settings),
    description: `a Slurm job from ${alias} (${what.join(", ")})`,
    onHost: false,
    nodes: settings.nodes ?? 1,
    preflight: (conn, request) =>
      Effect.map(
        Slurm.clientOf(conn).preflight({
          // GRES counts are per node
          gpus: request.gpus.perNode,
          ...(settings.nodes === undefined ? {} : { nodes: settings.nodes }),
          ...(settings.partition === undefined ? {} : { partition: settings.partition }),
          ...(settings.gres === undefined ? {} : { gres: settings.gres }),
          ...(settings.time === undefined ? {} : { time: settings.time }),
          ...(settings.account === undefined ? {} : { account: settings.account }),
          ...(settings.qos === undefined ? {} : { qos: settings.qos }),
          ...(settings.constraint === undefined ? {} : { constraint: settings.constraint })
        }),
        (checked) => {
          checkedPartition = checked.partition
          return {
            summary: `Slurm partition ${checked.partition}: ${checked.nodes.length} node(s) with ${checked.largestNode} ${settings.gres ?? SlurmSettings.defaultGres} GPUs in service for ${request.gpus.perNode}${(settings.nodes ?? 1) > 1 ? ` on each of ${settings.nodes} nodes` : ""}, time limit ${settings.time ?? checked.maxTime}`
          }
        }
      ),
    spawn: (host, runnables, request) =>
      Effect.gen(function* () {
        const [command, ...others] = yield* Effect.forEach(runnables, (runnable) =>
          hostCommand(name, runnable)
        )
        if (command === undefined)
          return yield* new ProcessError({ host, runDir: request.runDir, reason: "nothing to run" })
        const conn = yield* (yield* ConnectionPool).get(host)
        const slurm = Slurm.clientOf(conn)
        const runDir = yield* conn.files.resolvePath(request.runDir)
        const logPath = yield* conn.files.resolvePath(request.logPath)
        const paths = files(runDir)
        const failed = (reason: string) => new ProcessError({ host, runDir, reason })
        const jobName = `${jobPrefix}${request.name}`
        const script = SlurmScript.render({
          jobName,
          options: [
            ...SlurmSettings.sbatchOptions(
              {
                ...settings,
                ...(checkedPartition === undefined
                  ? {}
                  : { partition: settings.partition ?? checkedPartition })
              },
              request.gpus.perNode
            ),
            // this start's token: a submit whose answer is lost is found again by it
            `--comment=${commentOf(request.token)}`
          ],
          logPath,
          envPath: paths.env,
          workDir: runDir,
          command,
          // across nodes: each node's task runs the script again as its rank
          ...(others.length === 0
            ? {}
            : { spread: { others, headToken: headAddress, scriptPath: paths.script } })
        })
        if (Either.isLeft(script)) return yield* failed(script.left)
        yield* conn.files.mkdir(runDir)
        // a fresh log per start, the previous one kept as <log>.1 (as on a plain host); 0600 before
        // Slurm opens it in append mode, so the job's umask never decides who may read it
        if ((yield* conn.files.stat(logPath)) !== undefined) {
          const moved = yield* conn.exec({ argv: ["mv", "-f", logPath, `${logPath}.1`], env: {} })
          if (moved.exitCode !== 0)
            return yield* failed(`could not keep the previous log: ${moved.stderr.trim()}`)
        }
        yield* conn.files.write(logPath, "", { mode: 0o600 })
        yield* conn.files.write(paths.env, SlurmScript.envFile(command), { mode: 0o600 })
        yield* conn.files.write(paths.script, script.right, { mode: 0o600 })
        yield* conn.files.write(paths.token, request.token, { mode: 0o600 })
        const recordJob = (on: Connection, id: string) =>
          Effect.as(on.files.write(paths.job, id, { mode: 0o600 }), id)
        // a connection that drops around sbatch leaves it unknown whether the job exists: on a
        // fresh connection, the job carrying this start's token is it; without one, submit again
        const settle = Effect.gen(function* () {
          const again = yield* (yield* ConnectionPool).get(host)
          const settling = Slurm.clientOf(again)
          yield* settling.submitsSettled(paths.script)
          const found = yield* settling.submittedWith(jobName, commentOf(request.token))
          return yield* recordJob(again, found ?? (yield* settling.submit(paths.script)))
        }).pipe(Effect.retry({ schedule: request.reconnect ?? defaultReconnect, while: isTransient }))
        const job = yield* Effect.flatMap(slurm.submit(paths.script), (id) => recordJob(conn, id)).pipe(
          Effect.catchIf(isTransient, () => settle)
        )
        return placedOf(host, { runDir, logPath }, job, options)
      }),
    attach: (conn, record) =>
      Effect.gen(function* () {
        const runDir = yield* conn.files.resolvePath(record.runDir)
        const text = (yield* RemoteFiles.readTextIfExists(conn, files(runDir).job))?.trim()
        // no job file: nothing was submitted (refused, or a submit still under way)
        if (text === undefined) return undefined
        if (!/^\d+(?:_\d+)?$/.test(text))
          return yield* new ProcessError({
            host: conn.host.alias,
            runDir,
            reason: `no Slurm job id in ${files(runDir).job}`
          })
        return placedOf(conn.host.alias, { runDir, logPath: record.logPath }, text, options)
      }),
    starting: (conn, runDir) =>
      Effect.gen(function* () {
        const resolved = yield* conn.files.resolvePath(runDir)
        if ((yield* conn.files.stat(files(resolved).job)) !== undefined) return false
        return yield* Slurm.clientOf(conn).submitting(files(resolved).script)
      }),
    neighbours: (conn) =>
      Effect.map(Slurm.clientOf(conn).jobs({ namePrefix: jobPrefix }), (jobs) => ({
        title: `Slurm jobs named ${jobPrefix}* on ${alias} (every user's)`,
        columns: ["JOB", "NAME", "USER", "STATE", "NODE", "GPUS", "ELAPSED"],
        rows: jobs.map((job) => [
          job.id,
          job.name.slice(jobPrefix.length),
          job.user ?? "-",
          describeState(job),
          job.nodes ?? "-",
          job.gpus == null ? "-" : String(job.gpus),
          job.elapsedSeconds == null ? "-" : elapsed(job.elapsedSeconds)
        ]),
        records: jobs.map((job) => ({
          id: job.id,
          name: job.name.slice(jobPrefix.length),
          user: job.user,
          state: describeState(job),
          node: job.nodes,
          gpus: job.gpus,
          elapsedSeconds: job.elapsedSeconds
        }))
      }))
  }
}

/** `1h 02m`, `3m 05s`, `12s`. */
const elapsed = (seconds: number): string => {
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = Math.floor(seconds % 60)
  return h > 0
    ? `${h}h ${String(m).padStart(2, "0")}m`
    : m > 0
      ? `${m}m ${String(s).padStart(2, "0")}s`
      : `${s}s`
}

// a setting it does not know is an error, not dropped (a flat `{ kind, partition }` included)
const decodeSpec = Schema.decodeUnknownEither(SlurmSpec, { onExcessProperty: "error" })

/**
 * A Slurm job from a login node: applies to hosts whose hosts.json entry has `"slurm"`, or
 * when asked for (`spec(settings)`: its settings over the entry's, field by field).
 *
 * @category kinds
 */
export const makeKind = (options: Options = {}): Kind<Error> => ({
  kind: name,
  resolve: (host: HostConfig, asked, form) => {
    if (asked === undefined && host.slurm === undefined) return Either.right(undefined)
    // the login node's entry names the scheduler: an image does not quietly run on the login node instead
    if (form !== "OnHost")
      return Either.left(
        new InvalidPlacement({
          kind: name,
          reason: "a Slurm job cannot run an image yet (enroot/pyxis containers are not supported)",
          fix: `use a Python environment on the cluster (--python), or run the image on a host without "slurm" in hosts.json`
        })
      )
    if (asked === undefined) return Either.right(host.slurm === undefined ? undefined : spec(host.slurm))
    return Either.map(decode(asked), (given) => spec(SlurmSettings.merge(host.slurm ?? {}, given.settings)))
  },
  make: (given, host) => Either.map(decode(given), (s) => placement(host.alias, s.settings, options))
})

const decode = (given: Spec) =>
  Either.mapLeft(
    decodeSpec(given),
    (error) =>
      new InvalidPlacement({
        kind: name,
        reason: `bad Slurm settings: ${error.message}`,
        fix: 'check the "slurm" entry in hosts.json and the Slurm options'
      })
  )

/** @category kinds */
export const kind: Kind<Error> = makeKind()
