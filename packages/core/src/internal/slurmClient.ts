/**
 * The Slurm client commands on one connection to a login node (see `Slurm.ts`).
 *
 * @internal
 */
import { Clock, Duration, Effect, Either } from "effect"
import type { Connection } from "../Connection.js"
import type { CommandError } from "../Errors.js"
import {
  type SlurmError,
  SlurmJobNotFound,
  SlurmJobStillActive,
  SlurmOutputUnreadable,
  SlurmPreflightFailed,
  SlurmSubmitRefused
} from "../SlurmErrors.js"
import { isActive, type SlurmJob } from "../SlurmJob.js"
import { parseNodes, parsePartitions, SINFO_NODE_FORMAT } from "./slurmClusterParsers.js"
import { type Argv, failed, query, run, SUBMIT_TIMEOUT } from "./slurmCommands.js"
import { parseSacct, parseScontrolJobs, parseSqueue, SACCT_FIELDS, SQUEUE_FORMAT } from "./slurmJobParsers.js"
import { parseRecords, parseSubmitted } from "./slurmParsers.js"
import * as preflightCheck from "./slurmPreflight.js"

/** @internal */
export type Failure = SlurmError | CommandError

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

export const submit = Effect.fn("Slurm.submit")(function* (
  conn: Connection,
  script: string
): Effect.fn.Return<string, SlurmSubmitRefused | Failure> {
  const host = conn.host.alias
  const argv: Argv = ["sbatch", "--parsable", script]
  const result = yield* run(conn, argv, SUBMIT_TIMEOUT)
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

/** The job in `argv`'s output; undefined when the controller says the id is unknown. */
const lookup = (
  conn: Connection,
  jobId: string,
  argv: Argv,
  parse: (stdout: string) => Either.Either<ReadonlyArray<SlurmJob>, string>
) =>
  Effect.gen(function* () {
    const host = conn.host.alias
    const result = yield* run(conn, argv)
    if (result.exitCode !== 0) {
      if (INVALID_JOB.test(result.stderr)) return undefined
      return yield* failed(host, argv, result)
    }
    return only(yield* parsed(host, argv, parse(result.stdout)), jobId)
  })

/** squeue lists queued and running jobs; one that ended is not listed (or, once purged, "Invalid job id"). */
const fromSqueue = (conn: Connection, jobId: string) =>
  lookup(conn, jobId, ["squeue", "-h", "-j", jobId, "-o", SQUEUE_FORMAT], parseSqueue)

/** Any job the controller still remembers (MinJobAge after it ended). */
const fromScontrol = (conn: Connection, jobId: string) =>
  lookup(conn, jobId, ["scontrol", "show", "job", "-o", jobId], parseScontrolJobs)

/** sacct from the database; without one (`accounting storage is disabled`), from the jobcomp file (`-c`). */
const fromSacct = (conn: Connection, jobId: string) =>
  Effect.gen(function* () {
    const host = conn.host.alias
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
      const result = yield* run(conn, argv(jobcomp))
      if (result.exitCode !== 0) {
        if (NO_ACCOUNTING.test(result.stderr) && !jobcomp) continue
        // a cluster with neither: no record to find
        if (NO_ACCOUNTING.test(result.stderr) || /jobcomp|No such file/i.test(result.stderr)) return undefined
        return yield* failed(host, argv(jobcomp), result)
      }
      const found = only(yield* parsed(host, argv(jobcomp), parseSacct(result.stdout)), jobId)
      if (found !== undefined || !jobcomp) return found
    }
    return undefined
  })

export const job = Effect.fn("Slurm.job")(function* (
  conn: Connection,
  jobId: string
): Effect.fn.Return<SlurmJob, SlurmJobNotFound | Failure> {
  const host = conn.host.alias
  const queued = yield* fromSqueue(conn, jobId)
  if (queued !== undefined && isActive(queued.state)) return queued
  const remembered = yield* fromScontrol(conn, jobId)
  if (remembered !== undefined) return remembered
  const accounted = yield* fromSacct(conn, jobId)
  if (accounted !== undefined) return accounted
  if (queued !== undefined) return queued
  return yield* new SlurmJobNotFound({
    host,
    jobId,
    fix: "it ended longer ago than the controller keeps records (MinJobAge) and the cluster has no accounting; the deployment's log says how it ended"
  })
})

export const jobs = Effect.fn("Slurm.jobs")(function* (
  conn: Connection,
  options: { readonly namePrefix?: string } = {}
): Effect.fn.Return<ReadonlyArray<SlurmJob>, Failure> {
  const all = yield* query(conn, ["squeue", "-h", "-o", SQUEUE_FORMAT], parseSqueue)
  const prefix = options.namePrefix
  return prefix === undefined ? all : all.filter((j) => j.name.startsWith(prefix))
})

/** A regular expression matching exactly `text` (for pgrep). */
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * Wait (up to sbatch's own timeout) until no `sbatch --parsable SCRIPT` runs on the login node:
 * one orphaned by a dropped connection may still submit, so the queue only answers for it once
 * it is gone.
 */
export const submitsSettled = Effect.fn("Slurm.submitsSettled")(function* (
  conn: Connection,
  script: string
): Effect.fn.Return<void, Failure> {
  const pattern = `^sbatch --parsable ${literally(script)}$`
  const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(Duration.decode(SUBMIT_TIMEOUT))
  for (;;) {
    const found = yield* run(conn, ["pgrep", "-f", "--", pattern])
    // pgrep: 1 = none running (0 = some; anything else: pgrep cannot tell, so do not wait on it)
    if (found.exitCode !== 0 || (yield* Clock.currentTimeMillis) > deadline) return
    yield* Effect.sleep("200 millis")
  }
})

/** Whether an `sbatch --parsable SCRIPT` runs on the login node now (a submit under way). */
export const submitting = Effect.fn("Slurm.submitting")(function* (
  conn: Connection,
  script: string
): Effect.fn.Return<boolean, Failure> {
  const found = yield* run(conn, ["pgrep", "-f", "--", `^sbatch --parsable ${literally(script)}$`])
  return found.exitCode === 0
})

/** `id|comment` lines of `squeue -h -o "%i|%k"`: the ids whose comment is `comment`. */
export const parseCommented = (
  stdout: string,
  comment: string
): Either.Either<ReadonlyArray<string>, string> => {
  const ids: Array<string> = []
  for (const line of stdout.split("\n")) {
    if (line.trim() === "") continue
    const bar = line.indexOf("|")
    const id = line.slice(0, bar).trim()
    if (bar === -1 || !/^\d+(?:_\d+)?$/.test(id))
      return Either.left(`not an "id|comment" line: ${JSON.stringify(line)}`)
    if (line.slice(bar + 1).trim() === comment) ids.push(id)
  }
  return Either.right(ids)
}

/**
 * The queued or running job named `jobName` whose `--comment` is `comment` (a start's own
 * token), when there is one: how a submit whose answer was lost is found again.
 */
export const submittedWith = Effect.fn("Slurm.submittedWith")(function* (
  conn: Connection,
  jobName: string,
  comment: string
): Effect.fn.Return<string | undefined, Failure> {
  const ids = yield* query(conn, ["squeue", "-h", `--name=${jobName}`, "-o", "%i|%k"], (stdout) =>
    parseCommented(stdout, comment)
  )
  return ids[0]
})

export const partitions = (conn: Connection) =>
  query(conn, ["scontrol", "show", "partition", "-o"], parsePartitions)
export const nodes = (conn: Connection) =>
  query(conn, ["sinfo", "-h", "-N", "-o", SINFO_NODE_FORMAT], parseNodes)

export const preflight = Effect.fn("Slurm.preflight")(function* (
  conn: Connection,
  request: preflightCheck.PreflightRequest
): Effect.fn.Return<preflightCheck.PreflightResult, SlurmPreflightFailed | Failure> {
  const host = conn.host.alias
  const [known, all] = yield* Effect.all([partitions(conn), nodes(conn)], { concurrency: 2 })
  return yield* Either.match(preflightCheck.check(request, known, all), {
    onLeft: ({ partition, problems }) => Effect.fail(new SlurmPreflightFailed({ host, partition, problems })),
    onRight: Effect.succeed
  })
})

export const cancel = Effect.fn("Slurm.cancel")(function* (
  conn: Connection,
  jobId: string,
  options: { readonly signal?: string } = {}
): Effect.fn.Return<void, Failure> {
  const host = conn.host.alias
  const argv: Argv = [
    "scancel",
    ...(options.signal === undefined ? [] : [`--signal=${options.signal}`, "--full"]),
    jobId
  ]
  const result = yield* run(conn, argv)
  if (result.exitCode !== 0 && !ALREADY_ENDED.test(result.stderr)) return yield* failed(host, argv, result)
})

export const stop = Effect.fn("Slurm.stop")(function* (
  conn: Connection,
  jobId: string,
  options: { readonly within?: Duration.DurationInput; readonly pollInterval?: Duration.DurationInput } = {}
): Effect.fn.Return<SlurmJob, SlurmJobStillActive | SlurmJobNotFound | Failure> {
  const host = conn.host.alias
  yield* cancel(conn, jobId)
  const within = Duration.toMillis(options.within ?? "60 seconds")
  const started = Date.now()
  for (;;) {
    const current = yield* job(conn, jobId)
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

/** The address slurmd registered for `node` (`NodeAddr`), where its servers are reached. */
export const nodeAddress = Effect.fn("Slurm.nodeAddress")(function* (
  conn: Connection,
  node: string
): Effect.fn.Return<string, Failure> {
  const records = yield* query(conn, ["scontrol", "show", "node", "-o", node], (out) =>
    Either.right(parseRecords(out))
  )
  return records.find((record) => record.get("NodeName") === node)?.get("NodeAddr") ?? node
})
