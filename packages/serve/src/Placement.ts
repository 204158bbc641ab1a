/**
 * Where a server runs. A placement starts the engine's command in a deployment's run
 * directory, tells whether it still runs, follows it to its end and stops it; the launch
 * program, `status`, `logs` and `stop` only talk to it through this interface, so another
 * placement (a Slurm job started from a cluster's login node) is one more value of this type,
 * and no engine changes.
 *
 * Today's placement is `detachedGroup`: a detached process group on the SSH host itself
 * (core's `RemoteProcess`: a lock per run directory, pid/pgid/start-time files, a fresh log
 * per start, an `exit` file written by the supervisor).
 *
 * @since 0.1.0
 */

import type { Connection, ExitStatus } from "@mlops/core/Connection"
import type { ConnectionPool, GetError } from "@mlops/core/ConnectionPool"
import type { ConnectError, ProcessError, RemoteFileError, SpawnError } from "@mlops/core/Errors"
import type { RemoteCommand } from "@mlops/core/RemoteCommand"
import * as RemoteProcess from "@mlops/core/RemoteProcess"
import type {
  SlurmError,
  SlurmJobNotFound,
  SlurmJobStillActive,
  SlurmPreflightFailed,
  SlurmSubmitRefused
} from "@mlops/core/SlurmErrors"
import type { SlurmJob } from "@mlops/core/SlurmJob"
import type { Duration, Effect, Schedule, Stream } from "effect"
import * as SlurmPlacement from "./SlurmPlacement.js"

/** A started server as its placement knows it. @category models */
export interface Placed {
  /** The host alias the placement was reached through (the SSH host, or a cluster's login node). */
  readonly host: string
  readonly runDir: string
  readonly logPath: string
  /** The process (group leader) id where the server runs; for a batch job, its step's. */
  readonly pid: number
  readonly pgid: number
  /** The group leader's start time (`/proc/<pgid>/stat` field 22), when known. */
  readonly startTime?: string
  /** A batch scheduler's job id, for placements that have one. */
  readonly job?: string
  /**
   * The scheduler's record of that job, already read: the placement's `isAlive`, `exitStatus`,
   * `target` and `job` answer from it instead of asking again (`Status` reads it once). A
   * snapshot for one look: a value that is polled (watch, stop) must not carry it.
   */
  readonly jobRecord?: SlurmJob
}

/**
 * A batch scheduler's record of the job each time its state changes (Slurm: PENDING with its
 * reason, RUNNING on a node, how it ended with its ExitCode), before the final `Exited`.
 *
 * @category models
 */
export interface JobEvent {
  readonly _tag: "Job"
  readonly job: SlurmJob
}

/** What `watch` reports: the connection coming and going, a scheduler's job states, then how the server ended. @category models */
export type WatchEvent = RemoteProcess.WatchEvent | JobEvent

/** @category models */
export type StopOutcome = RemoteProcess.StopOutcome

/** What a batch-scheduler placement adds: the scheduler refusing, or losing track of, the job. @category models */
export type SchedulerError =
  | SlurmError
  | SlurmSubmitRefused
  | SlurmPreflightFailed
  | SlurmJobNotFound
  | SlurmJobStillActive

/** @category models */
export type PlacementError = SpawnError | RemoteProcess.ProcessStepError | SchedulerError

/** @category models */
export interface SpawnRequest {
  readonly runDir: string
  readonly logPath: string
  /** Names this start, so a start whose answer was lost is recognised as ours. */
  readonly token: string
  readonly reconnect?: Schedule.Schedule<unknown, unknown>
}

/** @category models */
export interface Placement {
  /** `detached-group`, `slurm`, ... (stored with each deployment). */
  readonly name: string
  /** Start `command` in `runDir` with its output in `logPath`, across dropped connections. */
  readonly spawn: (
    alias: string,
    command: RemoteCommand,
    request: SpawnRequest
  ) => Effect.Effect<Placed, PlacementError | GetError, ConnectionPool>
  /** The server a run directory describes (after a lost answer, or from a deployment record). */
  readonly attach: (
    conn: Connection,
    runDir: string,
    logPath: string
  ) => Effect.Effect<Placed, ProcessError | RemoteFileError | ConnectError>
  readonly isAlive: (conn: Connection, placed: Placed) => Effect.Effect<boolean, PlacementError>
  /** Follow the server until it ends (the last element is `Exited`). */
  readonly watch: (
    alias: string,
    placed: Placed,
    options?: RemoteProcess.WatchOptions
  ) => Stream.Stream<WatchEvent, PlacementError | GetError, ConnectionPool>
  /** How it ended, when it has and said so. */
  readonly exitStatus: (
    conn: Connection,
    placed: Placed
  ) => Effect.Effect<ExitStatus | undefined, RemoteFileError | ConnectError>
  /** KILL what is left of a server whose launcher died (not a deliberate stop: nothing is recorded). */
  readonly kill: (
    conn: Connection,
    placed: Placed
  ) => Effect.Effect<RemoteProcess.KillOutcome, PlacementError>
  /**
   * Where the running server is reached from the host when it is another machine (a batch
   * job's compute node, for the readiness tunnel `<target>:<port>`); absent: the host itself.
   */
  readonly target?: (conn: Connection, placed: Placed) => Effect.Effect<string, PlacementError>
  /** A batch scheduler's record of the job (its state, node, GPUs, elapsed time), for placements that submit one. */
  readonly job?: (conn: Connection, placed: Placed) => Effect.Effect<SlurmJob, PlacementError>
  /** TERM, then KILL after `grace`, only while what runs is still ours (recorded as a deliberate stop). */
  readonly stop: (
    conn: Connection,
    placed: Placed,
    grace?: Duration.DurationInput
  ) => Effect.Effect<StopOutcome, PlacementError>
}

/** A detached process group on the SSH host (core's `RemoteProcess`). @category placements */
export const detachedGroup: Placement = {
  name: "detached-group",
  spawn: (alias, command, request) =>
    RemoteProcess.spawn(alias, command, {
      runDir: request.runDir,
      logPath: request.logPath,
      token: request.token,
      ...(request.reconnect === undefined ? {} : { reconnect: request.reconnect })
    }),
  attach: (conn, runDir, logPath) => RemoteProcess.attach(conn, runDir, { logPath }),
  isAlive: (conn, placed) => RemoteProcess.isAlive(conn, placed),
  watch: (alias, placed, options) => RemoteProcess.watch(alias, placed, options),
  exitStatus: (conn, placed) => RemoteProcess.exitStatus(conn, placed),
  kill: (conn, placed) => RemoteProcess.kill(conn, placed),
  stop: (conn, placed, grace) => RemoteProcess.stop(conn, { ...placed }, grace === undefined ? {} : { grace })
}

/**
 * The placements mlops knows, by `name`. A Slurm job found from its record needs no submit
 * settings: status, logs and stop only ask the scheduler about the recorded job id.
 * @category placements
 */
export const known: ReadonlyArray<Placement> = [
  detachedGroup,
  SlurmPlacement.make({ settings: {}, gpus: 0, jobName: SlurmPlacement.jobPrefix })
]

/** The placement a deployment record names (records before placements were named: `detachedGroup`). @category placements */
export const of = (record: { readonly meta?: { readonly placement: string } | undefined }): Placement =>
  known.find((p) => p.name === record.meta?.placement) ?? detachedGroup
