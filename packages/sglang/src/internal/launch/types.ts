/**
 * The values of the launch program: its request, its progress events and its own errors.
 * Public through `Launch.ts`.
 *
 * @internal
 */
import type { LogTail, Probes, Tunnel } from "@mlops/core"
import * as Errors from "@mlops/core/Errors"
import type { Duration } from "effect"
import { Schema } from "effect"
import type { ArgvError } from "../../ArgvErrors.js"
import { UnsupportedSglangVersion } from "../../Catalogue.js"
import type { Deployment } from "../../Deployment.js"
import { type LaunchFailure, ModelNotFound } from "../../Failures.js"
import type { LaunchEvent } from "../../LaunchEvent.js"
import { InvalidModelConfig } from "../../ModelTraits.js"
import type { LaunchRulesViolated } from "../../Resolve.js"
import type { ServerArgs } from "../../ServerArgs.js"

/** What to launch where. Only `host` and `argv` are required. */
export interface LaunchRequest {
  /** Host alias (ssh_config / mlops hosts file, or `sim`). */
  readonly host: string
  /** Deployment name (a directory name); default: the model directory's name, lower-cased. */
  readonly name?: string
  /** SGLang flags exactly as `python -m sglang.launch_server` takes them. */
  readonly argv: ReadonlyArray<string>
  /** Environment of the server process (e.g. `SGLANG_ENABLE_SPEC_V2=1`). */
  readonly env?: Readonly<Record<string, string>>
  /** Probe the host and check the flags before spawning. Default true. */
  readonly preflight?: boolean
  /** Also run the host's own SGLang argument parsing (no model load). Default false. */
  readonly remoteCheck?: boolean
  /** Relaunch with the failure's fix at most this many times. Default 0 (off). */
  readonly autoFix?: number
  /** Stop a running deployment of the same name with different args first. Default false. */
  readonly replace?: boolean
  /** Stop the server when the launch is interrupted. Default false (it keeps running). */
  readonly stopOnInterrupt?: boolean
  /** Open a local tunnel to the server (`deployment.url`). Default false. */
  readonly tunnel?: boolean
  /** No new phase for this long → StartupStalled. Default 5 minutes. */
  readonly stallTimeout?: Duration.DurationInput
  /** Cap on the whole launch. Default 30 minutes. */
  readonly overallTimeout?: Duration.DurationInput
  /**
   * Python environment: a venv/conda prefix or an interpreter. Default: the host's `python` in
   * hosts.json, else the first environment with SGLang among `~/ml-env`, `~/.venv`, `~/venv`,
   * conda environments, `python3` on PATH and the `sglang` entry point (the `Python` event says
   * which).
   */
  readonly python?: string
  /** Start even when other processes hold memory on the GPUs this launch would use. Default false. */
  readonly allowBusyGpus?: boolean
  /** From the ready line to `/health`, `/generate` and `/v1/models` all answering. Default 2 minutes, within `overallTimeout`. */
  readonly readinessTimeout?: Duration.DurationInput
}

/** The Python environment a launch runs SGLang with, and where that choice came from. */
export interface PythonFacts {
  /** The interpreter run on the host. */
  readonly interpreter: string
  /** The value to pin it with (`--python`, or `python` in hosts.json). */
  readonly setting: string
  /** `--python`, `hosts.json`, or `discovered`. */
  readonly source: "--python" | "hosts.json" | "discovered"
  /** Where discovery found it: `configured`, `home`, `conda`, `path`, `entry-point`. */
  readonly how: string
  readonly pythonVersion: string
  readonly sglangVersion: string
  /** `metadata` (an installed package) or `version.py` (a source checkout). */
  readonly versionSource: "metadata" | "version.py"
  readonly location: string
}

/** What preflight learned about the host. */
export interface PreflightFacts {
  readonly python: string
  readonly pythonVersion: string
  readonly sglangVersion: string
  readonly gpus: ReadonlyArray<Probes.Gpu>
  readonly port: number
  readonly model: { readonly path: string; readonly architecture: string | undefined }
  /** GPUs of this launch that other processes hold memory on (only when `allowBusyGpus`). */
  readonly busyGpus: ReadonlyArray<GpuHolder>
}

/** Every step of a launch, in order; the last element of a successful launch is `Launched`. */
export type LaunchProgress =
  | { readonly _tag: "Connected"; readonly host: string; readonly name: string; readonly elapsedMs: number }
  /** The Python environment chosen (configured or discovered). */
  | { readonly _tag: "Python"; readonly python: PythonFacts; readonly elapsedMs: number }
  | { readonly _tag: "Preflight"; readonly facts: PreflightFacts; readonly elapsedMs: number }
  | {
      readonly _tag: "Resolved"
      readonly effective: ServerArgs
      /** SGLang's own auto-adjustment messages, in order. */
      readonly adjustments: ReadonlyArray<string>
      readonly commandLine: string
    }
  | { readonly _tag: "RemoteChecked"; readonly elapsedMs: number }
  | { readonly _tag: "AlreadyRunning"; readonly deployment: Deployment }
  | { readonly _tag: "Replacing"; readonly name: string; readonly pid: number; readonly outcome: string }
  | {
      readonly _tag: "Spawned"
      readonly attempt: number
      readonly pid: number
      readonly pgid: number
      readonly runDir: string
      readonly logPath: string
      readonly commandLine: string
    }
  /** A classifier event from the server log (phases with timings, adjustments, warnings, progress). */
  | { readonly _tag: "Log"; readonly event: LaunchEvent; readonly elapsedMs: number }
  | {
      readonly _tag: "HealthChecked"
      readonly endpoint: string
      readonly status: number
      readonly elapsedMs: number
    }
  | {
      readonly _tag: "AttemptFailed"
      readonly attempt: number
      readonly failure: LaunchFailure | LaunchRulesViolated
      /** The flags of the next attempt, when auto-fix relaunches. */
      readonly nextArgv: ReadonlyArray<string> | undefined
    }
  /** The connection dropped during the launch; the launch goes on once it is back. */
  | { readonly _tag: "Disconnected"; readonly reason: string; readonly elapsedMs: number }
  /** The connection is back after `downMs`; watching, the log follow and readiness resume. */
  | { readonly _tag: "Reconnected"; readonly downMs: number; readonly elapsedMs: number }
  | { readonly _tag: "Launched"; readonly deployment: Deployment }

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

/** The HTTP port is taken on the host (by the named process when `ss` can see it). */
export class PortUnavailable extends Schema.TaggedError<PortUnavailable>()("PortUnavailable", {
  host: Schema.String,
  port: Schema.Number,
  pid: Schema.optional(Schema.Number),
  command: Schema.optional(Schema.String),
  fix: Schema.String
}) {
  override get message() {
    const who =
      this.pid !== undefined
        ? `pid ${this.pid}${this.command ? ` (${this.command})` : ""}`
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

/** The Python environment has no usable SGLang. */
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
  pid: Schema.Number,
  reason: Schema.String,
  runningArgv: Schema.Array(Schema.String),
  fix: Schema.String
}) {
  override get message() {
    return `deployment ${this.name} already runs on ${this.host} (pid ${this.pid}): ${this.reason}; ${this.fix}`
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
  reason: Schema.String
}) {
  override get message() {
    return `${this.name} on ${this.host}: ${this.endpoint} ${this.status === undefined ? "failed" : `answered ${this.status}`}: ${this.reason}`
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
  UnsupportedSglangVersion,
  NotEnoughGpus,
  GpusBusy,
  PortUnavailable,
  ModelNotFound,
  InvalidModelConfig,
  Errors.ProbeFailed,
  Errors.RemoteFileError
)
export type HostProblem = typeof HostProblem.Type

/**
 * Several things about the host stand in the way of this launch: all of them, in a fixed
 * order (Python environment, GPUs, port, model), so one run tells everything to fix.
 */
export class HostNotReady extends Schema.TaggedError<HostNotReady>()("HostNotReady", {
  host: Schema.String,
  problems: Schema.Array(HostProblem)
}) {
  override get message() {
    return [
      `${this.host} is not ready for this launch: ${this.problems.length} problems`,
      ...this.problems.map((p, i) => `${i + 1}. ${p.message} [${p._tag}]`)
    ].join("\n")
  }
}

/** Everything a launch can fail with. */
export type LaunchError =
  | ArgvError
  | LaunchRulesViolated
  | LaunchFailure
  | UnsupportedSglangVersion
  | InvalidModelConfig
  | NotEnoughGpus
  | PortUnavailable
  | PythonEnvUnusable
  | GpusBusy
  | HostNotReady
  | DeploymentExists
  | InvalidDeploymentName
  | LaunchTimedOut
  | NotHealthy
  | Errors.CommandError
  | Errors.ProcessError
  | Errors.SpawnLocked
  | Errors.AlreadyRunning
  | Errors.RemoteFileError
  | Errors.HostNotFound
  | Errors.ConfigFileError
  | Errors.ProbeFailed
  | Errors.ForwardFailed
  | Errors.LogTruncated
  | Tunnel.TunnelTimeout
  | LogTail.FollowError
