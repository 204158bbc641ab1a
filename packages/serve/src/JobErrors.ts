/**
 * What jobs fail with (see `Job`): each names the host and the job and says how to go on.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { howEnded, LaunchFailure as LaunchFailureSchema } from "./Failures.js"

/** A job of that name is recorded on the host already. @category errors */
export class JobExists extends Schema.TaggedError<JobExists>()("JobExists", {
  host: Schema.String,
  name: Schema.String,
  state: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `a job ${this.name} is recorded on ${this.host} (${this.state}); ${this.fix}`
  }
}

/** No job of that name on the host. @category errors */
export class JobNotFound extends Schema.TaggedError<JobNotFound>()("JobNotFound", {
  host: Schema.String,
  name: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message() {
    return `no job ${this.name} on ${this.host}; known: ${this.known.join(", ") || "(none)"}`
  }
}

/** A request that cannot run as given (a bad name, GPU ids, a secret on the command line). @category errors */
export class InvalidJob extends Schema.TaggedError<InvalidJob>()("InvalidJob", {
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `${this.reason}; ${this.fix}`
  }
}

/** Not enough free GPUs on the host, and the job may not wait: who holds what. @category errors */
export class GpusUnavailable extends Schema.TaggedError<GpusUnavailable>()("GpusUnavailable", {
  host: Schema.String,
  name: Schema.String,
  wanted: Schema.String,
  /** `GPU 0: job train-a`, `GPU 1: 30000 of 49140 MiB in use`, `queued behind train-b`. */
  holders: Schema.Array(Schema.String),
  fix: Schema.String
}) {
  override get message() {
    return `job ${this.name} needs ${this.wanted} on ${this.host}, which are not free: ${this.holders.join("; ")}; ${this.fix}`
  }
}

/** The job ended with a failure: its log's, classified, and its exit. @category errors */
export class JobFailed extends Schema.TaggedError<JobFailed>()("JobFailed", {
  host: Schema.String,
  name: Schema.String,
  failure: LaunchFailureSchema,
  exitCode: Schema.optional(Schema.Number),
  signal: Schema.optional(Schema.String),
  logPath: Schema.String
}) {
  override get message() {
    return `job ${this.name} on ${this.host} ${howEnded(this)}: ${this.failure.message}`
  }
}

/** Its GPUs still hold memory after a stop. @category errors */
export class JobGpuMemoryHeld extends Schema.TaggedError<JobGpuMemoryHeld>()("JobGpuMemoryHeld", {
  host: Schema.String,
  name: Schema.String,
  pids: Schema.Array(Schema.Number),
  usedMiB: Schema.Number,
  fix: Schema.String
}) {
  override get message() {
    return `job ${this.name} on ${this.host} was stopped but pid(s) ${this.pids.join(", ")} still hold ${this.usedMiB} MiB of GPU memory; ${this.fix}`
  }
}

/** A running job cannot be removed. @category errors */
export class JobStillRunning extends Schema.TaggedError<JobStillRunning>()("JobStillRunning", {
  host: Schema.String,
  name: Schema.String,
  state: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `job ${this.name} on ${this.host} is still ${this.state}; ${this.fix}`
  }
}
