/**
 * A Slurm job as mlops sees it: its typed state (PENDING with the scheduler's reason, RUNNING
 * on a node, and each way a job ends with Slurm's `ExitCode=code:signal`), where it runs, how
 * many GPUs it holds and for how long. Read by `Slurm.job` from `squeue`, or from
 * `scontrol show job` / `sacct` once the job has left the queue (`source` says which).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** Slurm's `ExitCode=code:signal` of a job's batch script. @category models */
export const ExitCode = Schema.Struct({ code: Schema.Number, signal: Schema.Number })
/** @category models */
export type ExitCode = typeof ExitCode.Type

const ended = { exitCode: Schema.optional(ExitCode) }

/**
 * The job's state. Active: `Pending`, `Running`, `Completing`, `Suspended`, and `Other` for the
 * rarer transitional states (CONFIGURING, REQUEUED, RESIZING, SIGNALING, STAGE_OUT, STOPPED, ...).
 * Ended: the rest; `Ended` carries the rarer end states (BOOT_FAIL, DEADLINE, REVOKED,
 * SPECIAL_EXIT) by Slurm's name.
 *
 * @category models
 */
export const JobState = Schema.Union(
  /** Waiting; `reason` is Slurm's (`Resources`, `Priority`, `QOSMaxGRESPerUser`, `None`, ...). */
  Schema.TaggedStruct("Pending", { reason: Schema.String }),
  Schema.TaggedStruct("Running", { node: Schema.String }),
  Schema.TaggedStruct("Completing", { node: Schema.String }),
  Schema.TaggedStruct("Suspended", { node: Schema.String }),
  Schema.TaggedStruct("Other", { slurmState: Schema.String }),
  Schema.TaggedStruct("Completed", ended),
  /** `reason`: `NonZeroExitCode`, `RaisedSignal:9(Killed)`, ... */
  Schema.TaggedStruct("Failed", { ...ended, reason: Schema.String }),
  Schema.TaggedStruct("Timeout", ended),
  Schema.TaggedStruct("OutOfMemory", ended),
  Schema.TaggedStruct("NodeFail", { ...ended, node: Schema.String }),
  Schema.TaggedStruct("Preempted", ended),
  Schema.TaggedStruct("Cancelled", ended),
  Schema.TaggedStruct("Ended", { ...ended, slurmState: Schema.String })
)
/** @category models */
export type JobState = typeof JobState.Type

/** Where the job's record was read. @category models */
export const JobSource = Schema.Literal("squeue", "scontrol", "sacct")
/** @category models */
export type JobSource = typeof JobSource.Type

/** @category models */
export const SlurmJob = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  state: JobState,
  /** Slurm's own name of the state: `PENDING`, `FAILED`, `OUT_OF_MEMORY`. */
  slurmState: Schema.String,
  partition: Schema.optional(Schema.String),
  /** The node list (`vm`, `gpu[01-02]`); absent while pending. */
  nodes: Schema.optional(Schema.String),
  user: Schema.optional(Schema.String),
  /** GPUs per node asked for with `--gres` (absent when the job asked for none, or Slurm does not say). */
  gpus: Schema.optional(Schema.Number),
  elapsedSeconds: Schema.optional(Schema.Number),
  /** null: no limit. */
  timeLimitSeconds: Schema.optional(Schema.NullOr(Schema.Number)),
  source: JobSource
})
/** @category models */
export type SlurmJob = typeof SlurmJob.Type

const ACTIVE = new Set<JobState["_tag"]>(["Pending", "Running", "Completing", "Suspended", "Other"])

/** True while the job waits, runs or still holds its allocation. @category predicates */
export const isActive = (state: JobState): boolean => ACTIVE.has(state._tag)

/** `137:0`. @category rendering */
export const renderExitCode = (exit: ExitCode): string => `${exit.code}:${exit.signal}`

/**
 * The state as a person reads it in Slurm's words: `PENDING (Resources)`, `RUNNING on vm`,
 * `FAILED ExitCode=137:0`.
 *
 * @category rendering
 */
export const describeState = (job: Pick<SlurmJob, "state" | "slurmState">): string => {
  const state = job.state
  switch (state._tag) {
    case "Pending":
      return `PENDING (${state.reason})`
    case "Running":
    case "Completing":
    case "Suspended":
      return `${job.slurmState} on ${state.node}`
    case "Other":
      return state.slurmState
    default:
      return state.exitCode === undefined
        ? job.slurmState
        : `${job.slurmState} ExitCode=${renderExitCode(state.exitCode)}`
  }
}

/**
 * The first node of a Slurm node list (`gpu[01-02,05]` → `gpu01`, `node-a,node-b` → `node-a`):
 * where a job's first task (rank 0) runs.
 *
 * @category rendering
 */
export const firstNode = (list: string): string => {
  // the first name: up to the first comma outside brackets
  let depth = 0
  let end = list.length
  for (let i = 0; i < list.length; i++) {
    const char = list[i]
    if (char === "[") depth++
    else if (char === "]") depth--
    else if (char === "," && depth === 0) {
      end = i
      break
    }
  }
  // each bracket's first value (`gpu[01-02,05]` → `gpu01`; `a[1-2]b[3-4]` → `a1b3`)
  return list
    .slice(0, end)
    .trim()
    .replace(/\[([^\]]*)\]/g, (_, range: string) => range.split(",")[0]!.split("-")[0]!)
}
