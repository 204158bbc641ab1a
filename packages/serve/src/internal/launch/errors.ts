/**
 * The launch program's own errors (the host problems preflight finds, idempotence, the caps).
 * Public through `Launch.ts`.
 *
 * @internal
 */
import * as Errors from "@mlops/core/Errors"
import { Schema } from "effect"
import { UnsupportedEngineVersion } from "../../Engine.js"
import { LaunchFailure, ModelNotFound } from "../../Failures.js"
import { InvalidModelConfig } from "../../ModelTraits.js"
import type { PlacementError } from "../../Placements.js"
import type { RuntimeError } from "../../Runtimes.js"
import { describeTimeToReady, TimeToReady } from "../deploymentFiles.js"

/** Fewer GPUs than `tp × pp` needs. */
export class NotEnoughGpus extends Schema.TaggedError<NotEnoughGpus>()("NotEnoughGpus", {
  host: Schema.String,
  needed: Schema.Number,
  available: Schema.Number,
  gpus: Schema.Array(Schema.String),
  fix: Schema.String
}) {
  override get message() {
    return `${this.host} has ${this.available} GPU(s) (${this.gpus.join(", ") || "none"}) but the flags need ${this.needed}; ${this.fix}`
  }
}

/** A multi-node command (`--nnodes N`) given fewer hosts than nodes: one host serves one rank. */
export class NotEnoughHosts extends Schema.TaggedError<NotEnoughHosts>()("NotEnoughHosts", {
  host: Schema.String,
  nodes: Schema.Number,
  hosts: Schema.Number,
  fix: Schema.String
}) {
  override get message() {
    return `the flags ask for ${this.nodes} nodes but the launch has ${this.hosts} host${this.hosts === 1 ? "" : "s"} (${this.host}): the ranks on the other nodes would never start and rank 0 would wait for them; ${this.fix}`
  }
}

/** The hosts of a launch across several hosts cannot be used as given. */
export class InvalidHosts extends Schema.TaggedError<InvalidHosts>()("InvalidHosts", {
  hosts: Schema.Array(Schema.String),
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `hosts ${this.hosts.join(",")}: ${this.reason}; ${this.fix}`
  }
}

/**
 * One rank of a deployment across several hosts failed: the whole deployment was stopped. The
 * rank, its host and its own failure (its log's root cause, not the other ranks' consequences).
 */
export class RankFailed extends Schema.TaggedError<RankFailed>()("RankFailed", {
  name: Schema.String,
  rank: Schema.Number,
  host: Schema.String,
  hosts: Schema.Array(Schema.String),
  /** The rank's own failure, classified from its log (`OOM`, `ProcessExited`, ...). */
  failure: LaunchFailure,
  /** How each rank was stopped (`rank 1 on node-b: killed`), or why it could not be. */
  stopped: Schema.Array(Schema.String),
  fix: Schema.String
}) {
  override get message() {
    return `${this.name}: rank ${this.rank} on ${this.host} failed (${this.failure._tag}): ${this.failure.message}\n  every rank was stopped: ${this.stopped.join("; ")}\n  fix: ${this.fix}`
  }
}

/** The HTTP port is taken on the host (by the named process when `ss` can see it). */
export class PortUnavailable extends Schema.TaggedError<PortUnavailable>()("PortUnavailable", {
  host: Schema.String,
  port: Schema.Number,
  pid: Schema.optional(Schema.Number),
  command: Schema.optional(Schema.String),
  /** The mlops deployment holding it, when it is one of ours. */
  deployment: Schema.optional(Schema.String),
  fix: Schema.String
}) {
  override get message() {
    const who =
      this.pid !== undefined
        ? `pid ${this.pid}${this.command ? ` (${this.command})` : ""}${this.deployment === undefined ? "" : `, our deployment ${this.deployment}`}`
        : "another process"
    return `port ${this.port} on ${this.host} is held by ${who}; ${this.fix}`
  }
}

/** A process holding memory on a GPU a launch would use. */
export const GpuHolder = Schema.Struct({
  pid: Schema.Number,
  gpu: Schema.Number,
  usedMiB: Schema.optional(Schema.Number),
  /** Its command line (secret values shown as `***`), when `ps` could see it. */
  command: Schema.optional(Schema.String),
  /** The mlops deployment it belongs to, when it is one of ours. */
  deployment: Schema.optional(Schema.String)
})
export type GpuHolder = typeof GpuHolder.Type

/** A GPU a launch would use, with memory in use. */
export const BusyGpu = Schema.Struct({
  index: Schema.Number,
  name: Schema.String,
  usedMiB: Schema.Number,
  totalMiB: Schema.Number
})
export type BusyGpu = typeof BusyGpu.Type

/** Other processes hold memory on GPUs this launch would use. */
export class GpusBusy extends Schema.TaggedError<GpusBusy>()("GpusBusy", {
  host: Schema.String,
  gpus: Schema.Array(BusyGpu),
  holders: Schema.Array(GpuHolder),
  fix: Schema.String
}) {
  override get message() {
    const gpus = this.gpus.map((g) => `GPU ${g.index} (${g.usedMiB} of ${g.totalMiB} MiB in use)`).join(", ")
    const holders =
      this.holders.length === 0
        ? "processes mlops cannot see (another user or container)"
        : this.holders
            .map(
              (h) =>
                `pid ${h.pid}${h.deployment === undefined ? "" : ` (deployment ${h.deployment})`}${h.usedMiB === undefined ? "" : ` ${h.usedMiB} MiB`} on GPU ${h.gpu}${h.command === undefined ? "" : `: ${h.command}`}`
            )
            .join("; ")
    return `${gpus} on ${this.host} already hold memory: ${holders}; ${this.fix}`
  }
}

/** The Python environment has no usable engine. */
export class PythonEnvUnusable extends Schema.TaggedError<PythonEnvUnusable>()("PythonEnvUnusable", {
  host: Schema.String,
  python: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `${this.python} on ${this.host}: ${this.reason}; ${this.fix}`
  }
}

/** A deployment of that name runs with other args (or is unhealthy) and `replace` was not asked for. */
export class DeploymentExists extends Schema.TaggedError<DeploymentExists>()("DeploymentExists", {
  host: Schema.String,
  name: Schema.String,
  /** What runs it (`pid 1012`, a batch job's id). */
  server: Schema.String,
  reason: Schema.String,
  runningArgv: Schema.Array(Schema.String),
  fix: Schema.String
}) {
  override get message() {
    return `deployment ${this.name} already runs on ${this.host} (${this.server}): ${this.reason}; ${this.fix}`
  }
}

/** The launch did not become ready within the overall cap. */
export class LaunchTimedOut extends Schema.TaggedError<LaunchTimedOut>()("LaunchTimedOut", {
  host: Schema.String,
  name: Schema.String,
  timeoutMs: Schema.Number,
  phase: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `launch of ${this.name} on ${this.host} not ready after ${this.timeoutMs} ms (last phase ${this.phase}); ${this.fix}`
  }
}

/** The server said it is ready but an endpoint did not answer as it should. */
export class NotHealthy extends Schema.TaggedError<NotHealthy>()("NotHealthy", {
  host: Schema.String,
  name: Schema.String,
  endpoint: Schema.String,
  status: Schema.optional(Schema.Number),
  reason: Schema.String,
  /** How far it got, from its start: the port, `/health`, a streamed token. */
  timeToReady: Schema.optional(TimeToReady)
}) {
  override get message() {
    const reached = this.timeToReady === undefined ? "" : ` (${describeTimeToReady(this.timeToReady)})`
    return `${this.name} on ${this.host}: ${this.endpoint} ${this.status === undefined ? "failed" : `answered ${this.status}`}: ${this.reason}${reached}`
  }
}

/** A deployment name that cannot be a directory name. */
export class InvalidDeploymentName extends Schema.TaggedError<InvalidDeploymentName>()(
  "InvalidDeploymentName",
  {
    name: Schema.String,
    fix: Schema.String
  }
) {
  override get message() {
    return `invalid deployment name ${JSON.stringify(this.name)}: ${this.fix}`
  }
}

/** One host problem preflight found (several are reported together as `HostNotReady`). */
export const HostProblem = Schema.Union(
  PythonEnvUnusable,
  UnsupportedEngineVersion,
  NotEnoughGpus,
  NotEnoughHosts,
  GpusBusy,
  PortUnavailable,
  ModelNotFound,
  InvalidModelConfig,
  Errors.ProbeFailed,
  Errors.RemoteFileError
)
export type HostProblem = typeof HostProblem.Type

/**
 * A runtime's or a placement's own problem (an image whose CUDA the driver cannot run, a
 * scheduler refusing the job's request): one of the registries' errors.
 */
const SeamProblem = Schema.declare(
  (u: unknown): u is PlacementError | RuntimeError =>
    typeof u === "object" &&
    u !== null &&
    "_tag" in u &&
    typeof u._tag === "string" &&
    "message" in u &&
    typeof u.message === "string",
  { identifier: "SeamProblem" }
)

/**
 * Several things about the host stand in the way of this launch: all of them, in a fixed
 * order (engine, GPUs and hosts, port, model, placement), so one run tells everything to fix.
 */
export class HostNotReady extends Schema.TaggedError<HostNotReady>()("HostNotReady", {
  host: Schema.String,
  problems: Schema.Array(Schema.Union(HostProblem, SeamProblem))
}) {
  override get message() {
    return [
      `${this.host} is not ready for this launch: ${this.problems.length} problems`,
      ...this.problems.map((p, i) => `${i + 1}. ${p.message} [${p._tag}]`)
    ].join("\n")
  }
}
