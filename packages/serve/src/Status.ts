/**
 * `status`: what runs where, read from the hosts themselves (the deployment directories), so
 * it works from any machine: through the placement each record names, what runs it (a pid, a
 * job), whether it is alive, its placement's word on it; the phase (from `ready.json` or the log
 * tail through the classifier), health (`/health` where it answers), uptime, GPU memory of its
 * processes, and for a dead server the classified reason as its placement reports it.
 *
 * @since 0.1.0
 */

import type { Connection, ExitStatus } from "@mlops/core/Connection"
import { ConnectionPool, isTransient } from "@mlops/core/ConnectionPool"
import { Hosts } from "@mlops/core/Hosts"
import * as LogTail from "@mlops/core/LogTail"
import { Clock, Effect } from "effect"
import * as Classifier from "./Classifier.js"
import * as Deployment from "./Deployment.js"
import * as Engine from "./Engine.js"
import type { LaunchFailure } from "./Failures.js"
import type { Phase } from "./LaunchEvent.js"
import type * as Placement from "./Placement.js"
import * as Placements from "./Placements.js"
import { generatesAt, isHealthyAt } from "./Readiness.js"
import * as Runtimes from "./Runtimes.js"

/** @category models */
export interface DeploymentStatus {
  readonly host: string
  readonly name: string
  /** The placement's kind (`detached-group`, ...). */
  readonly placement: string
  /** What runs it, as its placement names it (`pid 1012`, a batch job's id, with its ids); undefined when nothing was started. */
  readonly server: Placement.ServerRef | undefined
  readonly port: number | undefined
  readonly alive: boolean
  /** `code N` / `signal NAME` once it ended and said so. */
  readonly exit: string | undefined
  /** How a deliberate `stop` ended it (`terminated`, `killed`, `exited-before`); no failure then. */
  readonly stopped: string | undefined
  /** A start is under way (the record is written, the server not yet placed). */
  readonly starting: boolean
  readonly phase: Phase
  /** `/health` answered 200 (undefined when not alive or not asked). */
  readonly healthy: boolean | undefined
  /**
   * A ready, healthy server streamed a canary token within 10 s (false: `/health` answers but it
   * does not generate); undefined when not asked (not ready or healthy, or behind an API key).
   */
  readonly generating: boolean | undefined
  readonly uptimeMs: number | undefined
  /** From its start to the port open, `/health` 200 and its first streamed token, as its launch saw them. */
  readonly timeToReady: Deployment.TimeToReady | undefined
  /** MiB held on GPUs by its processes (undefined when the host cannot see them). */
  readonly gpuMemoryMiB: number | undefined
  /** The engine (`sglang`, `vllm`) and its version. */
  readonly engine: string
  readonly engineVersion: string | null
  readonly argv: ReadonlyArray<string>
  /** The placement's word on it (`RUNNING on gpu01, 2 GPUs`), when it has one. */
  readonly state: string | undefined
  /** The placement's own facts (a job's id, node, GPUs, elapsed seconds). */
  readonly details: Readonly<Record<string, unknown>>
  /** For a dead server: why, from its log, as its placement reports it. */
  readonly failure: LaunchFailure | Placements.PlacementError | undefined
  /**
   * Why its state could not be told (a record its placement cannot read, a scheduler that did not
   * answer): the row is still listed, `alive` false and nothing else known.
   */
  readonly problem: { readonly _tag: string; readonly message: string } | undefined
  /** Its ranks, rank 0 (this row's host) first: one on one host, each host's across several. */
  readonly ranks: ReadonlyArray<RankStatus>
}

/** One rank of a deployment across several hosts, as its own host tells. @category models */
export interface RankStatus {
  readonly rank: number
  readonly host: string
  readonly alive: boolean
  /** What runs it there (`pid 1012`). */
  readonly server: string | undefined
  /** `code N` / `signal NAME` once it ended and said so. */
  readonly exit: string | undefined
  /** How a deliberate `stop` ended it. */
  readonly stopped: string | undefined
  /** Why it could not be told (its host unreachable, no record there). */
  readonly problem: string | undefined
}

/** A host whose status could not be read. @category models */
export interface HostUnreachable {
  readonly host: string
  /** The failure's `_tag` (`HostKeyMismatch`, `HostNotFound`, `ConnectionRefused`, ...). */
  readonly _tag: string
  readonly error: string
}

const TAIL_LINES = 300

/** `code N` / `signal NAME`: how a process ended, as its run directory's `exit` file says. @category rendering */
export const exitText = (exit: ExitStatus | undefined): string | undefined =>
  exit === undefined ? undefined : exit.exitCode !== null ? `code ${exit.exitCode}` : `signal ${exit.signal}`

/** A rank whose state could not be told, and why. */
const untold = (rank: number, host: string, problem: string): RankStatus => ({
  rank,
  host,
  alive: false,
  server: undefined,
  exit: undefined,
  stopped: undefined,
  problem
})

/** A row for a deployment whose placement could not tell its state: listed with why. */
const unknown = (
  host: string,
  state: Deployment.State,
  problem: { readonly _tag: string; readonly message: string }
): DeploymentStatus => ({
  host,
  name: state.name,
  placement: state.meta === undefined ? "unknown" : Deployment.placementOf(state.meta).kind,
  server: undefined,
  port: state.meta?.port,
  alive: false,
  exit: undefined,
  stopped: state.stopped,
  starting: false,
  phase: "starting",
  healthy: undefined,
  generating: undefined,
  uptimeMs: undefined,
  timeToReady: state.ready?.timeToReady,
  gpuMemoryMiB: undefined,
  engine: state.meta?.engine ?? "sglang",
  engineVersion: state.meta === undefined ? null : Deployment.versionOf(state.meta),
  argv: state.argv?.argv ?? [],
  state: undefined,
  details: {},
  failure: undefined,
  problem: { _tag: problem._tag, message: problem.message },
  ranks: (state.ranks?.hosts ?? [host]).map((h, rank) =>
    untold(rank, h, rank === (state.ranks?.rank ?? 0) ? problem.message : "not asked")
  )
})

/** Rank `rank` of deployment `name`, asked of its own host (never failing: what could not be told is its problem). */
const rankOn = (rank: number, host: string, name: string, of: Deployment.RanksFile) =>
  Effect.gen(function* () {
    const conn = yield* (yield* ConnectionPool).get(host)
    const state = yield* Deployment.readRank(conn, name, of, rank)
    if (state === undefined) return untold(rank, host, `no record of ${name} on ${host}`)
    const { placed } = yield* Placements.ofDeployment(conn, state)
    const seen = placed === undefined ? undefined : yield* placed.inspect(conn)
    const alive = seen?.alive === true
    return {
      rank,
      host,
      alive,
      server: placed?.server.label,
      exit: exitText(seen?.exit),
      stopped: alive ? undefined : state.stopped,
      problem: undefined
    } satisfies RankStatus
  }).pipe(
    Effect.timeout("30 seconds"),
    Effect.catchAll((error) => Effect.succeed(untold(rank, host, error.message)))
  )

/** Connection trouble fails the host; anything else about one record is that row's problem. */
const isConnectionTrouble = (error: { readonly _tag: string }) =>
  isTransient(error) || error._tag === "HostNotFound" || error._tag === "ChannelOpenFailed"

const one = (conn: Connection, state: Deployment.State, engines: Engine.Registry) =>
  Effect.gen(function* () {
    const host = conn.host.alias
    const { placement, placed } = yield* Placements.ofDeployment(conn, state)
    // the placement is asked once: liveness, the end, where it answers (a scheduler's one query)
    const seen = placed === undefined ? undefined : yield* placed.inspect(conn)
    const alive = seen?.alive === true
    const starting = placed === undefined ? yield* placement.starting(conn, state.runDir) : false
    const engine = Engine.byName(engines, state.meta?.engine ?? "sglang")
    const lines = yield* LogTail.tail(host, state.logPath, { lines: TAIL_LINES }).pipe(
      Effect.orElseSucceed(() => [] as ReadonlyArray<LogTail.LogLine>)
    )
    const classifier = Classifier.make(engine === undefined ? [] : [engine.logs])
    for (const line of lines) classifier.feed(line.text)
    const stopped = alive ? undefined : state.stopped
    // nothing placed: a start under way, or one refused before anything ran (no failure of its own)
    const failure =
      seen === undefined || alive || stopped !== undefined
        ? undefined
        : seen.report(classifier.finish(seen.exit))
    const phase: Phase = state.ready !== undefined && alive ? "ready" : classifier.phase()
    const port = state.meta?.port
    const healthy =
      alive && port !== undefined && seen?.address !== undefined
        ? yield* isHealthyAt(conn, port, seen.address, "5 seconds")
        : undefined
    // healthy is not generating: a canary token from a ready server (not one behind an API key:
    // status holds no secret)
    const keyFlag = engine?.apiKeyFlag
    const keyed =
      keyFlag !== undefined &&
      (state.argv?.argv ?? []).some((word) => word === keyFlag || word.startsWith(`${keyFlag}=`))
    const generating =
      healthy === true &&
      state.ready !== undefined &&
      !keyed &&
      port !== undefined &&
      seen?.address !== undefined
        ? yield* generatesAt(conn, port, seen.address, "10 seconds")
        : undefined
    const now = yield* Clock.currentTimeMillis
    const self: RankStatus = {
      rank: state.ranks?.rank ?? 0,
      host,
      alive,
      server: placed?.server.label,
      exit: exitText(seen?.exit),
      stopped,
      problem: undefined
    }
    const hosts = state.ranks?.hosts ?? [host]
    const ranks = yield* Effect.forEach(
      hosts,
      (h, rank) =>
        rank === self.rank || state.ranks === undefined
          ? Effect.succeed(self)
          : rankOn(rank, h, state.name, state.ranks),
      { concurrency: "unbounded" }
    )
    return {
      host,
      name: state.name,
      placement: placement.spec.kind,
      server: placed?.server,
      port,
      alive,
      exit: exitText(seen?.exit),
      stopped,
      starting,
      phase,
      healthy,
      generating,
      uptimeMs: !alive
        ? undefined
        : (seen?.runningMs ?? (state.meta === undefined ? undefined : now - state.meta.createdAt)),
      timeToReady: state.ready?.timeToReady,
      gpuMemoryMiB: seen?.gpuMemoryMiB,
      engine: state.meta?.engine ?? "sglang",
      engineVersion: state.meta === undefined ? null : Deployment.versionOf(state.meta),
      argv: state.argv?.argv ?? [],
      state: seen?.state,
      details: seen?.details ?? {},
      failure,
      problem: undefined,
      ranks
    } satisfies DeploymentStatus
  }).pipe(
    // one record its placement cannot read, or a scheduler that does not answer, hides no other
    Effect.catchIf(
      (error) => !isConnectionTrouble(error),
      (error) => Effect.succeed(unknown(conn.host.alias, state, error))
    )
  )

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
  return yield* Effect.forEach(
    states,
    (state) => {
      // another rank's record: the deployment as rank 0's host tells it (this host's view if unreachable)
      const head = state.ranks !== undefined && state.ranks.rank > 0 ? state.ranks.hosts[0] : undefined
      if (head === undefined) return one(conn, state, engines)
      return Effect.gen(function* () {
        const headConn = yield* pool.get(head)
        // rank 0 of this deployment, not another of the same name there
        const headState =
          state.ranks === undefined
            ? undefined
            : yield* Deployment.readRank(headConn, state.name, state.ranks, 0)
        return headState === undefined
          ? yield* one(conn, state, engines)
          : yield* one(headConn, headState, engines)
      }).pipe(Effect.catchAll(() => one(conn, state, engines)))
    },
    { concurrency: 4 }
  )
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
  // a deployment across several hosts is listed once (every rank's host finds it)
  const seen = new Set<string>()
  for (const { host, either } of results) {
    if (either._tag === "Left") {
      unreachable.push({ host, _tag: either.left._tag, error: either.left.message })
      continue
    }
    for (const d of either.right) {
      const key = `${d.host}\u0000${d.name}`
      if (seen.has(key)) continue
      seen.add(key)
      deployments.push(d)
    }
  }
  return { deployments, unreachable }
})

/**
 * Every user's servers that mlops started on the host, as its placement lists them (a
 * cluster's login node: its queue's mlops jobs); undefined for a placement that lists none.
 *
 * @category programs
 */
export const neighbours = Effect.fn("Status.neighbours")(function* (host: string) {
  const conn = yield* (yield* ConnectionPool).get(host)
  // the placement a launch on the host gets by default (its entry's runtime and scheduler)
  const runtime = yield* Runtimes.resolve(conn.host)
  const placement = yield* Placements.resolve(conn.host, runtime.form)
  return yield* placement.neighbours(conn)
})
