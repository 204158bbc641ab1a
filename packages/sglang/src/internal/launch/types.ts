/**
 * The values of the launch program: its request, its progress events and its own errors.
 * Public through `Launch.ts`.
 *
 * @internal
 */
import type { Errors, LogTail, Probes, Tunnel } from "@mlops/core"
import type { Duration } from "effect"
import { Schema } from "effect"
import type { ArgvError } from "../../ArgvErrors.js"
import type { UnsupportedSglangVersion } from "../../Catalogue.js"
import type { Deployment } from "../../Deployment.js"
import type { LaunchFailure } from "../../Failures.js"
import type { LaunchEvent } from "../../LaunchEvent.js"
import type { InvalidModelConfig } from "../../ModelTraits.js"
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
  /**
   * Also run the host's own SGLang argument parsing (no model load). Default: only when mlops
   * has not verified its rules for the host's SGLang version.
   */
  readonly remoteCheck?: boolean
  /** Read the flags from the host's own parser even when mlops ships this version. Default false. */
  readonly flagsFromHost?: boolean
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
  /** Python environment prefix or interpreter; default: the host's configured python, else `~/ml-env`. */
  readonly python?: string
}

/** What preflight learned about the host. */
export interface PreflightFacts {
  readonly python: string
  readonly pythonVersion: string
  readonly sglangVersion: string
  readonly gpus: ReadonlyArray<Probes.Gpu>
  readonly port: number
  readonly model: { readonly path: string; readonly architecture: string | undefined }
  /**
   * The catalogue the flags were checked against: `shipped` with mlops, read from the host's own
   * parser (`dumped` now, or `cached` from an earlier run), or the `nearest` shipped release.
   */
  readonly flags: { readonly version: string; readonly source: "shipped" | "cached" | "dumped" | "nearest" }
  /** Whether mlops verified its launch rules for this version (else only the argv is checked). */
  readonly rulesVerified: boolean
  /** What the user should know about the flags check (e.g. why another release's catalogue stood in). */
  readonly warnings: ReadonlyArray<string>
}

/** Every step of a launch, in order; the last element of a successful launch is `Launched`. */
export type LaunchProgress =
  | { readonly _tag: "Connected"; readonly host: string; readonly name: string; readonly elapsedMs: number }
  | { readonly _tag: "Preflight"; readonly facts: PreflightFacts; readonly elapsedMs: number }
  | {
      readonly _tag: "Resolved"
      readonly effective: ServerArgs
      /** SGLang's own auto-adjustment messages, in order. */
      readonly adjustments: ReadonlyArray<string>
      readonly commandLine: string
      /** False when only the argv was checked (mlops has not verified its rules for this version). */
      readonly rulesVerified: boolean
    }
  | {
      readonly _tag: "RemoteChecked"
      readonly elapsedMs: number
      /** Asked for, or run because mlops has not verified its rules for this version. */
      readonly reason: "requested" | "rules-unverified"
    }
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
