/**
 * Where a server (or a job) runs: the seam. A placement is chosen once per launch, from the
 * host's hosts.json entry and what the request asks for, as a `Spec` (its kind and its own
 * settings, plain JSON) that is stored in the deployment's record; `status`, `logs`, `stop`
 * and `rm` make the same placement again from the record. Everything that differs between a
 * detached process group on the SSH host and a batch job submitted from a cluster's login node (its
 * record files, its states and errors, where its server is reached, which host probes apply,
 * how a stop is confirmed, how it describes itself) is asked of it through the interfaces
 * below, never read from optional fields.
 *
 * A new placement is one module exporting a `Kind`, plus one entry in the registry the
 * programs are given (`Placements`). This module imports no placement.
 *
 * @since 0.1.0
 */
import type { Connection, ExitStatus } from "@mlops/core/Connection"
import type { ConnectionPool, GetError } from "@mlops/core/ConnectionPool"
import type { SpawnError } from "@mlops/core/Errors"
import type { HostConfig } from "@mlops/core/HostConfig"
import type { RemoteCommand } from "@mlops/core/RemoteCommand"
import { type Duration, type Effect, Either, type Schedule, Schema, type Stream } from "effect"
import type { GpuPlan, Rendezvous } from "./Engine.js"
import type { LaunchFailure } from "./Failures.js"
import * as Seams from "./internal/seams.js"
import type { Form, Runnable, ServerPaths } from "./Runtime.js"

/**
 * A placement as chosen for one launch: its kind (`detached-group`, a scheduler's) and the kind's own
 * settings. JSON, stored in the deployment's `meta.json`.
 *
 * @category models
 */
export type Spec = Seams.Spec

/** @category schemas */
export const Spec = Seams.Spec

/**
 * What a placement fails with: tagged errors (the connection's, a scheduler refusing a job or
 * losing track of it), each saying what went wrong and how to fix it. Every interface below is
 * generic in a placement's own errors `E`; the registry the programs use (`Placements`) names
 * the union of its placements' errors, so the programs' errors stay a closed union while this
 * module names none of them.
 *
 * @category models
 */
export interface PlacementError {
  readonly _tag: string
  readonly message: string
}

/** A placement spec that cannot be used: an unknown kind, settings that do not decode. @category errors */
export class InvalidPlacement extends Schema.TaggedError<InvalidPlacement>()("InvalidPlacement", {
  kind: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `placement ${this.kind}: ${this.reason}; ${this.fix}`
  }
}

/** How people and programs name a placed server. @category models */
export interface ServerRef {
  /** The placement's kind. */
  readonly placement: string
  /** `pid 1012`, a batch job's id. */
  readonly label: string
  /** What starting it was: `started pid 1012`, a job submitted. */
  readonly started: string
  /** Its ids as the placement knows them (`{ pid, pgid }`, `{ job }`), for `--json`. */
  readonly ids: Readonly<Record<string, string | number>>
}

/**
 * How the placement reports a server that ended, given what its log says (the classifier's
 * failure, when it found one): that failure itself, or the placement's own error carrying it
 * with its word on the end (a batch job's final state).
 *
 * @category models
 */
export type Reporter<E = PlacementError> = (
  failure: LaunchFailure | undefined
) => LaunchFailure | E | undefined

/** What `watch` reports until the server ends. @category models */
export type WatchEvent<E = PlacementError> =
  | { readonly _tag: "Disconnected"; readonly reason: string }
  | { readonly _tag: "Reconnected" }
  /**
   * The placement's word on the server when it changes (a batch job's `PENDING (Resources)`,
   * `RUNNING on gpu01`); `waiting` while it waits for resources (not a stall).
   */
  | { readonly _tag: "State"; readonly state: string; readonly waiting: boolean }
  /** The last element: how it ended, and how to report it. */
  | {
      readonly _tag: "Exited"
      readonly status: ExitStatus | undefined
      readonly report: Reporter<E>
    }

/** @category models */
export interface WatchOptions {
  /** Re-acquiring the connection after a drop. */
  readonly reconnect?: Schedule.Schedule<unknown, unknown>
}

/** How a stop ended the server. @category models */
export type StopOutcome = "exited-before" | "terminated" | "killed"

/** How killing what was left of a dead server went. @category models */
export type KillOutcome = "gone" | "still-running"

/** GPU memory the server's processes still hold. @category models */
export interface HeldGpuMemory {
  readonly pids: ReadonlyArray<number>
  readonly usedMiB: number
  readonly fix: string
}

/** A stop's confirmation, taken before the stop (the processes to watch are known then). @category models */
export interface GpuRelease<E = PlacementError> {
  /** Wait up to `within` until none of the server's processes holds GPU memory; what is still held otherwise. */
  readonly confirm: (within: Duration.DurationInput) => Effect.Effect<HeldGpuMemory | undefined, E>
}

/** What `status` shows of a placed server, read at once. @category models */
export interface Inspection<E = PlacementError> {
  readonly alive: boolean
  /** How it ended, once it has and said so. */
  readonly exit: ExitStatus | undefined
  /** The placement's word on it (`RUNNING on gpu01, 2 GPUs`), when it has one. */
  readonly state: string | undefined
  /** Where its server is reached from the host, while it runs. */
  readonly address: string | undefined
  /** MiB of GPU memory its processes hold, when the host can see them. */
  readonly gpuMemoryMiB: number | undefined
  /** How long it has run, when the placement knows better than the record (a job that queued first). */
  readonly runningMs: number | undefined
  /** The placement's own facts (`{ job, node, gpus, elapsedSeconds }`), for `--json`. */
  readonly details: Readonly<Record<string, unknown>>
  /** How to report it if it ended. */
  readonly report: Reporter<E>
}

/** A process on the host, for "is this one of ours". @category models */
export interface HostProcess {
  readonly pid: number
  readonly pgid: number
}

/** A started server (or job), as its placement knows it. @category models */
export interface Placed<E = PlacementError> {
  /** The host alias the placement was reached through (the SSH host, or a cluster's login node). */
  readonly host: string
  readonly runDir: string
  readonly logPath: string
  readonly server: ServerRef
  readonly isAlive: (conn: Connection) => Effect.Effect<boolean, E>
  /** Follow it until it ends (the last element is `Exited`), across dropped connections. */
  readonly watch: (
    alias: string,
    options?: WatchOptions
  ) => Stream.Stream<WatchEvent<E>, E | GetError, ConnectionPool>
  /** KILL what is left of a server whose main process died (not a deliberate stop: nothing is recorded). */
  readonly kill: (conn: Connection) => Effect.Effect<KillOutcome, E>
  /** TERM, then KILL after `grace`, only while what runs is still ours; recorded as a deliberate stop. */
  readonly stop: (conn: Connection, grace?: Duration.DurationInput) => Effect.Effect<StopOutcome, E>
  /** Where its server is reached from the host (`127.0.0.1`, a compute node's address). */
  readonly address: (conn: Connection) => Effect.Effect<string, E>
  readonly inspect: (conn: Connection) => Effect.Effect<Inspection<E>, E>
  /** Before a stop: how to confirm afterwards that its GPU memory is free. */
  readonly gpuRelease: (conn: Connection) => Effect.Effect<GpuRelease<E>, E>
  /** Whether a process of the host belongs to it (a port or GPU holder named as ours). */
  readonly holds: (process: HostProcess) => boolean
  /** Remove what the placement keeps of it once it ended, beside the run directory (an exited container); `rm` asks. */
  readonly discard: (conn: Connection) => Effect.Effect<void, E>
}

/** What the placement checks before anything is written or started. @category models */
export interface PreflightRequest {
  /** The deployment (a job's name). */
  readonly name: string
  /** The GPUs the launch needs. */
  readonly gpus: GpuPlan
  /** The port the server listens on. */
  readonly port: number
}

/** What a placement's preflight learned, in one line for the preflight report (a scheduler's partition and how many of its nodes fit). @category models */
export interface PlacementFacts {
  readonly summary: string | undefined
}

/** @category models */
export interface SpawnRequest {
  readonly runDir: string
  readonly logPath: string
  /** Names this start, so a start whose answer was lost is recognised as ours. */
  readonly token: string
  readonly name: string
  readonly gpus: GpuPlan
  /** What the server reads and writes on the host: a placement that isolates it (a container) gives it these. */
  readonly paths: ServerPaths
  readonly reconnect?: Schedule.Schedule<unknown, unknown>
}

/**
 * Stands for the head node's address in the ranks' commands of a placement that spans nodes: it
 * is known only once the scheduler has placed the job, where the placement puts it in.
 *
 * @category constants
 */
export const headAddress = "$MLOPS_HEAD"

/**
 * The commands one start of `placement` runs: the argv itself, or, for a placement that spans
 * nodes, each node's rank as the engine writes it (rank 0's first) meeting at `headAddress` on
 * `port`. Without a port, one from 29500 up that the deployment's name picks, so that two
 * deployments sharing a head node do not pick the same one.
 *
 * @category running
 */
export const rankCommands = (
  placement: { readonly nodes: number },
  ranks: (argv: ReadonlyArray<string>, rendezvous: Rendezvous) => ReadonlyArray<ReadonlyArray<string>>,
  argv: ReadonlyArray<string>,
  o: { readonly name: string; readonly port?: number | undefined }
): readonly [ReadonlyArray<string>, ...Array<ReadonlyArray<string>>] => {
  if (placement.nodes <= 1) return [argv]
  const [first, ...rest] = ranks(argv, {
    nodes: placement.nodes,
    head: headAddress,
    port: o.port ?? rendezvousPortOf(o.name)
  })
  return [first ?? argv, ...rest]
}

/** 29500 (torch's default) to 29999, by the name (a stable string hash). */
const rendezvousPortOf = (name: string): number => {
  let hash = 0
  for (const char of name) hash = (hash * 31 + char.charCodeAt(0)) >>> 0
  return 29500 + (hash % 500)
}

/** The host's files a server uses (defined with the runtime's programs, which read them too). @category models */
export type { ServerPaths } from "./Runtime.js"

/** Other servers of this kind on the host, every user's (a cluster's queue). @category models */
export interface Neighbours {
  /** what the listing is (a scheduler's queue of mlops jobs, every user's). */
  readonly title: string
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
  /** The same rows as objects, for `--json`. */
  readonly records: ReadonlyArray<Readonly<Record<string, unknown>>>
}

/** A placement for one spec on one host. @category models */
export interface Placement<E = PlacementError> {
  readonly spec: Spec
  /** `a detached process group on ct129`, a batch job from a login node. */
  readonly description: string
  /**
   * Whether the server runs on the SSH host itself, so that its GPUs, the processes on them and
   * the port are probed there; false when it runs elsewhere (a compute node the scheduler picks).
   */
  readonly onHost: boolean
  /**
   * The nodes one start spans (a Slurm job's `--nodes`): 1, or that many ranks, rank 0's node
   * first, their commands written by the engine with `headAddress` for the head's address.
   */
  readonly nodes: number
  /** The placement's own checks, every problem at once, before anything is written or started. */
  readonly preflight: (conn: Connection, request: PreflightRequest) => Effect.Effect<PlacementFacts, E>
  /**
   * Start what the runtime made (of a form the kind runs) with its output in `logPath`, across
   * dropped connections: one runnable per node it spans (`nodes`), rank 0's first.
   */
  readonly spawn: (
    alias: string,
    runnables: readonly [Runnable, ...Array<Runnable>],
    request: SpawnRequest
  ) => Effect.Effect<Placed<E>, E | InvalidPlacement | SpawnError | GetError, ConnectionPool>
  /** The server a run directory records; undefined when it records no start. */
  readonly attach: (
    conn: Connection,
    record: { readonly runDir: string; readonly logPath: string }
  ) => Effect.Effect<Placed<E> | undefined, E>
  /** Whether a start of this run directory is under way. */
  readonly starting: (conn: Connection, runDir: string) => Effect.Effect<boolean, E>
  /** Every user's servers of this kind that mlops started on the host, when it can list them. */
  readonly neighbours: (conn: Connection) => Effect.Effect<Neighbours | undefined, E>
}

/** A kind of placement: how a spec is chosen for a host and made into a placement. @category models */
export interface Kind<E = PlacementError> extends Seams.KindOf<Placement<E>, InvalidPlacement, Form> {
  /** Its name in specs and records. */
  readonly kind: string
  /**
   * This kind's spec for a launch on `host` of what a runtime of `form` makes, when the kind
   * applies: `asked` is this kind's spec from the request (its settings over the host entry's),
   * or undefined when the request asked for none (then the host's entry decides). Undefined: the
   * kind does not apply; a refusal: it was asked for (or the host's entry names it) but cannot
   * run that form.
   */
  readonly resolve: (
    host: HostConfig,
    asked: Spec | undefined,
    form: Form
  ) => Either.Either<Spec | undefined, InvalidPlacement>
  /** The placement a spec describes, on the host it was reached through. */
  readonly make: (spec: Spec, host: HostConfig) => Either.Either<Placement<E>, InvalidPlacement>
}

/** The kinds a program knows, in order: without a request, the first that applies to a host is chosen. @category models */
export type Registry<E = PlacementError> = ReadonlyArray<Kind<E>>

const invalid = (kind: string, reason: string, fix: string) => new InvalidPlacement({ kind, reason, fix })

/**
 * The command of a runnable a placement runs on the host; a refusal for an image (resolution
 * keeps the two apart: this is the guard behind it).
 *
 * @category running
 */
export const hostCommand = (
  kind: string,
  runnable: Runnable
): Either.Either<RemoteCommand, InvalidPlacement> =>
  runnable._tag === "OnHost"
    ? Either.right(runnable.command)
    : Either.left(
        invalid(
          kind,
          `it runs a command on the host, not the image ${runnable.image}`,
          "launch the image on a plain host"
        )
      )

/**
 * The placement for a launch on `host` of what a runtime of `form` makes: the kind `asked`
 * names (its settings merged with the host's entry), or the first kind of the registry that
 * applies to the host and that form.
 *
 * @category resolving
 */
export const resolve = <E>(
  registry: Registry<E>,
  host: HostConfig,
  form: Form,
  asked?: Spec
): Either.Either<Placement<E>, InvalidPlacement> => Seams.resolve(registry, host, asked, invalid, form)

/**
 * The placement a deployment record's spec describes.
 *
 * @category resolving
 */
export const fromRecord = <E>(
  registry: Registry<E>,
  spec: Spec,
  host: HostConfig
): Either.Either<Placement<E>, InvalidPlacement> => Seams.fromRecord(registry, spec, host, invalid)
