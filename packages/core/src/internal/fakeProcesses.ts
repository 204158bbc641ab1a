/**
 * The process table of a fake host: starts programs as fibers, delivers signals, records
 * exits. A process's exit status: the code `run` returned (or passed to `exit`), or the
 * signal that interrupted it; a failure or defect = exit 1 with the cause on stderr.
 *
 * Processes are started from a `ProcessSpec` (argv, complete environment, absolute cwd), the
 * way `execve` sees them. `exec` replaces a running process's program in place (same pid,
 * group and fiber), as `execve` does; the fake shell uses it for the shell's `exec`.
 *
 * @internal
 */
import { Cause, Clock, Deferred, Effect, Equal, Exit, Fiber, Scope } from "effect"
import type { ExitStatus } from "../Connection.js"
import type { ExitedProcess } from "../FakeHost.js"
import type {
  FakeFs,
  HttpHandler,
  ListeningPort,
  ProcessInfo,
  Program,
  ProgramContext,
  SignalTarget
} from "../FakeProgram.js"
import { AddressInUse } from "../FakeProgram.js"
import { decodeLossy, toBytes } from "./fakeFs.js"
import { serve } from "./fakeHttp.js"
import type {
  ProcessSpec,
  Started,
  StartOptions,
  Stdio,
  SystemContext,
  SystemProgram
} from "./fakeProcessModel.js"
import { specOf } from "./fakeProcessModel.js"
import { basename, normalizeSignal } from "./fakeSignals.js"

export {
  discard,
  type ProcessSpec,
  type Started,
  type StartOptions,
  type Stdio,
  type SystemContext,
  type SystemProgram,
  specOf
} from "./fakeProcessModel.js"
export { basename, matches, normalizeSignal, shellStatus, signalName, signalNumber } from "./fakeSignals.js"

const isSystem = (program: Program): program is SystemProgram => "runSystem" in program

interface Entry {
  info: ProcessInfo
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  readonly handlers: Map<string, Effect.Effect<void>>
  killedBy: string | undefined
  exitCode: number | undefined
  readonly done: Deferred.Deferred<ExitStatus>
  /** Completed once a program other than a shell runs (or the process ended). */
  readonly launched: Deferred.Deferred<void>
  readonly scope: Scope.CloseableScope
}

export class ProcessTable {
  private nextPid = 1000
  private readonly entries = new Map<number, Entry>()
  private readonly history: Array<ExitedProcess> = []
  private readonly listening = new Map<number, ListeningPort>()
  /** Set when the layer's scope closes: nothing can start any more. */
  private closed = false

  constructor(
    readonly alias: string,
    readonly fs: FakeFs,
    /** The login environment (HOME, USER, PATH...). */
    readonly baseEnv: Readonly<Record<string, string>>,
    readonly home: string,
    /** The program for an argv; a not-found program when nothing matches. */
    readonly lookup: (argv: ReadonlyArray<string>) => Program,
    /** True when some program (not the not-found one) matches. */
    readonly exists: (argv: ReadonlyArray<string>) => boolean,
    private readonly hostScope: Scope.Scope
  ) {}

  /** The layer's scope closed: refuse new processes from now on. */
  close(): void {
    this.closed = true
  }

  running(): ReadonlyArray<ProcessInfo> {
    return [...this.entries.values()].map((e) => e.info).sort((a, b) => a.pid - b.pid)
  }

  /** One running process. */
  process(pid: number): ProcessInfo | undefined {
    return this.entries.get(pid)?.info
  }

  exited(): ReadonlyArray<ExitedProcess> {
    return [...this.history]
  }

  ports(): ReadonlyArray<ListeningPort> {
    return [...this.listening.values()]
  }

  port(port: number): ListeningPort | undefined {
    return this.listening.get(port)
  }

  /** The pid the next process gets. */
  peekNextPid(): number {
    return this.nextPid
  }

  /** Never hand out a pid below `next` (pids of an earlier run stay unique). */
  reservePids(next: number): void {
    this.nextPid = Math.max(this.nextPid, Math.floor(next))
  }

  /** How `pid` ended (waiting while it runs); undefined for a pid never seen. */
  exitOf(pid: number): Effect.Effect<ExitStatus | undefined> {
    return Effect.suspend(() => {
      const entry = this.entries.get(pid)
      if (entry !== undefined) return Deferred.await(entry.done)
      const ended = [...this.history].reverse().find((p) => p.pid === pid)
      return Effect.succeed(
        ended === undefined ? undefined : { exitCode: ended.exitCode, signal: ended.signal }
      )
    })
  }

  /** Completes once `pid` runs a program other than a shell, or has ended. */
  whenLaunched(pid: number): Effect.Effect<void> {
    return Effect.suspend(() => {
      const entry = this.entries.get(pid)
      return entry === undefined ? Effect.void : Deferred.await(entry.launched)
    })
  }

  /** Deliver a signal; returns how many processes it reached. */
  signal(target: SignalTarget, rawSignal: string): Effect.Effect<number> {
    return Effect.suspend(() => {
      const signal = normalizeSignal(rawSignal)
      const targets =
        "pid" in target
          ? [this.entries.get(target.pid)].filter((e) => e !== undefined)
          : [...this.entries.values()].filter((e) => e.info.pgid === target.pgid)
      if (signal === "0") return Effect.succeed(targets.length)
      return Effect.forEach(targets, (entry) => this.deliver(entry, signal), { discard: true }).pipe(
        Effect.as(targets.length)
      )
    })
  }

  private deliver(entry: Entry, signal: string): Effect.Effect<void> {
    const handler = signal === "KILL" ? undefined : entry.handlers.get(signal)
    if (handler !== undefined) return Effect.asVoid(Effect.forkIn(handler, entry.scope))
    return Effect.suspend(() => {
      entry.killedBy ??= signal
      entry.info = { ...entry.info, state: "stopping" }
      const fiber = entry.fiber
      if (fiber === undefined) return Effect.void
      // Wait for the death (deterministic tests), unless a process signals itself.
      return Effect.flatMap(Effect.fiberId, (self) =>
        Equal.equals(self, fiber.id()) ? Fiber.interruptFork(fiber) : Effect.asVoid(Fiber.interrupt(fiber))
      )
    })
  }

  /** Start a process. */
  start(spec: ProcessSpec, options: StartOptions): Effect.Effect<Started> {
    return Effect.gen(this, function* () {
      if (this.closed)
        return yield* Effect.dieMessage(`fake host ${this.alias}: used after its layer was closed`)
      const now = yield* Clock.currentTimeMillis
      if (options.pid !== undefined && this.entries.has(options.pid))
        return yield* Effect.dieMessage(`fake host ${this.alias}: pid ${options.pid} is already running`)
      const pid = options.pid ?? this.nextPid
      this.reservePids(pid + 1)
      const pgid = options.pgid ?? pid
      const entry: Entry = {
        info: {
          pid,
          pgid,
          ppid: options.ppid ?? 1,
          argv: spec.argv,
          env: spec.env,
          cwd: spec.cwd,
          state: "running",
          detached: options.detached ?? false,
          startedAtMs: options.startedAtMs ?? now,
          ...(options.runDir === undefined ? {} : { runDir: options.runDir }),
          ...(options.logPath === undefined ? {} : { logPath: options.logPath })
        },
        fiber: undefined,
        handlers: new Map(),
        killedBy: undefined,
        exitCode: undefined,
        done: yield* Deferred.make<ExitStatus>(),
        launched: yield* Deferred.make<void>(),
        scope: yield* Scope.make()
      }
      this.entries.set(pid, entry)
      const program = options.program ?? this.lookup(spec.argv)
      const body = Effect.suspend(() => this.runProgram(entry, program, options.stdio))
      entry.fiber = yield* body.pipe(
        Effect.onExit((exit) => this.finish(entry, exit, options)),
        Effect.forkIn(this.hostScope)
      )
      return { pid, pgid, exit: Deferred.await(entry.done) }
    })
  }

  private runProgram(entry: Entry, program: Program, stdio: Stdio): Effect.Effect<number, unknown> {
    if (isSystem(program)) return program.runSystem(this.systemContext(entry, stdio))
    return Effect.zipRight(
      Deferred.succeed(entry.launched, undefined),
      program.run(this.context(entry, stdio))
    )
  }

  private finish(entry: Entry, exit: Exit.Exit<number, unknown>, options: StartOptions): Effect.Effect<void> {
    return Effect.gen(this, function* () {
      let status: ExitStatus
      if (entry.exitCode !== undefined) status = { exitCode: entry.exitCode, signal: null }
      else if (Exit.isSuccess(exit)) status = { exitCode: exit.value, signal: null }
      else if (Cause.isInterruptedOnly(exit.cause))
        status = { exitCode: null, signal: entry.killedBy ?? "KILL" }
      else {
        yield* options.stdio.stderr(toBytes(`${Cause.pretty(exit.cause)}\n`))
        status = { exitCode: 1, signal: null }
      }
      yield* Scope.close(entry.scope, Exit.void)
      if (options.onExit !== undefined) yield* options.onExit(status)
      const now = yield* Clock.currentTimeMillis
      this.entries.delete(entry.info.pid)
      this.history.push({
        pid: entry.info.pid,
        pgid: entry.info.pgid,
        argv: entry.info.argv,
        endedAtMs: now,
        ...status
      })
      yield* Deferred.succeed(entry.launched, undefined)
      yield* Deferred.succeed(entry.done, status)
    })
  }

  private context(entry: Entry, stdio: Stdio): ProgramContext {
    const writer = (sink: (bytes: Uint8Array) => Effect.Effect<void>) => ({
      write: (chunk: string | Uint8Array) => sink(toBytes(chunk)),
      line: (text: string) => sink(toBytes(`${text}\n`))
    })
    const info = entry.info
    return {
      alias: this.alias,
      argv: info.argv,
      env: info.env,
      cwd: info.cwd,
      pid: info.pid,
      pgid: info.pgid,
      stdin: stdio.stdin,
      stdinText: decodeLossy(stdio.stdin),
      stdout: writer(stdio.stdout),
      stderr: writer(stdio.stderr),
      fs: this.fs,
      listen: (port, handler) => this.listen(entry, port, handler),
      onSignal: (signal, handler) =>
        Effect.sync(() => void entry.handlers.set(normalizeSignal(signal), handler)),
      exit: (code) =>
        Effect.suspend(() => {
          entry.exitCode ??= code
          return entry.fiber === undefined ? Effect.interrupt : Fiber.interruptFork(entry.fiber)
        }).pipe(Effect.zipRight(Effect.never)),
      kill: (target, signal) => this.signal(target, signal),
      // a RemoteCommand becomes what the live layer would run: `sh -c <rendered line>`
      spawn: (command) =>
        this.start(specOf(command, entry.info), {
          stdio: { ...stdio, stdin: new Uint8Array() },
          pgid: entry.info.pgid,
          ppid: entry.info.pid,
          detached: entry.info.detached
        }),
      ports: Effect.sync(() => this.ports()),
      processes: Effect.sync(() => this.running())
    }
  }

  private systemContext(entry: Entry, stdio: Stdio): SystemContext {
    return {
      ...this.context(entry, stdio),
      stdio,
      table: this,
      exec: (spec, next, program) =>
        Effect.suspend(() => {
          entry.info = { ...entry.info, argv: spec.argv, env: spec.env, cwd: spec.cwd }
          entry.handlers.clear()
          return this.runProgram(entry, program ?? this.lookup(spec.argv), next)
        }),
      // a shell that runs commands itself (a script's loop) rather than `exec`ing a program is
      // the program that runs: launched once it starts the first of them
      startChild: (spec, childStdio, { newGroup, ...options } = {}) =>
        Effect.zipRight(
          Deferred.succeed(entry.launched, undefined),
          this.start(spec, {
            ...(newGroup === true ? {} : { pgid: entry.info.pgid }),
            detached: entry.info.detached,
            ...options,
            stdio: childStdio,
            ppid: newGroup === true ? 1 : entry.info.pid
          })
        ),
      raise: (signal) =>
        Effect.suspend(() => {
          entry.killedBy ??= normalizeSignal(signal)
          return entry.fiber === undefined ? Effect.interrupt : Fiber.interruptFork(entry.fiber)
        }).pipe(Effect.zipRight(Effect.never))
    }
  }

  private listen(entry: Entry, port: number, handler: HttpHandler): Effect.Effect<void, AddressInUse> {
    return Effect.gen(this, function* () {
      const taken = this.listening.get(port)
      if (taken !== undefined) return yield* new AddressInUse({ port, pid: taken.pid })
      const loopbackPort = yield* Scope.extend(serve(handler), entry.scope)
      const command = basename(entry.info.argv[0] ?? "")
      this.listening.set(port, { port, pid: entry.info.pid, command, loopbackPort })
      yield* Scope.addFinalizer(
        entry.scope,
        Effect.sync(() => {
          if (this.listening.get(port)?.pid === entry.info.pid) this.listening.delete(port)
        })
      )
    })
  }
}
