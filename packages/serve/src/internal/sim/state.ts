/**
 * What the persistent sim keeps between `mlops` runs: the files that differ from a fresh sim
 * (deployment directories, uploads), the simulated servers that were running (with their
 * pid/pgid, argv, env, port and GPU memory) and the next pid. `capture` reads it from a fake
 * host, `restore` puts it back into a fresh one.
 *
 * GPU holdings (`/run/mlops-sim/gpu/`) are not saved as files: they belong to live servers and
 * are rebuilt from the server records.
 *
 * @internal
 */

import * as RemoteCommand from "@mlops/core/RemoteCommand"
import type { FakeHost } from "@mlops/core/testing"
import { Effect, Schema } from "effect"
import { preludeMarker } from "../../ServerCommand.js"
import * as Gpus from "../../SimGpus.js"

/** Set (to the port) in the environment of a restored, already-ready server. */
export const resumeEnv = "MLOPS_SIM_RESUME"

/**
 * The simulated processes to keep: servers (the module each engine runs and the line it prints
 * once ready) and programs that start over when restored (the sim's `torchrun`, by name).
 */
export type ServerKinds = ReadonlyArray<
  { readonly module: string; readonly readyLine: string } | { readonly program: string }
>

/** The state file's format version; anything else is ignored. */
export const version = 1

const FileEntry = Schema.Struct({
  path: Schema.String,
  data: Schema.Uint8ArrayFromBase64,
  mtimeMs: Schema.Number,
  mode: Schema.Int
})

const Server = Schema.Struct({
  pid: Schema.Int,
  pgid: Schema.Int,
  argv: Schema.NonEmptyArray(Schema.String),
  env: Schema.Record({ key: Schema.String, value: Schema.String }),
  cwd: Schema.String,
  runDir: Schema.String,
  logPath: Schema.String,
  startedAtMs: Schema.Number,
  /** The port it listened on; null when it had not bound one yet. */
  port: Schema.NullOr(Schema.Int),
  /** It had printed the ready line and listened: it comes back ready; otherwise it starts over. */
  ready: Schema.Boolean,
  /** GPU index → MiB it held. */
  gpuMiB: Schema.Record({ key: Schema.String, value: Schema.Number })
})
export type Server = typeof Server.Type

export const SimState = Schema.Struct({
  version: Schema.Literal(version),
  savedAtMs: Schema.Number,
  nextPid: Schema.Int,
  files: Schema.Array(FileEntry),
  servers: Schema.Array(Server)
})
export type SimState = typeof SimState.Type

/** The files of a fresh sim, to save only what differs. */
export type Baseline = ReadonlyMap<string, Uint8Array>

export const baselineOf = (handle: FakeHost.FakeHostHandle): Effect.Effect<Baseline> =>
  Effect.map(handle.exportFiles, (files) => new Map(files.map((f) => [f.path, f.data])))

const sameBytes = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.every((byte, i) => byte === b[i])

/** The kind of server a process is (by the module it runs, directly or through the secrets prelude). */
const kindOf = (kinds: ServerKinds, argv: ReadonlyArray<string>) =>
  kinds.find((k) =>
    "program" in k
      ? argv[0]?.split("/").pop() === k.program
      : (argv[1] === "-m" && argv[2] === k.module) ||
        (argv[1] === "-c" && argv[2]?.includes(preludeMarker) === true && argv[3] === k.module)
  )

const runtimeDir = "/run/mlops-sim/"

/** The state of `handle` now (`savedAtMs` from the Clock). */
export const capture = (handle: FakeHost.FakeHostHandle, baseline: Baseline, kinds: ServerKinds) =>
  Effect.gen(function* () {
    const ports = yield* handle.ports
    const servers: Array<Server> = []
    for (const p of yield* handle.processes) {
      const kind = kindOf(kinds, p.argv)
      const [program, ...args] = p.argv
      if (p.runDir === undefined || p.logPath === undefined || kind === undefined || program === undefined)
        continue
      const port = ports.find((entry) => entry.pid === p.pid)?.port ?? null
      const log = (yield* handle.fs.readText(p.logPath)) ?? ""
      const held = yield* handle.fs.readText(Gpus.usagePath(p.pid))
      const { [resumeEnv]: _marker, ...env } = p.env
      servers.push({
        pid: p.pid,
        pgid: p.pgid,
        argv: [program, ...args],
        env,
        cwd: p.cwd,
        runDir: p.runDir,
        logPath: p.logPath,
        startedAtMs: p.startedAtMs,
        port,
        ready:
          port !== null && "readyLine" in kind && (_marker !== undefined || log.includes(kind.readyLine)),
        gpuMiB: held === undefined ? {} : (JSON.parse(held) as Record<string, number>)
      })
    }
    const files = (yield* handle.exportFiles).filter((f) => {
      if (f.path.startsWith(runtimeDir)) return false
      const fresh = baseline.get(f.path)
      return fresh === undefined || !sameBytes(fresh, f.data)
    })
    return {
      version,
      savedAtMs: yield* Effect.clockWith((clock) => clock.currentTimeMillis),
      nextPid: yield* handle.nextPid,
      files,
      servers
    } satisfies SimState
  })

/** Put `state` back into a fresh sim host: files, pids, and its servers running again. */
export const restore = (handle: FakeHost.FakeHostHandle, state: SimState) =>
  Effect.gen(function* () {
    yield* handle.importFiles(state.files)
    yield* handle.reservePids(state.nextPid)
    for (const server of state.servers) {
      const resumed = server.ready && server.port !== null
      if (resumed) {
        const usage = Object.fromEntries(
          Object.entries(server.gpuMiB).map(([gpu, mib]) => [Number(gpu), mib])
        )
        yield* Gpus.hold(handle.fs, server.pid, usage)
      }
      const env = resumed ? { ...server.env, [resumeEnv]: String(server.port) } : server.env
      yield* handle.start(RemoteCommand.make(server.argv, { env, cwd: server.cwd }), {
        pid: server.pid,
        pgid: server.pgid,
        startedAtMs: server.startedAtMs,
        runDir: server.runDir,
        logPath: server.logPath
      })
    }
    const resumed = state.servers.filter((s) => s.ready && s.port !== null).map((s) => s.pid)
    yield* untilListening(handle, resumed)
  })

const realTick = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 1)))

/**
 * Wait until every resumed server listens again (binding the loopback port is real I/O), so
 * the first command of the run already finds it ready. Real-time ticks, not the Clock: this
 * must also work under TestClock. Bounded (~2 s); a server that gave up has exited anyway.
 */
const untilListening = (handle: FakeHost.FakeHostHandle, pids: ReadonlyArray<number>) =>
  Effect.gen(function* () {
    for (let tick = 0; tick < 2000; tick++) {
      const listening = new Set((yield* handle.ports).map((p) => p.pid))
      const running = new Set((yield* handle.processes).map((p) => p.pid))
      if (pids.every((pid) => listening.has(pid) || !running.has(pid))) return
      yield* realTick
    }
  })

const canonical = (value: unknown): unknown => {
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64")
  if (Array.isArray(value)) return value.map(canonical)
  if (value !== null && typeof value === "object")
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, canonical(v)])
    )
  return value
}

/**
 * What makes two states different for saving: file contents and modes, and the servers.
 * Mtimes, the save time and the next pid do not count (a read-only run such as `status`
 * changes only those).
 */
export const fingerprint = (state: Pick<SimState, "files" | "servers">): string =>
  JSON.stringify(
    canonical({
      files: state.files.map((f) => ({ path: f.path, data: f.data, mode: f.mode })),
      servers: state.servers
    })
  )
