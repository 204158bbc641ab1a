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
import type { FakeHostHandle, FakeHostSpec, JournalEntry } from "../FakeHost.js"
import type { Program } from "../FakeProgram.js"
import * as HostConfig from "../HostConfig.js"
import { Hosts } from "../Hosts.js"
import { builtins, notFound } from "./fakeBuiltins.js"
import { type ConnectionState, type HostRuntime, makeConnection } from "./fakeConnection.js"
import { FakeFileSystem, toBytes } from "./fakeFs.js"
import { FakeHostControl } from "./fakeHostControl.js"
import { matches, ProcessTable } from "./fakeProcesses.js"
import { makeFakeFs, orDie, startOnHost } from "./fakeStart.js"
import { statOf } from "./fakeWrappers.js"

const now = Clock.currentTimeMillis

interface HostState {
  readonly handle: FakeHostHandle
  readonly connect: Effect.Effect<Connection, ConnectionRefused | HostKeyMismatch>
  readonly forget: (connection?: Connection) => Effect.Effect<void>
  readonly config: HostConfig.HostConfig
}

const makeHost = (spec: FakeHostSpec, scope: Scope.Scope): Effect.Effect<HostState> =>
  Effect.gen(function* () {
    const alias = spec.alias
    const user = spec.user ?? "root"
    const home = spec.home ?? (user === "root" ? "/root" : `/home/${user}`)
    const config = HostConfig.inMemory({
      alias,
      hostname: spec.hostname,
      user,
      python: spec.python,
      tags: spec.tags,
      stateDir: spec.stateDir
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
          list: Effect.sync(() => [...hosts.values()].map((h) => h.config)),
          groups: Effect.succeed(new Map())
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
