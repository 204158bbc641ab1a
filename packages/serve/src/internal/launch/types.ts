/**
 * The values of the launch program: its request, its progress events and its own errors.
 * Public through `Launch.ts`.
 *
 * @internal
 */

import type { Errors, LogTail, Probes, Tunnel } from "@mlops/core"
import type { GetError } from "@mlops/core/ConnectionPool"
import type { Duration } from "effect"
import type { ArgvError } from "../../ArgvErrors.js"
import type { Deployment } from "../../Deployment.js"
import type { Engine, FlagsError } from "../../Engine.js"
import type { LaunchFailure } from "../../Failures.js"
import type { LaunchEvent } from "../../LaunchEvent.js"
import type { InvalidModelConfig } from "../../ModelTraits.js"
import type { CrossNodeProblems } from "../../MultiNodePreflight.js"
import type { InvalidPlacement, Spec as PlacementSpec, ServerRef } from "../../Placement.js"
import type { PlacementError } from "../../Placements.js"
import type { InvalidRuntime, Spec as RuntimeSpec } from "../../Runtime.js"
import type { RuntimeError } from "../../Runtimes.js"
import type { GpuMemoryStillHeld, RanksNotStopped } from "../../Stop.js"
import type { LaunchRulesViolated } from "../../Violations.js"
import type {
  DeploymentExists,
  GpuHolder,
  GpusBusy,
  HostNotReady,
  InvalidDeploymentName,
  InvalidHosts,
  LaunchTimedOut,
  NotEnoughGpus,
  NotEnoughHosts,
  NotHealthy,
  PortUnavailable,
  PythonEnvUnusable,
  RankFailed
} from "./errors.js"

export * from "./errors.js"

/** What to launch where. Only `host`, `engine` and `argv` are required. */
export interface LaunchRequest {
  /** Host alias (ssh_config / mlops hosts file, or `sim`); across several hosts, rank 0's (the first of `hosts`). */
  readonly host: string
  /**
   * Every host of one deployment across several, rank 0's first (`host`): the argv is the whole
   * deployment's (`--tp` counts every GPU) and each host runs one rank of it, the engine's
   * rank flags (`--nnodes`, `--node-rank`, the rendezvous) written by mlops. Default: `[host]`.
   */
  readonly hosts?: ReadonlyArray<string>
  /** Where the ranks meet on rank 0's host. Default: a free port there from 29500 up. */
  readonly rendezvousPort?: number
  /**
   * The engine, or the engines to look for in order of preference: the first one the host's
   * Python environment has is launched.
   */
  readonly engine: Engine | ReadonlyArray<Engine>
  /**
   * Where the server runs: a placement's spec (a placement module's `spec(...)`, its
   * settings over the host entry's). Default: what the host's hosts.json entry makes it (a
   * batch job from a login node whose entry names a scheduler, else a detached process group
   * on the host), from the `Placements` registry.
   */
  readonly placement?: PlacementSpec
  /**
   * How the engine is found and started: a runtime's spec (`PythonEnvRuntime.spec("~/ml-env")`,
   * what `--python` gives). Default: the host's `python` in hosts.json, else the first
   * environment with the engine among `~/ml-env`, `~/<engine>-env`, `~/.venv`, `~/venv`, conda
   * environments, `python3` on PATH and the engine's entry point (the `Python` event says which).
   */
  readonly runtime?: RuntimeSpec
  /** Deployment name (a directory name); default: the model directory's name, lower-cased. */
  readonly name?: string
  /** The engine's flags exactly as its command takes them (`python -m sglang.launch_server ...`, `vllm serve ...`). */
  readonly argv: ReadonlyArray<string>
  /** Environment of the server process (e.g. `SGLANG_ENABLE_SPEC_V2=1`). */
  readonly env?: Readonly<Record<string, string>>
  /** Probe the host and check the flags before spawning. Default true. */
  readonly preflight?: boolean
  /**
   * Also run the host's own argument parsing (no model load). Default: only when mlops
   * has not verified its rules for the host's engine version.
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
  /** Start even when other processes hold memory on the GPUs this launch would use. Default false. */
  readonly allowBusyGpus?: boolean
  /** From the ready line to `/health`, `/generate` and `/v1/models` all answering. Default 2 minutes, within `overallTimeout`. */
  readonly readinessTimeout?: Duration.DurationInput
}

/** The Python environment a launch runs its engine with, and where that choice came from. */
export interface PythonFacts {
  /** The interpreter that runs the engine (on the host, or inside an image). */
  readonly interpreter: string
  /** Where it is, as a person names it: `at /home/ml/ml-env/bin/python`, `in image lmsysorg/sglang:v0.5.11 (1a2b3c4d5e6f) at /usr/bin/python3`. */
  readonly where: string
  /** The value to pin it with (`--python`, or `python` in hosts.json). */
  readonly setting: string
  /** What set it: `--python` or `--image`, `hosts.json`, or `discovered`. */
  readonly source: "--python" | "--image" | "hosts.json" | "discovered"
  /** Where discovery found it: `configured`, `home`, `conda`, `path`, `entry-point`. */
  readonly how: string
  readonly pythonVersion: string
  /** The engine found there (`sglang`), its Python distribution and version. */
  readonly engine: string
  readonly package: string
  readonly engineVersion: string
  /** `metadata` (an installed package) or `version.py` (a source checkout). */
  readonly versionSource: "metadata" | "version.py"
  readonly location: string
}

/** What preflight learned about the host. */
export interface PreflightFacts {
  readonly python: string
  readonly pythonVersion: string
  readonly engine: string
  readonly engineVersion: string
  /** The host's GPUs, probed when the server runs on the host itself; undefined when it runs elsewhere (a compute node a scheduler picks). */
  readonly gpus: ReadonlyArray<Probes.Gpu> | undefined
  readonly port: number
  /** Whether the port was checked free on the host (not where the server runs elsewhere). */
  readonly portChecked: boolean
  /** Where the server runs (`Placement.description`) and what the placement's own checks found. */
  readonly placement: { readonly description: string; readonly summary: string | undefined }
  /** How the engine is found and started (`Runtime.description`) and what the runtime's own checks found. */
  readonly runtime: { readonly description: string; readonly summary: string | undefined }
  readonly model: { readonly path: string; readonly architecture: string | undefined }
  /** GPUs of this launch that other processes hold memory on (only when `allowBusyGpus`). */
  readonly busyGpus: ReadonlyArray<GpuHolder>
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

/** Which rank of a deployment across several hosts an event is about. */
export interface RankOf {
  readonly rank: number
  readonly host: string
}

/** Every step of a launch, in order; the last element of a successful launch is `Launched`. */
export type LaunchProgress =
  | { readonly _tag: "Connected"; readonly host: string; readonly name: string; readonly elapsedMs: number }
  /** A step the runtime takes before anything else (pulling an image), each time its progress moves. */
  | {
      readonly _tag: "Preparing"
      /** `pulling lmsysorg/sglang:v0.5.11`. */
      readonly step: string
      /** The tool's latest word on it. */
      readonly detail: string
      readonly elapsedMs: number
      /** The rank whose host it is, across several hosts (each prepares its own). */
      readonly rank?: RankOf
    }
  /** The Python environment chosen (configured or discovered). */
  | { readonly _tag: "Python"; readonly python: PythonFacts; readonly elapsedMs: number }
  | { readonly _tag: "Preflight"; readonly facts: PreflightFacts; readonly elapsedMs: number }
  | {
      readonly _tag: "Resolved"
      readonly effective: Readonly<Record<string, unknown>>
      /** The engine's own auto-adjustment messages, in order. */
      readonly adjustments: ReadonlyArray<string>
      readonly commandLine: string
      /** False when only the argv was checked (mlops has not verified its rules for this version). */
      readonly rulesVerified: boolean
    }
  | {
      readonly _tag: "RemoteChecked"
      /** The engine whose own parser checked the command (`SGLang`, `vLLM`). */
      readonly engine: string
      readonly elapsedMs: number
      /** Asked for, or run because mlops has not verified its rules for this version. */
      readonly reason: "requested" | "rules-unverified"
    }
  | { readonly _tag: "AlreadyRunning"; readonly deployment: Deployment }
  | {
      readonly _tag: "Replacing"
      readonly name: string
      /** What ran it (`pid 1012`, a batch job's id). */
      readonly server: string
      readonly outcome: string
    }
  /** The hosts of a deployment across several were checked against each other and the ranks written. */
  | {
      readonly _tag: "RanksPlanned"
      readonly hosts: ReadonlyArray<string>
      /** The address the other ranks reach rank 0 by, and the port they meet at. */
      readonly rendezvous: { readonly address: string; readonly port: number }
      /** Interfaces to name for NCCL and Gloo (`--env NCCL_SOCKET_IFNAME=...`), when a node has several. */
      readonly suggestions: ReadonlyArray<string>
      readonly elapsedMs: number
    }
  | {
      readonly _tag: "Spawned"
      /** Its rank and host, across several hosts. */
      readonly rank?: RankOf
      readonly attempt: number
      /** What runs it, as its placement names it (a pid or a job id, with its ids). */
      readonly server: ServerRef
      readonly runDir: string
      readonly logPath: string
      readonly commandLine: string
    }
  /** A classifier event from the server log (phases with timings, adjustments, warnings, progress). */
  | { readonly _tag: "Log"; readonly event: LaunchEvent; readonly elapsedMs: number; readonly rank?: RankOf }
  /**
   * The placement's word on the server changed (a batch job's `PENDING (Resources)`, `RUNNING on
   * gpu01`, and how it ended, `FAILED ExitCode=1:0`, before the launch's failure).
   */
  | {
      readonly _tag: "PlacementState"
      readonly rank?: RankOf
      /** What runs it (a batch job's id). */
      readonly server: string
      readonly state: string
      readonly elapsedMs: number
    }
  | {
      readonly _tag: "HealthChecked"
      readonly endpoint: string
      readonly status: number
      readonly elapsedMs: number
    }
  | {
      readonly _tag: "AttemptFailed"
      readonly attempt: number
      /** The rank that failed, across several hosts. */
      readonly rank?: RankOf
      readonly failure: LaunchFailure | LaunchRulesViolated | PlacementError
      /** The flags of the next attempt, when auto-fix relaunches. */
      readonly nextArgv: ReadonlyArray<string> | undefined
    }
  /** The connection dropped during the launch; the launch goes on once it is back. */
  | {
      readonly _tag: "Disconnected"
      readonly reason: string
      readonly elapsedMs: number
      readonly rank?: RankOf
    }
  /** The connection is back after `downMs`; watching, the log follow and readiness resume. */
  | {
      readonly _tag: "Reconnected"
      readonly downMs: number
      readonly elapsedMs: number
      readonly rank?: RankOf
    }
  | { readonly _tag: "Launched"; readonly deployment: Deployment }

/** Everything a launch can fail with. */
export type LaunchError =
  | PlacementError
  | RuntimeError
  | InvalidPlacement
  | InvalidRuntime
  | GetError
  | ArgvError
  | LaunchRulesViolated
  | LaunchFailure
  | FlagsError
  | InvalidModelConfig
  | NotEnoughGpus
  | NotEnoughHosts
  | InvalidHosts
  | RankFailed
  | CrossNodeProblems
  | GpuMemoryStillHeld
  | RanksNotStopped
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
