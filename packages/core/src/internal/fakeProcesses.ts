/**
 * The process table of a fake host: starts programs as fibers, delivers signals, records
 * exits. A process's exit status: the code `run` returned (or passed to `exit`), or the
 * signal that interrupted it; a failure or defect = exit 1 with the cause on stderr.
 *
 * @internal
 */
import { Cause, Clock, Deferred, Effect, Equal, Exit, Fiber, Scope } from "effect"
import type { ExitStatus } from "../Connection.js"
import type { ExitedProcess } from "../FakeHost.js"
import type {
  ChildProcess,
  FakeFs,
  HttpHandler,
  ListeningPort,
  ProcessInfo,
  Program,
  ProgramContext,
  SignalTarget
} from "../FakeProgram.js"
import { AddressInUse } from "../FakeProgram.js"
import type { RemoteCommand } from "../RemoteCommand.js"
import { decodeLossy, toBytes } from "./fakeFs.js"
import { serve } from "./fakeHttp.js"

/** Where a process's output goes. */
export interface ProcessIO {
  readonly stdout: (bytes: Uint8Array) => Effect.Effect<void>
  readonly stderr: (bytes: Uint8Array) => Effect.Effect<void>
}

export interface StartOptions {
  readonly io: ProcessIO
  readonly stdin?: Uint8Array
  /** Join this group; default: a new group led by the new pid. */
  readonly pgid?: number
  readonly ppid?: number
  readonly detached?: boolean
  /** Runs before the process leaves the table (e.g. write the `exit` file). */
  readonly onExit?: (status: ExitStatus) => Effect.Effect<void>
  /** Use this pid (it must be free); default: the next one. Later pids are allocated above it. */
  readonly pid?: number
  /** The start time the table reports; default: now. */
  readonly startedAtMs?: number
  /** Recorded in the process table (a detached process's run directory and log). */
  readonly runDir?: string
  readonly logPath?: string
}

interface Entry {
  info: ProcessInfo
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  readonly handlers: Map<string, Effect.Effect<void>>
  killedBy: string | undefined
  exitCode: number | undefined
  readonly done: Deferred.Deferred<ExitStatus>
  readonly scope: Scope.CloseableScope
}

const SIGNAL_NUMBERS: Record<string, string> = { "1": "HUP", "2": "INT", "9": "KILL", "15": "TERM", "0": "0" }

/** `SIGTERM`, `TERM`, `15` → `TERM`. */
export const normalizeSignal = (signal: string): string => {
  const upper = signal.toUpperCase()
  const bare = upper.startsWith("SIG") ? upper.slice(3) : upper
  return SIGNAL_NUMBERS[bare] ?? bare
}

/** The last path component (`ps -o comm`, the `ss` program name). */
export const basename = (path: string): string => path.slice(path.lastIndexOf("/") + 1)

export const matches = (program: Program, argv: ReadonlyArray<string>): boolean =>
  typeof program.match === "string"
    ? argv[0] === program.match || basename(argv[0] ?? "") === program.match
    : program.match(argv)

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
    readonly baseEnv: Readonly<Record<string, string>>,
    readonly home: string,
    private readonly lookup: (argv: ReadonlyArray<string>) => Program,
    private readonly hostScope: Scope.Scope
  ) {}

  /** The layer's scope closed: refuse new processes from now on. */
  close(): void {
    this.closed = true
  }

  running(): ReadonlyArray<ProcessInfo> {
    return [...this.entries.values()].map((e) => e.info).sort((a, b) => a.pid - b.pid)
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

  /** Start `command` as a new process. */
  start(command: RemoteCommand, options: StartOptions): Effect.Effect<ChildProcess & { pgid: number }> {
    return Effect.gen(this, function* () {
      if (this.closed)
        return yield* Effect.dieMessage(`fake host ${this.alias}: used after its layer was closed`)
      const now = yield* Clock.currentTimeMillis
      if (options.pid !== undefined && this.entries.has(options.pid))
        return yield* Effect.dieMessage(`fake host ${this.alias}: pid ${options.pid} is already running`)
      const pid = options.pid ?? this.nextPid
      this.reservePids(pid + 1)
      const pgid = options.pgid ?? pid
      const cwd = this.fs.resolve(command.cwd ?? this.home)
      const env = { ...this.baseEnv, ...command.env }
      const entry: Entry = {
        info: {
          pid,
          pgid,
          ppid: options.ppid ?? 1,
          argv: command.argv,
          env,
          cwd,
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
        scope: yield* Scope.make()
      }
      this.entries.set(pid, entry)
      const ctx = this.context(entry, options)
      const body = Effect.suspend(() => this.body(ctx, command))
      entry.fiber = yield* body.pipe(
        Effect.onExit((exit) => this.finish(entry, exit, options)),
        Effect.forkIn(this.hostScope)
      )
      return { pid, pgid, exit: Deferred.await(entry.done) }
    })
  }

  private body(ctx: ProgramContext, command: RemoteCommand): Effect.Effect<number, unknown> {
    return Effect.gen(this, function* () {
      const dir = yield* ctx.fs.stat(ctx.cwd)
      if (command.cwd !== undefined && dir?.isDirectory !== true) {
        yield* ctx.stderr.line(`sh: 1: cd: can't cd to ${command.cwd}`)
        return 2
      }
      return yield* this.lookup(ctx.argv).run(ctx)
    })
  }

  private finish(entry: Entry, exit: Exit.Exit<number, unknown>, options: StartOptions): Effect.Effect<void> {
    return Effect.gen(this, function* () {
      let status: ExitStatus
      if (entry.exitCode !== undefined) status = { exitCode: entry.exitCode, signal: null }
      else if (Exit.isSuccess(exit)) status = { exitCode: exit.value, signal: null }
      else if (Cause.isInterruptedOnly(exit.cause))
        status = { exitCode: null, signal: entry.killedBy ?? "KILL" }
      else {
        yield* options.io.stderr(toBytes(`${Cause.pretty(exit.cause)}\n`))
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
      yield* Deferred.succeed(entry.done, status)
    })
  }

  private context(entry: Entry, options: StartOptions): ProgramContext {
    const writer = (sink: (bytes: Uint8Array) => Effect.Effect<void>) => ({
      write: (chunk: string | Uint8Array) => sink(toBytes(chunk)),
      line: (text: string) => sink(toBytes(`${text}\n`))
    })
    const stdin = options.stdin ?? new Uint8Array()
    return {
      alias: this.alias,
      argv: entry.info.argv,
      env: entry.info.env,
      cwd: entry.info.cwd,
      pid: entry.info.pid,
      pgid: entry.info.pgid,
      stdin,
      stdinText: decodeLossy(stdin),
      stdout: writer(options.io.stdout),
      stderr: writer(options.io.stderr),
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
      spawn: (command) =>
        this.start(command, {
          io: options.io,
          pgid: entry.info.pgid,
          ppid: entry.info.pid,
          detached: entry.info.detached
        }),
      ports: Effect.sync(() => this.ports()),
      processes: Effect.sync(() => this.running())
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
