/**
 * Jobs: a command (training, evaluation, data preparation) run detached on a host, in its own
 * session and process group (it survives the connection), with its own run directory
 * (`<stateDir>/jobs/<name>/`: `job.json`, its log, exit status), its GPUs picked on the host
 * (free memory, and what other mlops jobs hold), queued first come first served on the host when
 * asked to wait, followed to its end through the classifier. `run` is the program as a stream of
 * events; `list`, `stop` and `remove` manage jobs from any machine that reaches the host.
 *
 * A job is a workload whose "done" is its exit (`Workload.job`), on the same placement seam as
 * servers (the host's own process group, a Slurm batch job) and the same runtime seam (a Python
 * environment, an image: `Runtime.job`). Where a placement's GPUs are the host's
 * (`Placement.onHost`), the job's command runs behind the host-side waiter (`internal/jobs/scripts.ts`)
 * that takes its place in the host's queue and sets `CUDA_VISIBLE_DEVICES`.
 *
 * @since 0.1.0
 */

import * as nodePath from "node:path"
import type { ExitStatus } from "@mlops/core/Connection"
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as LogTail from "@mlops/core/LogTail"
import * as Pull from "@mlops/core/Pull"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import { type Duration, Effect, Stream } from "effect"
import type { LaunchFailure } from "./Failures.js"
import * as program from "./internal/jobs/program.js"
import * as Record from "./internal/jobs/record.js"
import { JobGpuMemoryHeld, JobNotFound, JobStillRunning } from "./JobErrors.js"
import type { LaunchEvent } from "./LaunchEvent.js"
import type * as Placement from "./Placement.js"
import type * as Runtime from "./Runtime.js"

/** @category models */
export interface JobRequest {
  readonly host: string
  /** Default: the script's base name, with `-2`, `-3`… when taken. */
  readonly name?: string
  /** The command and its arguments, run as they are (no shell: `sh -c '…'` for one). */
  readonly argv: readonly [string, ...Array<string>]
  /** How many GPUs (default none: `CUDA_VISIBLE_DEVICES` is set empty). */
  readonly gpus?: number
  /** These GPUs (indices as `nvidia-smi` numbers them), instead of a count. */
  readonly gpuIds?: ReadonlyArray<number>
  /** Queue on the host until the GPUs are free, rather than be refused. */
  readonly wait?: boolean
  /** Environment for the command; values never appear on a command line or in the record. */
  readonly env?: Readonly<Record<string, string>>
  /**
   * How it runs: in a Python environment (`PythonEnvRuntime.spec(python)`: its `bin` first on
   * PATH; the default, with the host's hosts.json `python`, else the login PATH as it is), or in
   * a container of an image (`ImageRuntime.spec({ image })`: pulled as its policy says, the run
   * directory mounted at its own path, the picked GPUs only). A host's hosts.json `image` is its
   * servers' default, not its jobs'.
   */
  readonly runtime?: Runtime.Spec
  /** A local working directory copied to the run directory first (only what changed); the command runs there. */
  readonly sync?: { readonly local: string; readonly include?: ReadonlyArray<string> }
  /** Follow the job to its end (default), or return once it has started (or queued). */
  readonly follow?: boolean
  /** Fail a job that prints nothing for this long (default: never; a training step may be slow). */
  readonly stallTimeout?: Duration.DurationInput
  /** Stop the job when the caller is interrupted while following (default: leave it running). */
  readonly stopOnInterrupt?: boolean
  /**
   * Where it runs (default: the host's hosts.json entry, else a process group on the host). A
   * placement whose GPUs are the host's queues the job and picks its GPUs there; a scheduler's
   * (a Slurm batch job) queues and binds GPUs itself.
   */
  readonly placement?: Placement.Spec
}

/** A job as its host records it. @category models */
export interface Job {
  readonly host: string
  readonly name: string
  readonly argv: ReadonlyArray<string>
  readonly runDir: string
  readonly logPath: string
  /** `starting` (no process recorded yet), `queued`, `running`, `succeeded`, `failed`, `stopped`, `refused`. */
  readonly state: JobState
  /** The GPUs it holds (or held), as `CUDA_VISIBLE_DEVICES` gave them. */
  readonly gpus: ReadonlyArray<number>
  readonly createdAt: number
  /** The ticket it waits behind while queued. */
  readonly queuedBehind: string | undefined
  readonly exit: ExitStatus | undefined
  /** What runs it (`pid 1012`), once started. */
  readonly server: Placement.ServerRef | undefined
  /** How long it has run, or ran (ms), from its record's creation. */
  readonly elapsedMs: number | undefined
}

/** @category models */
export type JobState = "starting" | "queued" | "running" | "succeeded" | "failed" | "stopped" | "refused"

/** What `run` reports as it goes; the stream ends after `Finished` (or `Submitted` when not following). @category models */
export type JobEvent =
  /** A step of the runtime's before anything is written (an image pulled), as it goes. */
  | { readonly _tag: "Preparing"; readonly step: string; readonly detail: string; readonly elapsedMs: number }
  | { readonly _tag: "Connected"; readonly host: string; readonly name: string; readonly elapsedMs: number }
  | {
      readonly _tag: "Synced"
      readonly local: string
      readonly files: number
      readonly sent: number
      readonly deleted: number
      readonly bytes: number
      /** What was left out and why (`.env: secret`), so a missing file is not a mystery. */
      readonly skipped: ReadonlyArray<string>
      readonly elapsedMs: number
    }
  | {
      readonly _tag: "Submitted"
      readonly name: string
      readonly runDir: string
      readonly logPath: string
      readonly server: Placement.ServerRef
      readonly commandLine: string
      /** `the Python environment ~/ml-env`, `a container of pytorch/pytorch:2.5.1 (docker)`. */
      readonly runsIn: string
      readonly elapsedMs: number
    }
  | { readonly _tag: "Queued"; readonly behind: string; readonly elapsedMs: number }
  /** A scheduler's word on it as it changes (`PENDING (Resources)`, `RUNNING on gpu01`). */
  | { readonly _tag: "State"; readonly state: string; readonly elapsedMs: number }
  | { readonly _tag: "Started"; readonly gpus: ReadonlyArray<number>; readonly elapsedMs: number }
  | { readonly _tag: "Output"; readonly line: string; readonly elapsedMs: number }
  | { readonly _tag: "Log"; readonly event: LaunchEvent; readonly elapsedMs: number }
  | { readonly _tag: "Disconnected"; readonly reason: string; readonly elapsedMs: number }
  | { readonly _tag: "Reconnected"; readonly downMs: number; readonly elapsedMs: number }
  | { readonly _tag: "Finished"; readonly job: Job; readonly elapsedMs: number }

/** Run a job, as a stream of events. @category programs */
export const run = (request: JobRequest): Stream.Stream<JobEvent, program.JobError, ConnectionPool> =>
  program.runStream(request)

/** The job `name` on `host` as its record and its process say now. @category programs */
export const get = Effect.fn("Job.get")(function* (host: string, name: string) {
  const conn = yield* (yield* ConnectionPool).get(host)
  const recorded = yield* Record.read(conn, name)
  if (recorded === undefined) return yield* new JobNotFound({ host, name, known: yield* Record.names(conn) })
  return (yield* program.inspect(conn, recorded)).job
})

/** Every job recorded on `host`, oldest first. @category programs */
export const list = Effect.fn("Job.list")(function* (host: string) {
  const conn = yield* (yield* ConnectionPool).get(host)
  const names = yield* Record.names(conn)
  const records = yield* Effect.forEach(names, (name) => Record.read(conn, name), { concurrency: 4 })
  const jobs = yield* Effect.forEach(
    records.filter((r): r is Record.Recorded => r !== undefined),
    (r) => Effect.map(program.inspect(conn, r), (inspected) => inspected.job),
    { concurrency: 4 }
  )
  return [...jobs].sort((a, b) => a.createdAt - b.createdAt)
})

/** How a job's stop went. @category models */
export interface JobStopped {
  readonly host: string
  readonly name: string
  /** `terminated`, `killed`, `exited-before`; `dequeued` for a job that was waiting. */
  readonly outcome: Placement.StopOutcome | "dequeued"
  /** The GPUs it held, confirmed free. */
  readonly gpus: ReadonlyArray<number>
}

/** Stop a job's process group (TERM, then KILL after `grace`) and confirm its GPUs are free. @category programs */
export const stop = Effect.fn("Job.stop")(function* (
  host: string,
  name: string,
  options: { readonly grace?: Duration.DurationInput; readonly confirmWithin?: Duration.DurationInput } = {}
) {
  const conn = yield* (yield* ConnectionPool).get(host)
  const recorded = yield* Record.read(conn, name)
  if (recorded === undefined) return yield* new JobNotFound({ host, name, known: yield* Record.names(conn) })
  const { placed, job } = yield* program.inspect(conn, recorded)
  if (placed === undefined)
    return { host, name, outcome: "exited-before", gpus: job.gpus } satisfies JobStopped
  const release = yield* placed.gpuRelease(conn)
  const outcome = yield* placed.stop(conn, options.grace)
  const held = yield* release.confirm(options.confirmWithin ?? "10 seconds")
  if (held !== undefined)
    return yield* new JobGpuMemoryHeld({ host, name, pids: held.pids, usedMiB: held.usedMiB, fix: held.fix })
  return {
    host,
    name,
    outcome: job.state === "queued" ? "dequeued" : outcome,
    gpus: job.gpus
  } satisfies JobStopped
})

/** Remove every ended job's directory on `host`; running and queued ones are kept and named. @category programs */
export const removeEnded = Effect.fn("Job.removeEnded")(function* (host: string) {
  const removed: Array<Job> = []
  const kept: Array<JobStillRunning> = []
  for (const job of yield* list(host)) {
    const outcome = yield* Effect.either(remove(host, job.name))
    if (outcome._tag === "Right") removed.push(outcome.right)
    else if (outcome.left instanceof JobStillRunning) kept.push(outcome.left)
    else return yield* Effect.fail(outcome.left)
  }
  return { removed, kept }
})

/** The last `lines` lines of a job's log (default 100). @category programs */
export const tail = Effect.fn("Job.tail")(function* (
  host: string,
  name: string,
  options: { readonly lines?: number } = {}
) {
  const conn = yield* (yield* ConnectionPool).get(host)
  const recorded = yield* Record.read(conn, name)
  if (recorded === undefined) return yield* new JobNotFound({ host, name, known: yield* Record.names(conn) })
  return yield* LogTail.tail(host, recorded.logPath, { lines: options.lines ?? 100 })
})

/** The last element of `follow`: the job ended (or was not running). @category models */
export interface Ended {
  readonly _tag: "Ended"
  readonly job: Job
  /** Its failure, classified from its log, when it failed. */
  readonly failure: LaunchFailure | undefined
}

/**
 * The last `lines` lines (default 10), then every new line as it is written until the job ends,
 * across dropped connections; then what it wrote last and one `Ended` item.
 *
 * @category programs
 */
export const follow = (host: string, name: string, options: { readonly lines?: number } = {}) =>
  Stream.unwrap(
    Effect.gen(function* () {
      const conn = yield* (yield* ConnectionPool).get(host)
      const recorded = yield* Record.read(conn, name)
      if (recorded === undefined)
        return yield* new JobNotFound({ host, name, known: yield* Record.names(conn) })
      const last = yield* LogTail.tail(host, recorded.logPath, { lines: options.lines ?? 10 })
      const { placed } = yield* program.inspect(conn, recorded)
      const live = LogTail.toEnd(host, recorded.logPath, {
        fromOffset: last.at(-1)?.nextOffset ?? 0,
        ended:
          placed === undefined
            ? Effect.void
            : Stream.runDrain(placed.watch(host, { reconnect: LogTail.followReconnect }))
      })
      const ended = Stream.fromEffect(
        Effect.map(program.ended(host, name), (e) => ({ _tag: "Ended", ...e }) as const)
      )
      return Stream.concat(Stream.fromIterable<LogTail.LogLine | Ended>(last), Stream.concat(live, ended))
    })
  )

/** Remove an ended job's directory (its log with it); a running or queued one is refused. @category programs */
export const remove = Effect.fn("Job.remove")(function* (host: string, name: string) {
  const conn = yield* (yield* ConnectionPool).get(host)
  const recorded = yield* Record.read(conn, name)
  if (recorded === undefined) return yield* new JobNotFound({ host, name, known: yield* Record.names(conn) })
  const { job, placed } = yield* program.inspect(conn, recorded)
  if (job.state === "running" || job.state === "queued")
    return yield* new JobStillRunning({
      host,
      name,
      state: job.state,
      fix: `stop it first: mlops stop --host ${host} --name ${name}`
    })
  if (placed !== undefined) yield* placed.discard(conn)
  yield* conn.exec(RemoteCommand.make(["rm", "-rf", "--", recorded.runDir]), { timeout: "30 seconds" })
  return job
})

/**
 * Copy what a job wrote (its checkpoints, metrics, a trained drafter) from its host to this
 * machine: `remote` relative to the job's working directory (its synced code, its run directory
 * in an image, else the home directory) unless absolute; it lands in `into` (default the
 * current directory) under its own name. Only what is not already there with the same size and
 * time is read (`Pull.pull`); the job may still be running.
 *
 * @category programs
 */
export const pull = Effect.fn("Job.pull")(function* (
  host: string,
  name: string,
  remote: string,
  options: { readonly into?: string } = {}
) {
  const conn = yield* (yield* ConnectionPool).get(host)
  const recorded = yield* Record.read(conn, name)
  if (recorded === undefined) return yield* new JobNotFound({ host, name, known: yield* Record.names(conn) })
  const given = remote.trim()
  const from =
    given.startsWith("/") || given === "~" || given.startsWith("~/")
      ? given
      : `${recorded.job.cwd.replace(/\/+$/, "")}/${given}`
  // it lands under its own name inside `into`, never beside it: `.`, `..` or `/` take the job's name
  const last = nodePath.posix.basename(nodePath.posix.normalize(from.replace(/^~/, "/~")))
  const base = last === "" || last === "." || last === ".." || last === "~" ? name : last
  return yield* Pull.pull(conn, { remote: from, local: nodePath.join(options.into ?? ".", base) })
})

export type { JobError } from "./internal/jobs/program.js"
export * from "./JobErrors.js"
export type { LaunchFailure }
