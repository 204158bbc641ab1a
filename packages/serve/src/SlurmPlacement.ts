/**
 * A server as a Slurm batch job, submitted from a cluster's login node (the host alias): the
 * `Placement` for hosts whose hosts.json entry has `"slurm"`.
 *
 * - spawn: preflight on the login node (the partition exists and is up, a node has enough GPUs
 *   of the GRES for tp × pp, the time limit fits, account/QoS allowed), then the job script,
 *   its 0600 env file and a fresh 0600 log in the deployment's run directory (on the cluster's
 *   shared home), then `sbatch --parsable`. The engine is the job's main process.
 * - watch: the job's states as `Job` events (PENDING with its reason, RUNNING on a node), then
 *   `Exited` with Slurm's exit code, from squeue or, once the job left the queue, scontrol/sacct.
 * - stop: `scancel`, then a check that the job left the running states.
 * - `target`: where the server is reached from the login node (the node's `NodeAddr`), for
 *   the readiness tunnel `<node>:<port>`.
 *
 * The run directory holds `job.sh`, `env`, `job` (the job id) and `token`.
 *
 * @since 0.1.0
 */

import type { Connection, ExitStatus } from "@mlops/core/Connection"
import { ConnectionPool, defaultReconnect, isTransient } from "@mlops/core/ConnectionPool"
import { ProcessError } from "@mlops/core/Errors"
import * as Slurm from "@mlops/core/Slurm"
import { SlurmJobNotFound } from "@mlops/core/SlurmErrors"
import { isActive, type SlurmJob } from "@mlops/core/SlurmJob"
import * as SlurmScript from "@mlops/core/SlurmScript"
import * as SlurmSettings from "@mlops/core/SlurmSettings"
import { type Duration, Effect, Either, Stream } from "effect"
import type { Placed, Placement, PlacementError, WatchEvent } from "./Placement.js"

/** @category models */
export interface SlurmPlacementOptions {
  /** hosts.json's `slurm` entry with the CLI's overrides (`SlurmSettings.merge`). */
  readonly settings: SlurmSettings.SlurmSettings
  /** GPUs on one node: tp × pp. */
  readonly gpus: number
  /** The job's name; mlops' own jobs start with `mlops-` (status lists them). */
  readonly jobName: string
  /** Between state polls while watching (default 1 s: a crash is named within about that). */
  readonly poll?: Duration.DurationInput
}

/** @category models */
export interface SlurmPlacement extends Placement {
  /** The preflight spawn runs first, on its own. */
  readonly preflight: (
    alias: string
  ) => Effect.Effect<Slurm.PreflightResult, PlacementError | Slurm.Failure, ConnectionPool>
  /** The job's current record. */
  readonly job: (conn: Connection, placed: Placed) => Effect.Effect<SlurmJob, PlacementError>
  /** Where the running server is reached from the login node: its node's address. */
  readonly target: (conn: Connection, placed: Placed) => Effect.Effect<string, PlacementError>
}

/** The prefix of the names of the jobs mlops submits. @category constants */
export const jobPrefix = "mlops-"

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

const jobIdOf = (placed: Placed) =>
  placed.job === undefined
    ? Effect.fail(
        new ProcessError({ host: placed.host, runDir: placed.runDir, reason: "no Slurm job id recorded" })
      )
    : Effect.succeed(placed.job)

/** @category constructors */
export const make = (options: SlurmPlacementOptions): SlurmPlacement => {
  const request: Slurm.PreflightRequest = {
    gpus: options.gpus,
    ...(options.settings.partition === undefined ? {} : { partition: options.settings.partition }),
    ...(options.settings.gres === undefined ? {} : { gres: options.settings.gres }),
    ...(options.settings.time === undefined ? {} : { time: options.settings.time }),
    ...(options.settings.account === undefined ? {} : { account: options.settings.account }),
    ...(options.settings.qos === undefined ? {} : { qos: options.settings.qos }),
    ...(options.settings.constraint === undefined ? {} : { constraint: options.settings.constraint })
  }

  const preflight = (alias: string) =>
    Effect.flatMap(ConnectionPool, (pool) =>
      Effect.flatMap(pool.get(alias), (conn) => Slurm.clientOf(conn).preflight(request))
    )

  const spawn: Placement["spawn"] = (alias, command, spawnRequest) =>
    Effect.gen(function* () {
      const conn = yield* (yield* ConnectionPool).get(alias)
      const slurm = Slurm.clientOf(conn)
      const checked = yield* slurm.preflight(request)
      const runDir = yield* conn.files.resolvePath(spawnRequest.runDir)
      const logPath = yield* conn.files.resolvePath(spawnRequest.logPath)
      const paths = files(runDir)
      const failed = (reason: string) => new ProcessError({ host: alias, runDir, reason })
      const script = SlurmScript.render({
        jobName: options.jobName,
        options: [
          ...SlurmSettings.sbatchOptions({ ...options.settings, partition: checked.partition }, options.gpus),
          // this start's token: a submit whose answer is lost is found again by it
          `--comment=${commentOf(spawnRequest.token)}`
        ],
        logPath,
        envPath: paths.env,
        workDir: runDir,
        command
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
      yield* conn.files.write(paths.token, spawnRequest.token, { mode: 0o600 })
      const record = (on: Connection, id: string) =>
        Effect.as(on.files.write(paths.job, id, { mode: 0o600 }), id)
      // a connection that drops around sbatch leaves it unknown whether the job exists: on a
      // fresh connection, the job carrying this start's token is it; without one, submit again
      const settle = Effect.gen(function* () {
        const again = yield* (yield* ConnectionPool).get(alias)
        const client = Slurm.clientOf(again)
        yield* client.submitsSettled(paths.script)
        const found = yield* client.submittedWith(options.jobName, commentOf(spawnRequest.token))
        return yield* record(again, found ?? (yield* client.submit(paths.script)))
      }).pipe(Effect.retry({ schedule: spawnRequest.reconnect ?? defaultReconnect, while: isTransient }))
      const job = yield* Effect.flatMap(slurm.submit(paths.script), (id) => record(conn, id)).pipe(
        Effect.catchIf(isTransient, () => settle)
      )
      return { host: alias, runDir, logPath, pid: 0, pgid: 0, job } satisfies Placed
    })

  const attach: Placement["attach"] = (conn, runDir, logPath) =>
    Effect.gen(function* () {
      const resolved = yield* conn.files.resolvePath(runDir)
      const text = new TextDecoder().decode(yield* conn.files.read(files(resolved).job)).trim()
      if (!/^\d+$/.test(text))
        return yield* new ProcessError({
          host: conn.host.alias,
          runDir,
          reason: `no Slurm job id in ${files(resolved).job}`
        })
      return { host: conn.host.alias, runDir: resolved, logPath, pid: 0, pgid: 0, job: text } satisfies Placed
    })

  const job = (conn: Connection, placed: Placed) =>
    placed.jobRecord !== undefined
      ? Effect.succeed(placed.jobRecord)
      : Effect.flatMap(jobIdOf(placed), (id) => Slurm.clientOf(conn).job(id))

  const watch: Placement["watch"] = (alias, placed) =>
    Stream.unwrap(
      Effect.map(Effect.all([jobIdOf(placed), Slurm.make]), ([id, slurm]) =>
        slurm.follow(alias, id, options.poll === undefined ? {} : { poll: options.poll }).pipe(
          Stream.flatMap((record): Stream.Stream<WatchEvent> => {
            const event: WatchEvent = { _tag: "Job", job: record }
            const exited: WatchEvent = { _tag: "Exited", status: exitStatusOf(record) }
            return isActive(record.state) ? Stream.make(event) : Stream.make(event, exited)
          })
        )
      )
    )

  const stop: Placement["stop"] = (conn, placed, grace) =>
    Effect.gen(function* () {
      // a record without a job id: the submit never happened (or failed), nothing runs
      if (placed.job === undefined) return "exited-before" as const
      const id = yield* jobIdOf(placed)
      const slurm = Slurm.clientOf(conn)
      const before = yield* slurm
        .job(id)
        .pipe(Effect.catchTag("SlurmJobNotFound", () => Effect.succeed(undefined)))
      if (before === undefined || !isActive(before.state)) return "exited-before" as const
      // Slurm's own TERM → KILL (KillWait) runs after scancel; `grace` bounds the wait on top of it
      const after = yield* slurm.stop(id, { within: grace ?? "60 seconds" })
      const outcome = exitStatusOf(after)?.signal === "KILL" ? ("killed" as const) : ("terminated" as const)
      // recorded as a deliberate stop, as on a plain host: status shows it stopped, not failed
      yield* conn.files.write(`${placed.runDir}/stopped`, outcome, { mode: 0o600 })
      return outcome
    })

  // what is left of a job whose server died: SIGKILL to every step, then wait for it to end
  const kill: Placement["kill"] = (conn, placed) =>
    Effect.gen(function* () {
      if (placed.job === undefined) return "gone" as const
      const id = yield* jobIdOf(placed)
      const slurm = Slurm.clientOf(conn)
      yield* slurm.cancel(id, { signal: "KILL" })
      const after = yield* slurm
        .stop(id, { within: "30 seconds" })
        .pipe(Effect.catchTag("SlurmJobStillActive", () => Effect.succeed(undefined)))
      return after === undefined ? ("still-running" as const) : ("gone" as const)
    })

  return {
    name: "slurm",
    spawn,
    attach,
    kill,
    isAlive: (conn, placed) =>
      placed.job === undefined
        ? Effect.succeed(false)
        : job(conn, placed).pipe(
            Effect.map((record) => isActive(record.state)),
            Effect.catchTag("SlurmJobNotFound", () => Effect.succeed(false))
          ),
    watch,
    exitStatus: (conn, placed) =>
      placed.job === undefined
        ? Effect.succeed(undefined)
        : job(conn, placed).pipe(
            Effect.map(exitStatusOf),
            Effect.catchAll(() => Effect.succeed(undefined))
          ),
    stop,
    preflight,
    job,
    target: (conn, placed) =>
      Effect.gen(function* () {
        const record = yield* job(conn, placed)
        if (record.state._tag !== "Running")
          return yield* new SlurmJobNotFound({
            host: conn.host.alias,
            jobId: record.id,
            fix: `the job is ${record.slurmState}, not running: wait for it (\`squeue -j ${record.id}\`)`
          })
        return yield* Slurm.clientOf(conn).nodeAddress(record.state.node)
      })
  }
}

/**
 * The cluster's mlops jobs (every user's, so servers others started show too): name, state,
 * node, GPUs, elapsed time.
 *
 * @category inspecting
 */
export const jobs = (alias: string): Effect.Effect<ReadonlyArray<SlurmJob>, Slurm.Failure, ConnectionPool> =>
  Effect.flatMap(Slurm.make, (slurm) => slurm.jobs(alias, { namePrefix: jobPrefix }))
