/**
 * `status`: what runs where, read from the hosts themselves (the deployment directories), so
 * it works from any machine: pid, alive, phase (from `ready.json` or the log tail through the
 * classifier), health (`/health` through the tunnel), uptime, GPU memory of its processes,
 * and for a dead server the classified reason.
 *
 * @since 0.1.0
 */

import type { Connection } from "@mlops/core/Connection"
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import { Hosts } from "@mlops/core/Hosts"
import * as LogTail from "@mlops/core/LogTail"
import { describeState } from "@mlops/core/SlurmJob"
import { Clock, Effect } from "effect"
import * as Classifier from "./Classifier.js"
import * as Deployment from "./Deployment.js"
import * as Engine from "./Engine.js"
import type { LaunchFailure } from "./Failures.js"
import type { Phase } from "./LaunchEvent.js"
import * as Placement from "./Placement.js"
import { isHealthy } from "./Readiness.js"
import * as SlurmPlacement from "./SlurmPlacement.js"
import { gpuMemoryOf, groupPids } from "./Stop.js"

/** @category models */
export interface DeploymentStatus {
  readonly host: string
  readonly name: string
  readonly pid: number | undefined
  readonly port: number | undefined
  readonly alive: boolean
  /** `code N` / `signal NAME` once it ended. */
  readonly exit: string | undefined
  /** How a deliberate `stop` ended it (`terminated`, `killed`, `exited-before`); no failure then. */
  readonly stopped: string | undefined
  readonly phase: Phase
  /** `/health` answered 200 (undefined when not alive or not asked). */
  readonly healthy: boolean | undefined
  readonly uptimeMs: number | undefined
  /** MiB held on GPUs by the group's processes (undefined when nvidia-smi could not tell). */
  readonly gpuMemoryMiB: number | undefined
  /** The engine (`sglang`, `vllm`) and its version. */
  readonly engine: string
  readonly engineVersion: string | null
  readonly argv: ReadonlyArray<string>
  /** For a dead server: why, from its log. */
  readonly failure: LaunchFailure | undefined
  /** For a batch job: the scheduler's word on it (`RUNNING on node1`, `PENDING (Resources)`), node, GPUs, elapsed. */
  readonly job?: {
    readonly id: string
    readonly state: string
    readonly node?: string
    readonly gpus?: number
    readonly elapsedSeconds?: number
  }
}

/** A host whose status could not be read. @category models */
export interface HostUnreachable {
  readonly host: string
  /** The failure's `_tag` (`HostKeyMismatch`, `HostNotFound`, `ConnectionRefused`, ...). */
  readonly _tag: string
  readonly error: string
}

const TAIL_LINES = 300

const one = (conn: Connection, state: Deployment.State, engines: Engine.Registry) =>
  Effect.gen(function* () {
    const host = conn.host.alias
    const placement = Placement.of(state)
    const recorded = Deployment.processOf(host, state)
    // a batch job: the scheduler is asked once, and liveness, exit and node come from its answer
    const record =
      recorded?.job !== undefined && placement.job !== undefined
        ? yield* placement.job(conn, recorded).pipe(Effect.orElseSucceed(() => undefined))
        : undefined
    const placed =
      recorded === undefined || record === undefined ? recorded : { ...recorded, jobRecord: record }
    const alive = placed === undefined ? false : yield* placement.isAlive(conn, placed)
    const engine = Engine.byName(engines, state.meta?.engine ?? "sglang")
    const lines = yield* LogTail.tail(host, state.logPath, { lines: TAIL_LINES }).pipe(
      Effect.orElseSucceed(() => [] as ReadonlyArray<LogTail.LogLine>)
    )
    const classifier = Classifier.make(engine === undefined ? [] : [engine.logs])
    for (const line of lines) classifier.feed(line.text)
    const stopped = alive ? undefined : state.stopped
    // a batch job's end is the scheduler's record (its ExitCode), not an `exit` file
    const ended =
      Deployment.exitStatusOf(state) ??
      (record === undefined || placed === undefined
        ? undefined
        : yield* placement.exitStatus(conn, placed).pipe(Effect.orElseSucceed(() => undefined)))
    const failure = alive || stopped !== undefined ? undefined : classifier.finish(ended)
    const phase: Phase = state.ready !== undefined && alive ? "ready" : classifier.phase()
    const port = state.meta?.port
    // a batch job's server listens on its compute node, asked through the host
    const target =
      alive && placed !== undefined && placement.target !== undefined
        ? yield* placement.target(conn, placed).pipe(Effect.orElseSucceed(() => undefined))
        : undefined
    const healthy =
      alive && port !== undefined && (placed?.job === undefined || target !== undefined)
        ? yield* isHealthy(conn, port, "5 seconds", target)
        : undefined
    const now = yield* Clock.currentTimeMillis
    const gpuMemoryMiB =
      alive && placed?.job === undefined && state.pid !== undefined && state.pgid !== undefined
        ? yield* groupPids(conn, { pid: state.pid, pgid: state.pgid }).pipe(
            Effect.flatMap((pids) => gpuMemoryOf(conn, pids)),
            Effect.map((held) => held.usedMiB),
            Effect.orElseSucceed(() => undefined)
          )
        : undefined
    return {
      host,
      name: state.name,
      pid: state.pid,
      port,
      alive,
      exit: state.exit,
      stopped,
      phase,
      healthy,
      uptimeMs: alive && state.meta !== undefined ? now - state.meta.createdAt : undefined,
      gpuMemoryMiB,
      engine: state.meta?.engine ?? "sglang",
      engineVersion: state.meta === undefined ? null : Deployment.versionOf(state.meta),
      argv: state.argv?.argv ?? [],
      failure,
      ...(record === undefined
        ? {}
        : {
            job: {
              id: record.id,
              state: describeState(record),
              ...(record.nodes == null ? {} : { node: record.nodes }),
              ...(record.gpus == null ? {} : { gpus: record.gpus }),
              ...(record.elapsedSeconds == null ? {} : { elapsedSeconds: record.elapsedSeconds })
            }
          })
    } satisfies DeploymentStatus
  })

/**
 * The deployments on one host (or just `name`).
 *
 * @category programs
 */
export const ofHost = Effect.fn("Status.ofHost")(function* (
  host: string,
  engines: Engine.Registry,
  options: { readonly name?: string } = {}
) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(host)
  const states =
    options.name === undefined
      ? yield* Deployment.list(conn)
      : [yield* Deployment.read(conn, options.name)].filter((s): s is Deployment.State => s !== undefined)
  return yield* Effect.forEach(states, (state) => one(conn, state, engines), { concurrency: 4 })
})

/**
 * The deployments on every known host (or the given ones); a host that cannot be reached is
 * reported beside them (`unreachable`), so one dead host does not hide the others. (For one
 * host, `ofHost` fails instead.)
 *
 * @category programs
 */
export const ofHosts = Effect.fn("Status.ofHosts")(function* (
  engines: Engine.Registry,
  hosts?: ReadonlyArray<string>
) {
  const aliases = hosts ?? (yield* Effect.flatMap(Hosts, (h) => h.list)).map((config) => config.alias)
  const results = yield* Effect.forEach(
    aliases,
    (host) =>
      ofHost(host, engines).pipe(
        Effect.either,
        Effect.map((either) => ({ host, either }))
      ),
    { concurrency: 8 }
  )
  const deployments: Array<DeploymentStatus> = []
  const unreachable: Array<HostUnreachable> = []
  for (const { host, either } of results) {
    if (either._tag === "Right") deployments.push(...either.right)
    else unreachable.push({ host, _tag: either.left._tag, error: either.left.message })
  }
  return { deployments, unreachable }
})

/** One of a cluster's mlops jobs, whoever started it. @category models */
export interface ClusterJob {
  readonly id: string
  /** The deployment name (the job's name without `mlops-`). */
  readonly name: string
  readonly user: string | undefined
  /** Slurm's words: `RUNNING on gpu01`, `PENDING (Priority)`. */
  readonly state: string
  readonly node: string | undefined
  readonly gpus: number | undefined
  readonly elapsedSeconds: number | undefined
}

/**
 * The mlops jobs queued or running on the cluster behind a Slurm login node (every user's, so
 * servers others started show too); none for a host that is not one.
 *
 * @category programs
 */
export const clusterJobs = Effect.fn("Status.clusterJobs")(function* (host: string) {
  const conn = yield* (yield* ConnectionPool).get(host)
  if (conn.host.slurm === undefined) return [] as ReadonlyArray<ClusterJob>
  const jobs = yield* SlurmPlacement.jobs(host)
  return jobs.map(
    (job): ClusterJob => ({
      id: job.id,
      name: job.name.slice(SlurmPlacement.jobPrefix.length),
      user: job.user,
      state: describeState(job),
      node: job.nodes,
      gpus: job.gpus,
      elapsedSeconds: job.elapsedSeconds
    })
  )
})
