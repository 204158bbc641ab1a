/**
 * A launched inference server (any engine) and its on-host state. The host is the source of truth: every
 * deployment is a directory `<stateDir>/deployments/<name>/` holding (`stateDir` from the
 * host's hosts.json entry, default `~/.mlops`)
 *
 * - `argv.json`     the flags the engine was started with (and the ones the user asked for),
 *                   secret values (`--api-key`, ...) shown as `***`,
 * - `resolved.json` the effective args and the engine's adjustments (when preflight ran),
 *                   secret fields shown as `***`,
 * - `meta.json`     engine and its version, placement, port, python, the NAMES of the environment variables and a
 *                   salted digest of their values and of the secret flag values (so a relaunch
 *                   can tell "same secrets" without the host holding any), createdAt, mlops
 *                   version, attempt,
 * - `ready.json`    when it became ready and the phase timings (written once ready),
 * - `log`           this run's output (the previous run's is `log.1`),
 * - `stopped`       how a deliberate stop ended it,
 * - `ranks.json`    for a deployment across several hosts: the hosts in rank order, this
 *                   directory's rank and the rendezvous (each rank's host has its own directory),
 * - the placement's own record of what it started (a process group's `pid`, `pgid`, `start`,
 *   `token` and `exit`; a batch job's id and script): read back by the
 *   placement the record names (`Placement.attach`), never here.
 *
 * So `status`, `logs` and `stop` work from any machine that can reach the host.
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import { defaultStateDir } from "@mlops/core/HostConfig"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import { Effect, Option, Schema } from "effect"
import {
  ArgvFile,
  MetaFile,
  type PhaseTiming,
  RanksFile,
  ReadyFile,
  ResolvedFile,
  type TimeToReady,
  versionOf
} from "./internal/deploymentFiles.js"
import type { Placed, ServerRef } from "./Placement.js"

/** No deployment of that name on the host. @category errors */
export class DeploymentNotFound extends Schema.TaggedError<DeploymentNotFound>()("DeploymentNotFound", {
  host: Schema.String,
  name: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message() {
    return `no deployment ${this.name} on ${this.host}; known: ${this.known.join(", ") || "(none)"}`
  }
}

/**
 * The file in a run directory that says a stop was deliberate and how it ended (`terminated`,
 * `killed`, `exited-before`): every placement's stop writes it (a process group's through
 * core's `RemoteProcess.stop`, which names it the same); `status` then shows no failure.
 *
 * @category files
 */
export const stoppedFile = "stopped"

/** The file naming a rank of a deployment across several hosts (`RanksFile`). @category files */
export const ranksFile = "ranks.json"

/**
 * Whether a record on one host is rank `rank` of the deployment whose rank 0 records `of` (the
 * same hosts, the same rendezvous): not an unrelated deployment that has the same name there.
 *
 * @category reading
 */
export const isRankOf = (state: State, of: RanksFile, rank: number): boolean =>
  state.ranks !== undefined &&
  state.ranks.rank === rank &&
  JSON.stringify(state.ranks.hosts) === JSON.stringify(of.hosts) &&
  state.ranks.rendezvous.address === of.rendezvous.address &&
  state.ranks.rendezvous.port === of.rendezvous.port

/**
 * Rank `rank` of the deployment whose ranks file is `of`, as its own host records it (through
 * `conn`); undefined when that host has none (no record, or another deployment of the name).
 *
 * @category reading
 */
export const readRank = (conn: Connection, name: string, of: RanksFile, rank: number) =>
  Effect.map(read(conn, name), (state) =>
    state !== undefined && isRankOf(state, of, rank) ? state : undefined
  )

/** Record a deliberate stop's outcome in a run directory (0600). @category writing */
export const recordStop = (conn: Connection, runDir: string, outcome: string) =>
  conn.files.write(`${runDir}/${stoppedFile}`, outcome, { mode: 0o600 })

/** The mlops version written into `meta.json`. @category constants */
export const mlopsVersion = "0.1.0"

/** Where deployments live on a host whose `stateDir` is the default. @category constants */
export const root = `${defaultStateDir}/deployments`

/** Where deployments live under a host's state directory (`HostConfig.stateDir`). @category constructors */
export const rootOf = (stateDir: string): string => `${stateDir.replace(/\/+$/, "")}/deployments`

/** The run directory of a deployment; `stateDir` defaults to `~/.mlops`. @category constructors */
export const dirOf = (name: string, stateDir: string = defaultStateDir): string =>
  `${rootOf(stateDir)}/${name}`

/** The run directory of a deployment on the host `conn` reaches. */
const hostDirOf = (conn: Connection, name: string) => conn.files.resolvePath(dirOf(name, conn.host.stateDir))

/** The default deployment name: the model directory's name (or repo id's last part), lower-cased, made a valid name. @category naming */
export const defaultName = (model: string | undefined, engine: string): string => {
  const base = (model ?? "model").replace(/\/+$/, "").split("/").pop() ?? ""
  const name = base
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
  return name === "" ? engine : name.slice(0, 64)
}

/** A deployment name is a directory name: letters, digits, `.`, `_`, `-`. @category validation */
export const isValidName = (name: string): boolean => /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)

export {
  ArgvFile,
  /** `TTR port 12.1 s · TTR HTTP 30.4 s · TTFT 31.0 s`. */
  describeTimeToReady,
  MetaFile,
  PhaseTiming,
  placementOf,
  RanksFile,
  ReadyFile,
  ResolvedFile,
  runtimeOf,
  SecretsDigest,
  TimeToReady,
  versionOf
} from "./internal/deploymentFiles.js"

/** A running (or once running) server. @category models */
export interface Deployment {
  /** The host it serves from (rank 0's, across several hosts). */
  readonly host: string
  /** Every host it runs on, in rank order (`[host]` on one host). */
  readonly hosts: ReadonlyArray<string>
  readonly name: string
  /** What runs it, as its placement names it (`pid 1012`, a batch job's id, with its ids). */
  readonly server: ServerRef
  readonly port: number
  /**
   * Where the server answers as seen from the host (`http://127.0.0.1:<port>`, a compute node's
   * `http://<node>:<port>`), or the local tunnel URL when one was asked for.
   */
  readonly url: string
  /** `sglang`, `vllm`. */
  readonly engine: string
  readonly engineVersion: string | null
  /** Effective args, by field (null when preflight was skipped); secret fields shown as `***`. */
  readonly args: Readonly<Record<string, unknown>> | null
  /**
   * The flags the engine was started with (across several hosts, the deployment's, before each
   * rank's `--nnodes`, node rank and rendezvous); secret values shown as `***`.
   */
  readonly argv: ReadonlyArray<string>
  /** The names of the environment variables it was started with (never their values). */
  readonly envNames: ReadonlyArray<string>
  readonly phases: ReadonlyArray<PhaseTiming>
  /** Epoch ms when the process was started. */
  readonly startedAt: number
  /** Epoch ms when it became ready (undefined while starting or if it never did). */
  readonly readyAt: number | undefined
  /** From its start to the port open, `/health` 200 and the first streamed token (undefined: not recorded). */
  readonly timeToReady: TimeToReady | undefined
  readonly runDir: string
  readonly logPath: string
}

/** Everything the host records about one deployment (some files may be missing). @category models */
export interface State {
  readonly name: string
  readonly runDir: string
  readonly logPath: string
  readonly argv: ArgvFile | undefined
  readonly resolved: ResolvedFile | undefined
  readonly meta: MetaFile | undefined
  readonly ready: ReadyFile | undefined
  /** The `stopped` file a placement's stop writes (`terminated`, `killed`, ...): a deliberate stop. */
  readonly stopped: string | undefined
  /** The ranks of a deployment across several hosts (undefined on one host). */
  readonly ranks: RanksFile | undefined
}

// one read per file (no stat first): a missing file is undefined
const readText = RemoteFiles.readTextIfExists

// a half-written or foreign file counts as missing
const readJson = <A, I>(conn: Connection, path: string, schema: Schema.Schema<A, I>) =>
  Effect.map(readText(conn, path), (text) =>
    text === undefined
      ? undefined
      : Option.getOrUndefined(Schema.decodeUnknownOption(Schema.parseJson(schema))(text))
  )

/**
 * Read one deployment's directory; undefined when it does not exist.
 *
 * @category reading
 */
export const read = Effect.fn("Deployment.read")(function* (conn: Connection, name: string) {
  const runDir = yield* hostDirOf(conn, name)
  const dir = yield* conn.files.stat(runDir)
  if (dir === undefined || !dir.isDirectory) return undefined
  const [argv, resolved, meta, ready, stopped, ranks] = yield* Effect.all(
    [
      readJson(conn, `${runDir}/argv.json`, ArgvFile),
      readJson(conn, `${runDir}/resolved.json`, ResolvedFile),
      readJson(conn, `${runDir}/meta.json`, MetaFile),
      readJson(conn, `${runDir}/ready.json`, ReadyFile),
      readText(conn, `${runDir}/${stoppedFile}`),
      readJson(conn, `${runDir}/${ranksFile}`, RanksFile)
    ],
    { concurrency: "unbounded" }
  )
  const state: State = {
    name,
    runDir,
    logPath: `${runDir}/log`,
    argv,
    resolved,
    meta,
    ready,
    stopped: stopped?.trim() || undefined,
    ranks
  }
  return state
})

/**
 * Read one deployment's directory; `DeploymentNotFound` (naming the known ones) when it does
 * not exist.
 *
 * @category reading
 */
export const readExisting = Effect.fn("Deployment.readExisting")(function* (conn: Connection, name: string) {
  const state = yield* read(conn, name)
  if (state === undefined)
    return yield* new DeploymentNotFound({ host: conn.host.alias, name, known: yield* names(conn) })
  return state
})

/**
 * The names of the deployments on a host (directories under `<stateDir>/deployments`). Uses
 * `ls`, which every POSIX host has.
 *
 * @category reading
 */
export const names = Effect.fn("Deployment.names")(function* (conn: Connection) {
  const dir = yield* conn.files.resolvePath(rootOf(conn.host.stateDir))
  const result = yield* conn.exec(RemoteCommand.make(["ls", "-1", "--", dir]), { timeout: "15 seconds" })
  if (result.exitCode !== 0) return [] as ReadonlyArray<string> // no directory yet: no deployments
  return result.stdout
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && isValidName(line))
    .sort()
})

/**
 * Every deployment recorded on a host.
 *
 * @category reading
 */
export const list = Effect.fn("Deployment.list")(function* (conn: Connection) {
  const all = yield* names(conn)
  const states = yield* Effect.forEach(all, (name) => read(conn, name), { concurrency: 4 })
  return states.filter((state): state is State => state !== undefined)
})

const writeJson = (conn: Connection, path: string, value: unknown) =>
  conn.files.write(path, `${JSON.stringify(value, null, 2)}\n`)

/**
 * Write the files a launch records before spawning: `argv.json`, `resolved.json`, `meta.json`.
 *
 * @category writing
 */
export const writeLaunchFiles = Effect.fn("Deployment.writeLaunchFiles")(function* (
  conn: Connection,
  name: string,
  files: {
    readonly argv: ArgvFile
    readonly resolved: { readonly effective: object | null; readonly adjustments: ReadonlyArray<string> }
    readonly meta: MetaFile
    /** This host's rank of a deployment across several hosts. */
    readonly ranks?: RanksFile
  }
) {
  const runDir = yield* hostDirOf(conn, name)
  yield* conn.files.mkdir(runDir)
  yield* Effect.all(
    [
      // on one host, null: an earlier launch's ranks must not describe this one
      writeJson(conn, `${runDir}/${ranksFile}`, files.ranks ?? null),
      writeJson(conn, `${runDir}/argv.json`, files.argv),
      writeJson(conn, `${runDir}/resolved.json`, files.resolved),
      writeJson(conn, `${runDir}/meta.json`, files.meta),
      // a previous run's ready.json and stop record must not describe this one (empty = none)
      writeJson(conn, `${runDir}/ready.json`, null),
      conn.files.write(`${runDir}/${stoppedFile}`, "")
    ],
    { concurrency: "unbounded" }
  )
  return runDir
})

/** Record readiness (`ready.json`). @category writing */
export const writeReady = Effect.fn("Deployment.writeReady")(function* (
  conn: Connection,
  name: string,
  ready: ReadyFile
) {
  const runDir = yield* hostDirOf(conn, name)
  yield* writeJson(conn, `${runDir}/ready.json`, ready)
})

/**
 * The `Deployment` value of a recorded state and the server its placement found (undefined
 * when meta is missing); `address` is where the server answers as seen from the host.
 *
 * @category constructors
 */
export const fromState = (
  host: string,
  state: State,
  placed: Placed,
  address: string,
  url?: string
): Deployment | undefined => {
  if (state.meta === undefined) return undefined
  return {
    host,
    hosts: state.ranks?.hosts ?? [host],
    name: state.name,
    server: placed.server,
    port: state.meta.port,
    url: url ?? `http://${address}:${state.meta.port}`,
    engine: state.meta.engine,
    engineVersion: versionOf(state.meta),
    args: state.resolved?.effective ?? null,
    // across several hosts, the deployment's flags (each rank added its own place to them)
    argv: state.ranks?.argv ?? state.argv?.argv ?? [],
    envNames: state.meta.envNames,
    phases: state.ready?.phases ?? [],
    startedAt: state.meta.createdAt,
    readyAt: state.ready?.readyAt,
    timeToReady: state.ready?.timeToReady,
    runDir: state.runDir,
    logPath: state.logPath
  }
}
