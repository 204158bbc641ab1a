/**
 * A fake host's file system as programs see it (`FakeFs`), and `FakeHostHandle.start`:
 * starting a process directly on the host, optionally under a supervisor in a run directory.
 *
 * @internal
 */
import { Clock, Effect } from "effect"
import type { StartOptions } from "../FakeHost.js"
import type { ChildProcess, FakeFs } from "../FakeProgram.js"
import type { RemoteCommand } from "../RemoteCommand.js"
import { render } from "../RemoteCommand.js"
import { decodeLossy, type FakeFileSystem, type FsResult } from "./fakeFs.js"
import { discard, type ProcessTable, type Stdio, specOf } from "./fakeProcesses.js"
import { startTimeOf, supervise } from "./fakeWrappers.js"
import { SUPERVISOR } from "./shellScripts.js"

export const orDie = (result: FsResult<void>, what: string): Effect.Effect<void> =>
  result.ok ? Effect.void : Effect.dieMessage(`fake fs: ${what}: ${result.reason}`)

const now = Clock.currentTimeMillis

const PRIVATE = { mode: 0o600 } as const

/**
 * `FakeHostHandle.start`: without a run directory, `sh -c <line>` with its output discarded;
 * with one, under a supervisor as `spawnDetached` starts it (a given `pgid` other than the
 * pid is the supervisor's pid). A `pgid` equal to the pid restores a process that leads its own
 * group (no supervisor): its `exit` file is written when it ends, as a supervisor would.
 */
export const startOnHost = (
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
  listFiles: Effect.sync(() => store.listFiles()),
  readDirectory: (path) => Effect.sync(() => store.readDirectory(path))
})
