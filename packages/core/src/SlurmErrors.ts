/**
 * The tagged errors of the `Slurm` service. Each names the host (the login node), and the
 * partition or job at fault, and says how to fix it.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * The host cannot run Slurm's client: the command is missing (not a login node, or Slurm is
 * not on PATH for non-interactive shells), the controller does not answer, or munge fails.
 *
 * @category errors
 */
export class SlurmUnavailable extends Schema.TaggedError<SlurmUnavailable>()("SlurmUnavailable", {
  host: Schema.String,
  command: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `Slurm on ${this.host}: ${this.command}: ${this.reason} (fix: ${this.fix})`
  }
}

/** A Slurm command failed for a reason mlops does not know. @category errors */
export class SlurmCommandFailed extends Schema.TaggedError<SlurmCommandFailed>()("SlurmCommandFailed", {
  host: Schema.String,
  command: Schema.String,
  exitCode: Schema.NullOr(Schema.Number),
  stderr: Schema.String
}) {
  override get message() {
    return `${this.command} on ${this.host} failed (exit ${this.exitCode ?? "by signal"}): ${this.stderr.trim() || "no output"}`
  }
}

/** The output of a Slurm command could not be read (another Slurm version's format?). @category errors */
export class SlurmOutputUnreadable extends Schema.TaggedError<SlurmOutputUnreadable>()(
  "SlurmOutputUnreadable",
  {
    host: Schema.String,
    command: Schema.String,
    reason: Schema.String
  }
) {
  override get message() {
    return `could not read the output of ${this.command} on ${this.host}: ${this.reason} (fix: report it with the output of \`${this.command}\` and \`sinfo --version\`)`
  }
}

/** sbatch refused the job. @category errors */
export class SlurmSubmitRefused extends Schema.TaggedError<SlurmSubmitRefused>()("SlurmSubmitRefused", {
  host: Schema.String,
  partition: Schema.optional(Schema.String),
  /** sbatch's own words (`Requested node configuration is not available`). */
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    const where = this.partition === undefined ? "" : ` to partition ${this.partition}`
    return `sbatch on ${this.host} refused the job${where}: ${this.reason} (fix: ${this.fix})`
  }
}

/** Neither squeue, scontrol nor sacct knows the job. @category errors */
export class SlurmJobNotFound extends Schema.TaggedError<SlurmJobNotFound>()("SlurmJobNotFound", {
  host: Schema.String,
  jobId: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `Slurm job ${this.jobId} is unknown on ${this.host} (squeue, scontrol and sacct have no record of it); ${this.fix}`
  }
}

/** The job was cancelled but is still in a running state after the wait. @category errors */
export class SlurmJobStillActive extends Schema.TaggedError<SlurmJobStillActive>()("SlurmJobStillActive", {
  host: Schema.String,
  jobId: Schema.String,
  state: Schema.String,
  waitedMs: Schema.Number,
  fix: Schema.String
}) {
  override get message() {
    return `Slurm job ${this.jobId} on ${this.host} is still ${this.state} ${Math.round(this.waitedMs / 1000)} s after scancel (fix: ${this.fix})`
  }
}

/** One reason a request cannot run on the cluster, found before sbatch. @category models */
export const SlurmProblem = Schema.Union(
  Schema.TaggedStruct("PartitionNotFound", { partition: Schema.String, known: Schema.Array(Schema.String) }),
  Schema.TaggedStruct("PartitionNotUp", { partition: Schema.String, state: Schema.String }),
  Schema.TaggedStruct("TimeLimitTooLong", {
    partition: Schema.String,
    requested: Schema.String,
    maxTime: Schema.String
  }),
  Schema.TaggedStruct("AccountNotAllowed", {
    partition: Schema.String,
    account: Schema.String,
    allowed: Schema.String
  }),
  Schema.TaggedStruct("QosNotAllowed", {
    partition: Schema.String,
    qos: Schema.String,
    allowed: Schema.String
  }),
  Schema.TaggedStruct("GresNotFound", {
    partition: Schema.String,
    gres: Schema.String,
    /** GRES names the partition's nodes do have. */
    available: Schema.Array(Schema.String)
  }),
  Schema.TaggedStruct("TooFewNodes", {
    partition: Schema.String,
    requested: Schema.Number,
    /** Nodes of the partition that fit (GPUs, constraint) and are in service. */
    usable: Schema.Number,
    /** GPUs of the GRES each node needs. */
    gpusPerNode: Schema.Number
  }),
  Schema.TaggedStruct("NotEnoughGpus", {
    partition: Schema.String,
    gres: Schema.String,
    requested: Schema.Number,
    /** The most GPUs of this GRES on one node of the partition (matching the constraint). */
    largestNode: Schema.Number,
    /** Other partitions with a node that has enough. */
    elsewhere: Schema.Array(Schema.String)
  }),
  Schema.TaggedStruct("ConstraintUnmatched", { partition: Schema.String, constraint: Schema.String }),
  Schema.TaggedStruct("NoUsableNode", {
    partition: Schema.String,
    /** The states of the nodes that would fit (`down*`, `drained`). */
    states: Schema.Array(Schema.String)
  })
)
/** @category models */
export type SlurmProblem = typeof SlurmProblem.Type

/** What is wrong, in one line. @category rendering */
export const describeProblem = (problem: SlurmProblem): string => {
  switch (problem._tag) {
    case "PartitionNotFound":
      return `partition ${problem.partition} does not exist (partitions: ${problem.known.join(", ") || "none"})`
    case "PartitionNotUp":
      return `partition ${problem.partition} is ${problem.state}, not UP`
    case "TimeLimitTooLong":
      return `time limit ${problem.requested} exceeds partition ${problem.partition}'s MaxTime ${problem.maxTime}`
    case "AccountNotAllowed":
      return `account ${problem.account} may not use partition ${problem.partition} (AllowAccounts=${problem.allowed})`
    case "QosNotAllowed":
      return `QoS ${problem.qos} is not allowed in partition ${problem.partition} (AllowQos=${problem.allowed})`
    case "GresNotFound":
      return `no node of partition ${problem.partition} has GRES ${problem.gres} (its nodes have: ${problem.available.join(", ") || "no GRES"})`
    case "TooFewNodes":
      return `${problem.requested} nodes with ${problem.gpusPerNode} GPUs each requested; partition ${problem.partition} has ${problem.usable} such node(s) in service`
    case "NotEnoughGpus":
      return `${problem.requested} GPUs of GRES ${problem.gres} on one node requested; the largest node of partition ${problem.partition} has ${problem.largestNode}`
    case "ConstraintUnmatched":
      return `no node of partition ${problem.partition} has feature ${problem.constraint}`
    case "NoUsableNode":
      return `every node of partition ${problem.partition} that fits is unavailable (${problem.states.join(", ")})`
  }
}

/** How to fix it. @category rendering */
export const problemFix = (problem: SlurmProblem): string => {
  switch (problem._tag) {
    case "PartitionNotFound":
      return `use one of ${problem.known.join(", ") || "the partitions `sinfo -s` lists"} (--partition, or "slurm.partition" in hosts.json)`
    case "PartitionNotUp":
      return "choose another partition, or ask the cluster's admins when it is back"
    case "TimeLimitTooLong":
      return `--time ${problem.maxTime} or less, or a partition with a longer MaxTime`
    case "AccountNotAllowed":
      return `use an account of ${problem.allowed} (--account, or "slurm.account" in hosts.json)`
    case "QosNotAllowed":
      return `use a QoS of ${problem.allowed} (--qos, or "slurm.qos" in hosts.json)`
    case "GresNotFound":
      return problem.available.length > 0
        ? `set the GRES name to one of ${problem.available.join(", ")} ("slurm.gres" in hosts.json; names are case-sensitive)`
        : "choose a partition with GPU nodes (`sinfo -o '%P %G'` lists them)"
    case "TooFewNodes":
      return `span at most ${problem.usable} node(s) (--nodes), or use a partition with more`
    case "NotEnoughGpus":
      return problem.elsewhere.length > 0
        ? `lower tp × pp to ${problem.largestNode}, or use partition ${problem.elsewhere.join(" or ")}`
        : `lower tp × pp to ${problem.largestNode} or less (one node holds the whole server)`
    case "ConstraintUnmatched":
      return "drop --constraint or use a feature `sinfo -o '%P %f'` lists for the partition"
    case "NoUsableNode":
      return "wait for the nodes to return (`sinfo -R` says why they are out), or choose another partition"
  }
}

/** Preflight found reasons the job cannot run; nothing was submitted. @category errors */
export class SlurmPreflightFailed extends Schema.TaggedError<SlurmPreflightFailed>()("SlurmPreflightFailed", {
  host: Schema.String,
  partition: Schema.String,
  problems: Schema.Array(SlurmProblem)
}) {
  override get message() {
    const lines = this.problems.map((p, i) => `  ${i + 1}. ${describeProblem(p)} (fix: ${problemFix(p)})`)
    return `the job cannot run on ${this.host}, partition ${this.partition}; nothing was submitted:\n${lines.join("\n")}`
  }
}

/** @category errors */
export type SlurmError = SlurmUnavailable | SlurmCommandFailed | SlurmOutputUnreadable
