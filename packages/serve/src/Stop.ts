/**
 * `stop`: end a deployment for good, through the placement its record names: TERM, KILL after
 * the grace period (a process group's signals, a batch job's `scancel`), then the placement's
 * confirmation that its GPU memory is free (a process group's pids through `nvidia-smi`; a
 * job's end as the scheduler reports it): a server is only stopped when its VRAM is free. The
 * deployment directory and its log stay on the host.
 *
 * @since 0.1.0
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import { type Duration, Effect, Either, Schema } from "effect"
import * as Deployment from "./Deployment.js"
import type * as Placement from "./Placement.js"
import * as Placements from "./Placements.js"

/** No deployment of that name on the host. @category errors */
export const DeploymentNotFound = Deployment.DeploymentNotFound
/** @category errors */
export type DeploymentNotFound = Deployment.DeploymentNotFound

/** The server is gone but some of its processes still hold GPU memory. @category errors */
export class GpuMemoryStillHeld extends Schema.TaggedError<GpuMemoryStillHeld>()("GpuMemoryStillHeld", {
  host: Schema.String,
  name: Schema.String,
  pids: Schema.Array(Schema.Number),
  usedMiB: Schema.Number,
  fix: Schema.String
}) {
  override get message() {
    return `${this.name} on ${this.host} was stopped but pid(s) ${this.pids.join(", ")} still hold ${this.usedMiB} MiB of GPU memory; ${this.fix}`
  }
}

/** Some ranks of a deployment across several hosts could not be stopped (the others were). @category errors */
export class RanksNotStopped extends Schema.TaggedError<RanksNotStopped>()("RanksNotStopped", {
  name: Schema.String,
  /** `rank 0 on node-a: terminated`. */
  stopped: Schema.Array(Schema.String),
  /** `rank 1 on node-b: <why>`. */
  failed: Schema.Array(Schema.String),
  fix: Schema.String
}) {
  override get message() {
    return `${this.name}: ${this.failed.length} rank(s) not confirmed stopped: ${this.failed.join("; ")}${this.stopped.length > 0 ? ` (stopped: ${this.stopped.join("; ")})` : ""}; ${this.fix}`
  }
}

/** One rank's stop. @category models */
export interface RankStopped {
  readonly rank: number
  readonly host: string
  readonly server: Placement.ServerRef
  readonly outcome: Placement.StopOutcome
}

/** @category models */
export interface StopResult {
  readonly host: string
  readonly name: string
  /** What ran it, as its placement names it (`pid 1012`, a batch job's id, with its ids); rank 0's across several hosts. */
  readonly server: Placement.ServerRef
  readonly outcome: Placement.StopOutcome
  /** Every rank stopped, across several hosts (one entry on one host). */
  readonly ranks: ReadonlyArray<RankStopped>
}

/**
 * Stop a deployment and confirm its GPU memory is free.
 *
 * @category programs
 */
export const stop = Effect.fn("Stop.stop")(function* (
  host: string,
  name: string,
  options: { readonly grace?: Duration.DurationInput; readonly confirmWithin?: Duration.DurationInput } = {}
) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(host)
  const state = yield* Deployment.readExisting(conn, name)
  const hosts = state.ranks?.hosts ?? [host]
  if (hosts.length <= 1) {
    const one = yield* stopOne(host, name, options)
    return {
      host,
      name,
      server: one.server,
      outcome: one.outcome,
      ranks: [{ rank: 0, host, ...one }]
    } satisfies StopResult
  }
  // every rank, on its own host, at once; all-or-nothing: a rank not confirmed stopped fails the stop
  const ranks = state.ranks!
  const results = yield* Effect.forEach(
    hosts,
    (h, rank) =>
      // each host's record of this deployment's rank, not another deployment of the same name there
      Effect.either(stopOne(h, name, options, { of: ranks, rank })).pipe(
        Effect.map((result) => ({ rank, host: h, result }))
      ),
    { concurrency: "unbounded" }
  )
  const stopped = results.flatMap((r) =>
    Either.isRight(r.result) ? [{ rank: r.rank, host: r.host, ...r.result.right }] : []
  )
  const failed = results.flatMap((r) =>
    Either.isLeft(r.result) && r.result.left._tag !== "DeploymentNotFound"
      ? [`rank ${r.rank} on ${r.host}: ${r.result.left.message}`]
      : []
  )
  if (failed.length > 0) {
    return yield* new RanksNotStopped({
      name,
      stopped: stopped.map((r) => `rank ${r.rank} on ${r.host}: ${r.outcome}`),
      failed,
      fix: `run the stop again once the host(s) answer: mlops stop --host ${hosts[0]} --name ${name}`
    })
  }
  const head = stopped.find((r) => r.rank === 0) ?? stopped[0]
  if (head === undefined) {
    return yield* new Deployment.DeploymentNotFound({ host, name, known: yield* Deployment.names(conn) })
  }
  return {
    host: hosts[0]!,
    name,
    server: head.server,
    outcome: head.outcome,
    ranks: stopped
  } satisfies StopResult
})

/** Stop the deployment's server on one host and confirm its GPU memory is free. */
const stopOne = Effect.fn("Stop.stopOne")(function* (
  host: string,
  name: string,
  options: { readonly grace?: Duration.DurationInput; readonly confirmWithin?: Duration.DurationInput },
  /** Across several hosts: the deployment (rank 0's record) and the rank this host must hold. */
  rankOf?: { readonly of: Deployment.RanksFile; readonly rank: number }
) {
  const conn = yield* (yield* ConnectionPool).get(host)
  const state = yield* Deployment.readExisting(conn, name)
  if (rankOf !== undefined && !Deployment.isRankOf(state, rankOf.of, rankOf.rank)) {
    return yield* new Deployment.DeploymentNotFound({ host, name, known: yield* Deployment.names(conn) })
  }
  const { placed } = yield* Placements.ofDeployment(conn, state)
  // a record of a start that never happened: nothing to stop
  if (placed === undefined) {
    return yield* new Deployment.DeploymentNotFound({ host, name, known: yield* Deployment.names(conn) })
  }
  // what to watch is known only while it runs (a group's pids): taken before the stop
  const release = yield* placed.gpuRelease(conn)
  const outcome = yield* placed.stop(conn, options.grace)
  const held = yield* release.confirm(options.confirmWithin ?? "10 seconds")
  if (held !== undefined) {
    return yield* new GpuMemoryStillHeld({
      host,
      name,
      pids: held.pids,
      usedMiB: held.usedMiB,
      fix: held.fix
    })
  }
  return { server: placed.server, outcome }
})

/**
 * Whether deployment `name` still runs, as its placement tells (false when it records no
 * started server): what confirms a stop made on the way out of an interrupted launch.
 *
 * @category programs
 */
export const isRunning = Effect.fn("Stop.isRunning")(function* (host: string, name: string) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(host)
  const state = yield* Deployment.readExisting(conn, name)
  const ranks = state.ranks
  // across several hosts: whether any of its ranks still runs
  const records =
    ranks === undefined || ranks.hosts.length <= 1
      ? [{ conn, state }]
      : yield* Effect.forEach(ranks.hosts, (h, rank) =>
          Effect.gen(function* () {
            const c = yield* pool.get(h)
            const s = yield* Deployment.readRank(c, name, ranks, rank)
            return s === undefined ? [] : [{ conn: c, state: s }]
          })
        ).pipe(Effect.map((lists) => lists.flat()))
  for (const r of records) {
    const { placed } = yield* Placements.ofDeployment(r.conn, r.state)
    if (placed !== undefined && (yield* placed.isAlive(r.conn))) return true
  }
  return false
})
