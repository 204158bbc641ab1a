/**
 * Fake hosts as layers: per-host state (files, processes, journal, faults), the pool that
 * hands out (re)connections, `Hosts`, and `FakeHostControl`.
 *
 * @internal
 */
import { Clock, Context, Deferred, Duration, Effect, Layer, Scope } from "effect"
import type { Connection } from "../Connection.js"
import { ConnectionPool } from "../ConnectionPool.js"
import { ConnectionLost, ConnectionRefused, HostKeyMismatch, HostNotFound } from "../Errors.js"
import type { FakeHostHandle, FakeHostSpec, JournalEntry, StartOptions } from "../FakeHost.js"
import { FakeHostControl } from "../FakeHost.js"
import type { ChildProcess, FakeFs, Program } from "../FakeProgram.js"
import { HostConfig } from "../HostConfig.js"
import { Hosts } from "../Hosts.js"
import type { RemoteCommand } from "../RemoteCommand.js"
import { render } from "../RemoteCommand.js"
import { builtins, notFound } from "./fakeBuiltins.js"
import { type ConnectionState, type HostRuntime, makeConnection } from "./fakeConnection.js"
import { decodeLossy, FakeFileSystem, type FsResult, toBytes } from "./fakeFs.js"
import { discard, matches, ProcessTable, type Stdio, specOf } from "./fakeProcesses.js"
import { startTimeOf, statOf, supervise } from "./fakeWrappers.js"
import { SUPERVISOR } from "./shellScripts.js"

const orDie = (result: FsResult<void>, what: string): Effect.Effect<void> =>
  result.ok ? Effect.void : Effect.dieMessage(`fake fs: ${what}: ${result.reason}`)

const now = Clock.currentTimeMillis

const PRIVATE = { mode: 0o600 } as const

/**
 * `FakeHostHandle.start`: without a run directory, `sh -c <line>` with its output discarded;
 * with one, under a supervisor as `spawnDetached` starts it (a given `pgid` other than the
 * pid is the supervisor's pid). A `pgid` equal to the pid restores a process that leads its own
 * group (no supervisor): its `exit` file is written when it ends, as a supervisor would.
 */
const startOnHost = (
  table: ProcessTable,
  fs: FakeFs,
  command: RemoteCommand,
  options: StartOptions
): Effect.Effect<ChildProcess> =>
  Effect.gen(function* () {
    const home = { env: table.baseEnv, cwd: table.home }
    const fixed = {
      ...(options.pid === undefined ? {} : { pid: options.pid }),
      ...(options.startedAtMs === undefined ? {} : { startedAtMs: options.startedAtMs })
    }
    const silent: Stdio = { stdin: new Uint8Array(), stdout: discard, stderr: discard }
    if (options.runDir === undefined) {
      return yield* table.start(specOf(command, home), {
        stdio: silent,
        detached: true,
        ...fixed,
        ...(options.pgid === undefined ? {} : { pgid: options.pgid })
      })
    }
    const runDir = fs.resolve(options.runDir)
    const logPath = fs.resolve(options.logPath ?? `${runDir}/log`)
    yield* fs.mkdir(runDir, { mode: 0o700 })
    yield* fs.append(logPath, "", PRIVATE)
    const toLog = (bytes: Uint8Array) => fs.append(logPath, bytes)
    const stdio: Stdio = { stdin: new Uint8Array(), stdout: toLog, stderr: toLog }
    if (options.pgid !== undefined && options.pgid === options.pid) {
      const proc = yield* table.start(specOf(command, home), {
        stdio,
        detached: true,
        ...fixed,
        pgid: options.pgid,
        runDir,
        logPath,
        onExit: (status) =>
          fs.write(
            `${runDir}/exit`,
            status.signal !== null ? `signal ${status.signal}\n` : `code ${status.exitCode}\n`,
            PRIVATE
          )
      })
      const info = table.process(proc.pid)
      for (const [name, value] of [
        ["pid", proc.pid],
        ["pgid", proc.pgid],
        ["start", info === undefined ? "" : startTimeOf(info)]
      ] as const)
        yield* fs.write(`${runDir}/${name}`, `${value}\n`, PRIVATE)
      return proc
    }
    // the supervisor writes these afresh: an old pid file must not be taken for the new one
    for (const name of ["pid", "pgid", "start", "exit"]) yield* fs.remove(`${runDir}/${name}`)
    const supervisor = yield* table.start(
      {
        argv: ["sh", "-c", SUPERVISOR, "mlops-supervisor", runDir, logPath, render(command), "0022"],
        env: { ...table.baseEnv, ...command.env },
        cwd: table.home
      },
      {
        stdio,
        detached: true,
        runDir,
        logPath,
        ...(options.pgid === undefined ? {} : { pid: options.pgid }),
        ...(options.startedAtMs === undefined ? {} : { startedAtMs: options.startedAtMs }),
        program: supervise(fixed)
      }
    )
    let pid: number | undefined
    while (pid === undefined) {
      const text = yield* fs.readText(`${runDir}/pid`)
      if (text !== undefined && text.trim() !== "") pid = Number(text.trim())
      else if (table.process(supervisor.pid) === undefined) return supervisor
      else yield* Effect.yieldNow()
    }
    yield* table.whenLaunched(pid)
    const exit = Effect.map(table.exitOf(pid), (status) => status ?? { exitCode: null, signal: "KILL" })
    return { pid, exit }
  })

export const makeFakeFs = (store: FakeFileSystem): FakeFs => ({
  resolve: (path) => store.resolve(path),
  stat: (path) => Effect.sync(() => store.stat(path)),
  read: (path, options) =>
    Effect.sync(() => {
      const result = store.read(path, options?.offset ?? 0, options?.length)
      return result.ok ? result.value : undefined
    }),
  readText: (path) =>
    Effect.sync(() => {
      const result = store.read(path)
      return result.ok ? decodeLossy(result.value) : undefined
    }),
  write: (path, data, options) =>
    Effect.flatMap(now, (ms) =>
      orDie(
        store.write(path, data, ms, options?.mode, options?.mode === undefined ? undefined : 0o700),
        `write ${path}`
      )
    ),
  append: (path, data, options) =>
    Effect.flatMap(now, (ms) => orDie(store.append(path, data, ms, options?.mode), `append ${path}`)),
  mkdir: (path, options) =>
    Effect.flatMap(now, (ms) => orDie(store.mkdir(path, ms, options?.mode), `mkdir ${path}`)),
  rename: (from, to) => Effect.flatMap(now, (ms) => Effect.sync(() => store.rename(from, to, ms).ok)),
  exists: (path) => Effect.sync(() => store.stat(path) !== undefined),
  remove: (path) => Effect.sync(() => store.remove(path)),
  listFiles: Effect.sync(() => store.listFiles())
})

interface HostState {
  readonly handle: FakeHostHandle
  readonly connect: Effect.Effect<Connection, ConnectionRefused | HostKeyMismatch>
  readonly forget: (connection?: Connection) => Effect.Effect<void>
  readonly config: HostConfig
}

const makeHost = (spec: FakeHostSpec, scope: Scope.Scope): Effect.Effect<HostState> =>
  Effect.gen(function* () {
    const alias = spec.alias
    const user = spec.user ?? "root"
    const home = spec.home ?? (user === "root" ? "/root" : `/home/${user}`)
    const config = HostConfig.make({
      alias,
      hostname: spec.hostname ?? alias,
      port: 22,
      user,
      identityFiles: [],
      proxyJump: [],
      knownHostsFiles: [],
      hostKeyPolicy: "strict",
      keepaliveIntervalMs: 15_000,
      keepaliveCountMax: 3,
      connectTimeoutMs: 10_000,
      ...(spec.python === undefined ? {} : { python: spec.python }),
      tags: spec.tags ?? [],
      ...(spec.stateDir === undefined ? {} : { stateDir: spec.stateDir }),
      source: "FakeHost"
    })
    const store = new FakeFileSystem(home)
    const fs = makeFakeFs(store)
    // what the live layer runs by path (its wrappers are `exec /bin/sh -c ...`)
    yield* fs.write("/bin/sh", "#!fake sh\n", { mode: 0o755 })
    for (const [path, content] of Object.entries(spec.files ?? {})) yield* fs.write(path, content)
    const programs: Array<Program> = [...(spec.programs ?? [])].reverse()
    const find = (argv: ReadonlyArray<string>) =>
      programs.find((p) => matches(p, argv)) ?? builtins.find((p) => matches(p, argv))
    const env = { PATH: "/usr/local/bin:/usr/bin:/bin", ...spec.env, HOME: home, USER: user }
    const table = new ProcessTable(
      alias,
      fs,
      env,
      home,
      (argv) => find(argv) ?? notFound,
      (argv) => find(argv) !== undefined,
      scope
    )
    store.setVirtual((abs) => {
      if (abs === "/proc") return { dir: true }
      const match = /^\/proc\/(\d+)(\/stat)?$/.exec(abs)
      const process = match === null ? undefined : table.process(Number(match[1]))
      if (process === undefined) return undefined
      return match![2] === undefined ? { dir: true } : { data: toBytes(statOf(process)) }
    })
    yield* Scope.addFinalizer(
      scope,
      Effect.sync(() => table.close())
    )
    const journal: Array<JournalEntry> = []
    let refusals = 0
    let down = false
    let keyChanged = false
    let connects = 0
    let fileLatency = Duration.zero
    const dropsOnReach = new Map<JournalEntry["kind"], string>()
    let current: { state: ConnectionState; connection: Connection } | undefined
    const runtime: HostRuntime = {
      alias,
      config,
      store,
      fs,
      table,
      journal,
      fileLatency: () => fileLatency,
      reached: (kind) =>
        Effect.suspend(() => {
          const reason = dropsOnReach.get(kind)
          if (reason === undefined) return Effect.void
          dropsOnReach.delete(kind)
          return drop(reason)
        }),
      takeRefusal: () => {
        if (refusals === 0) return false
        refusals--
        return true
      }
    }

    const drop = (reason: string) =>
      Effect.suspend(() => {
        const open = current
        current = undefined
        if (open === undefined || open.state.dropped !== undefined) return Effect.void
        const error = new ConnectionLost({ host: alias, reason })
        open.state.dropped = error
        return Deferred.succeed(open.state.closed, error)
      })

    const connect = Effect.suspend((): Effect.Effect<Connection, ConnectionRefused | HostKeyMismatch> => {
      if (down)
        return Effect.fail(
          new ConnectionRefused({ host: config.hostname, port: 22, reason: "connect ECONNREFUSED" })
        )
      if (keyChanged) {
        return Effect.fail(
          new HostKeyMismatch({
            host: config.hostname,
            port: 22,
            knownHostsFile: "~/.ssh/known_hosts",
            expectedFingerprints: [`SHA256:fake-${alias}-original`],
            actualFingerprint: `SHA256:fake-${alias}-changed`,
            fix: `ssh-keygen -R ${config.hostname}`
          })
        )
      }
      if (current !== undefined) return Effect.succeed(current.connection)
      return Effect.map(Deferred.make<ConnectionLost>(), (closed) => {
        const state: ConnectionState = { id: ++connects, closed, dropped: undefined }
        const connection = makeConnection(runtime, state)
        current = { state, connection }
        return connection
      })
    })

    const handle: FakeHostHandle = {
      alias,
      home,
      fs,
      processes: Effect.sync(() => table.running()),
      exited: Effect.sync(() => table.exited()),
      journal: Effect.sync(() => [...journal]),
      ports: Effect.sync(() => table.ports()),
      connects: Effect.sync(() => connects),
      register: (program) => Effect.sync(() => void programs.unshift(program)),
      dropConnection: (reason = "connection dropped (scripted)") => drop(reason),
      dropConnectionAt: (atMs, reason = "connection dropped (scripted)") =>
        Effect.asVoid(
          Effect.forkIn(
            Effect.flatMap(now, (ms) => Effect.zipRight(Effect.sleep(Math.max(0, atMs - ms)), drop(reason))),
            scope
          )
        ),
      dropConnectionAfter: (delay, reason = "connection dropped (scripted)") =>
        Effect.asVoid(
          Effect.forkIn(Effect.zipRight(Effect.sleep(Duration.decode(delay)), drop(reason)), scope)
        ),
      dropWhenReached: (kind, reason = "connection dropped (scripted)") =>
        Effect.sync(() => void dropsOnReach.set(kind, reason)),
      setDown: (value) =>
        Effect.suspend(() => {
          down = value
          return value ? drop("host went down") : Effect.void
        }),
      setFileLatency: (latency) =>
        Effect.sync(() => {
          fileLatency = Duration.decode(latency)
        }),
      refuseChannels: (n) =>
        Effect.sync(() => {
          refusals = n
        }),
      changeHostKey: Effect.sync(() => {
        keyChanged = true
      }),
      restoreHostKey: Effect.sync(() => {
        keyChanged = false
      }),
      signal: (target, signal) => table.signal(target, signal),
      start: (command, options = {}) => startOnHost(table, fs, command, options),
      exportFiles: Effect.sync(() => store.entries()),
      importFiles: (files) =>
        Effect.forEach(
          files,
          (file) => orDie(store.write(file.path, file.data, file.mtimeMs, file.mode), `import ${file.path}`),
          { discard: true }
        ),
      nextPid: Effect.sync(() => table.peekNextPid()),
      reservePids: (next) => Effect.sync(() => table.reservePids(next))
    }
    return {
      handle,
      connect,
      forget: (connection) =>
        Effect.sync(() => {
          if (connection === undefined || current?.connection === connection) current = undefined
        }),
      config
    }
  })

export const layer = (specs: ReadonlyArray<{ readonly alias: string } & FakeHostSpec>) =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const scope = yield* Effect.scope
      const hosts = new Map<string, HostState>()
      for (const spec of specs) hosts.set(spec.alias, yield* makeHost(spec, scope))
      const aliases = [...hosts.keys()]
      const find = (alias: string) =>
        Effect.suspend(() => {
          const host = hosts.get(alias)
          return host === undefined
            ? Effect.fail(new HostNotFound({ alias, known: aliases, sources: ["FakeHost"] }))
            : Effect.succeed(host)
        })
      return Context.empty().pipe(
        Context.add(Hosts, {
          resolve: (alias) => Effect.map(find(alias), (h) => h.config),
          list: Effect.sync(() => [...hosts.values()].map((h) => h.config))
        }),
        Context.add(ConnectionPool, {
          get: (alias) => Effect.flatMap(find(alias), (h) => h.connect),
          invalidate: (alias, connection) =>
            Effect.ignore(Effect.flatMap(find(alias), (h) => h.forget(connection)))
        }),
        Context.add(FakeHostControl, {
          host: (alias) => Effect.map(find(alias), (h) => h.handle),
          aliases
        })
      )
    })
  )
