/**
 * The plain placement: a detached process group on the SSH host itself (core's
 * `RemoteProcess`: a lock per run directory, `pid`/`pgid`/`start`/`token` files, a fresh log
 * per start, an `exit` file written by the supervisor). Its server listens on the host's
 * loopback, its GPUs and port are the host's, and a stop is confirmed through `nvidia-smi`:
 * none of the group's processes may still hold GPU memory.
 *
 * It applies to every host, so it comes last in a registry.
 *
 * @since 0.1.0
 */
import type { Connection, ExitStatus } from "@mlops/core/Connection"
import type { ProbeFailed, SpawnError } from "@mlops/core/Errors"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import * as RemoteProcess from "@mlops/core/RemoteProcess"
import { Effect, Either, Stream } from "effect"
import * as GpuRelease from "./internal/gpuRelease.js"
import {
  hostCommand,
  InvalidPlacement,
  type Kind,
  type Placed,
  type Placement,
  type Spec,
  type WatchEvent
} from "./Placement.js"

/** The kind's name, in specs and records. @category constants */
export const name = "detached-group"

/** What it fails with: the connection's and the process's errors, `nvidia-smi` missing when a stop is confirmed. @category models */
export type Error = RemoteProcess.ProcessStepError | SpawnError | ProbeFailed

/** The spec: nothing to set. @category constructors */
export const spec: Spec = { kind: name }

/** The address its servers are reached at from the host. */
const LOOPBACK = "127.0.0.1"

/**
 * The pids of a process group (`pgrep -g`); just the leader when the tool is missing.
 *
 * @category inspecting
 */
export const groupPids = (conn: Connection, proc: { readonly pid: number; readonly pgid: number }) =>
  conn.exec(RemoteCommand.make(["pgrep", "-g", String(proc.pgid)]), { timeout: "10 seconds" }).pipe(
    Effect.map((result) => {
      const pids = result.stdout
        .split("\n")
        .map((line) => Number(line.trim()))
        .filter((n) => Number.isInteger(n) && n > 0)
      return [...new Set([proc.pid, proc.pgid, ...pids])]
    })
  )

/**
 * GPU memory (MiB) held by the given pids, and which of them hold some.
 *
 * @category inspecting
 */
export const gpuMemoryOf = GpuRelease.gpuMemoryOf

/** What the run directory records of the group. */
interface Group {
  readonly host: string
  readonly runDir: string
  readonly logPath: string
  readonly pid: number
  readonly pgid: number
  readonly startTime?: string
  /** The `exit` file when the record was read: the supervisor saw it end. */
  readonly exit?: ExitStatus
}

const placedOf = (group: Group): Placed<Error> => {
  const ref: RemoteProcess.GroupRef = {
    pgid: group.pgid,
    ...(group.startTime === undefined ? {} : { startTime: group.startTime })
  }
  const proc = { ...ref, host: group.host, runDir: group.runDir, logPath: group.logPath, pid: group.pid }
  const isAlive = (conn: Connection) => RemoteProcess.isAlive(conn, ref)
  return {
    host: group.host,
    runDir: group.runDir,
    logPath: group.logPath,
    server: {
      placement: name,
      label: `pid ${group.pid}`,
      started: `started pid ${group.pid}`,
      ids: { pid: group.pid, pgid: group.pgid }
    },
    isAlive,
    watch: (alias, options) =>
      RemoteProcess.watch(
        alias,
        proc,
        options?.reconnect === undefined ? {} : { reconnect: options.reconnect }
      ).pipe(
        Stream.map(
          (event): WatchEvent<Error> =>
            // the log's failure is the whole story: a process has no word of its own on its end
            event._tag === "Exited" ? { ...event, report: (failure) => failure } : event
        )
      ),
    kill: (conn) => RemoteProcess.kill(conn, ref),
    stop: (conn, grace) => RemoteProcess.stop(conn, proc, grace === undefined ? {} : { grace }),
    address: () => Effect.succeed(LOOPBACK),
    inspect: (conn) =>
      Effect.gen(function* () {
        const alive = yield* isAlive(conn)
        const exit: ExitStatus | undefined = alive
          ? undefined
          : (group.exit ?? (yield* RemoteProcess.exitStatus(conn, proc)))
        const gpuMemoryMiB = alive
          ? yield* groupPids(conn, group).pipe(
              Effect.flatMap((pids) => gpuMemoryOf(conn, pids)),
              Effect.map((held) => held.usedMiB),
              Effect.orElseSucceed(() => undefined)
            )
          : undefined
        return {
          alive,
          exit,
          state: undefined,
          address: alive ? LOOPBACK : undefined,
          gpuMemoryMiB,
          runningMs: undefined,
          details: {},
          report: (failure) => failure
        }
      }),
    // the pids are taken now, while the group is ours: once it is gone, `pgrep -g` finds none of
    // them (or another group's, should its id be reused)
    gpuRelease: (conn) =>
      Effect.map(
        Effect.flatMap(isAlive(conn), (alive) => (alive ? groupPids(conn, group) : Effect.succeed([]))),
        (pids) => GpuRelease.confirmation(conn, pids)
      ),
    // nothing is kept beside the run directory
    discard: () => Effect.void,
    // an ended group's ids may be reused by other processes
    holds: (process) => group.exit === undefined && (process.pid === group.pid || process.pgid === group.pgid)
  }
}

/** A positive integer file (`pid`, `pgid`); anything else is no record (never pid or group 0). */
const readId = (conn: Connection, path: string) =>
  Effect.map(RemoteFiles.readTextIfExists(conn, path), (text) => {
    const trimmed = text?.trim() ?? ""
    const n = /^\d+$/.test(trimmed) ? Number(trimmed) : 0
    return n > 0 ? n : undefined
  })

const placement = (host: string): Placement<Error> => ({
  spec,
  description: `a detached process group on ${host}`,
  onHost: true,
  nodes: 1,
  preflight: () => Effect.succeed({ summary: undefined }),
  spawn: (alias, [runnable], request) =>
    Effect.map(
      Effect.flatMap(hostCommand(name, runnable), (command) =>
        RemoteProcess.spawn(alias, command, {
          runDir: request.runDir,
          logPath: request.logPath,
          token: request.token,
          ...(request.reconnect === undefined ? {} : { reconnect: request.reconnect })
        })
      ),
      (proc) =>
        placedOf({
          host: alias,
          runDir: proc.runDir,
          logPath: proc.logPath,
          pid: proc.pid,
          pgid: proc.pgid,
          ...(proc.startTime === undefined ? {} : { startTime: proc.startTime })
        })
    ),
  // one read per file (no stat first), all at once: without pid files nothing was started
  attach: (conn, record) =>
    Effect.map(
      Effect.all(
        [
          readId(conn, `${record.runDir}/pid`),
          readId(conn, `${record.runDir}/pgid`),
          RemoteFiles.readTextIfExists(conn, `${record.runDir}/start`),
          RemoteFiles.readTextIfExists(conn, `${record.runDir}/exit`)
        ],
        { concurrency: "unbounded" }
      ),
      ([pid, pgid, start, exitText]): Placed<Error> | undefined => {
        if (pid === undefined || pgid === undefined) return undefined
        const startTime = start?.trim()
        const exit = exitText === undefined ? undefined : RemoteProcess.parseExitFile(exitText)
        return placedOf({
          host: conn.host.alias,
          runDir: record.runDir,
          logPath: record.logPath,
          pid,
          pgid,
          ...(startTime === undefined || startTime === "" ? {} : { startTime }),
          ...(exit === undefined ? {} : { exit })
        })
      }
    ),
  starting: (conn, runDir) =>
    Effect.map(conn.files.stat(`${runDir}/spawn.lock`), (stat) => stat !== undefined),
  neighbours: () => Effect.succeed(undefined)
})

/** A detached process group on the SSH host: applies to every host, for a command on the host. @category kinds */
export const kind: Kind<Error> = {
  kind: name,
  resolve: (_, asked, form) =>
    form === "OnHost"
      ? Either.right(spec)
      : asked === undefined
        ? Either.right(undefined)
        : Either.left(
            new InvalidPlacement({
              kind: name,
              reason: "a process group runs a command on the host, not an image",
              fix: "launch the image without asking for a process group"
            })
          ),
  make: (_, host) => Either.right(placement(host.alias))
}
