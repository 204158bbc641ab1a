/**
 * What a program running on a fake host is written against: its context (argv, env, stdio,
 * files, signals, HTTP listening, children) and the process and port tables it can see.
 * `FakeHost` re-exports every name here, so `FakeHost.Program` and `FakeProgram.Program` are
 * the same type.
 *
 * @since 0.1.0
 */
import { Data, type Effect, type Stream } from "effect"
import type { ExitStatus, FileStat } from "./Connection.js"
import type { RemoteCommand } from "./RemoteCommand.js"

/** Where a program writes: bytes or text chunks, or whole lines (a `\n` is added). @category models */
export interface Writer {
  readonly write: (chunk: string | Uint8Array) => Effect.Effect<void>
  readonly line: (text: string) => Effect.Effect<void>
}

/** An HTTP request as a fake program sees it. @category models */
export interface HttpRequest {
  readonly method: string
  /** Path with query string, e.g. `/health?x=1`. */
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** @category models */
export interface HttpResponse {
  readonly status: number
  /**
   * The whole body, or its chunks as the program produces them (a streamed completion pacing
   * its tokens): each chunk is written to the client as it comes; the response ends with the stream.
   */
  readonly body: string | Stream.Stream<string>
  readonly headers?: Readonly<Record<string, string>>
}

/** @category models */
export type HttpHandler = (request: HttpRequest) => Effect.Effect<HttpResponse, unknown>

/** `listen` on a port some process already listens on. @category errors */
export class AddressInUse extends Data.TaggedError("AddressInUse")<{
  readonly port: number
  readonly pid: number
}> {
  override get message() {
    return `port ${this.port} is already in use by pid ${this.pid}`
  }
}

/** Which processes a signal goes to: one pid or a whole process group. @category models */
export type SignalTarget = { readonly pid: number } | { readonly pgid: number }

/** The file system of a fake host, as programs and tests use it. Paths may start with `~/`. @category models */
export interface FakeFs {
  readonly resolve: (path: string) => string
  readonly stat: (path: string) => Effect.Effect<FileStat | undefined>
  /** `undefined` when the file does not exist. */
  readonly read: (
    path: string,
    options?: { readonly offset?: number; readonly length?: number }
  ) => Effect.Effect<Uint8Array | undefined>
  /** Lossy UTF-8; `undefined` when the file does not exist. */
  readonly readText: (path: string) => Effect.Effect<string | undefined>
  /**
   * Create or replace, creating parent directories; mtime from the Clock. A new file gets
   * `mode` (default 0644, a program under umask 022); an existing one keeps its mode unless
   * `mode` is given. New parents get 0755, or 0700 when `mode` is given (a private file).
   */
  readonly write: (
    path: string,
    data: string | Uint8Array,
    options?: { readonly mode?: number }
  ) => Effect.Effect<void>
  readonly append: (
    path: string,
    data: string | Uint8Array,
    options?: { readonly mode?: number }
  ) => Effect.Effect<void>
  /** `mkdir -p`; new directories get `mode` (default 0755). */
  readonly mkdir: (path: string, options?: { readonly mode?: number }) => Effect.Effect<void>
  /** Rename a file, replacing the target (`mv -f`); false when there is no such file. */
  readonly rename: (from: string, to: string) => Effect.Effect<boolean>
  readonly exists: (path: string) => Effect.Effect<boolean>
  /** Remove a file or a directory tree; false when nothing was there. */
  readonly remove: (path: string) => Effect.Effect<boolean>
  readonly listFiles: Effect.Effect<ReadonlyArray<string>>
  /**
   * The names in a directory (files and directories, sorted; computed `/proc` entries are not
   * listed), or `undefined` when it is not a directory.
   */
  readonly readDirectory: (path: string) => Effect.Effect<ReadonlyArray<string> | undefined>
}

/** What a running program gets. @category models */
export interface ProgramContext {
  readonly alias: string
  readonly argv: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  /** Absolute working directory (home unless the command set one). */
  readonly cwd: string
  readonly pid: number
  readonly pgid: number
  readonly stdin: Uint8Array
  readonly stdinText: string
  readonly stdout: Writer
  readonly stderr: Writer
  readonly fs: FakeFs
  /**
   * Serve HTTP on `127.0.0.1:port` of the fake host until the program ends. `forward(port)`
   * reaches it (through a real loopback server), and `ss` lists it with this pid.
   */
  readonly listen: (port: number, handler: HttpHandler) => Effect.Effect<void, AddressInUse>
  /**
   * Handle a signal instead of dying from it (TERM, INT, HUP...; KILL cannot be handled). The
   * handler runs alongside the program; to exit, it can `exit(code)`.
   */
  readonly onSignal: (signal: string, handler: Effect.Effect<void>) => Effect.Effect<void>
  /** End this process now with `code` (from a signal handler or a child fiber). */
  readonly exit: (code: number) => Effect.Effect<void>
  /** Send a signal (`"0"` only checks existence). Returns how many processes it reached. */
  readonly kill: (target: SignalTarget, signal: string) => Effect.Effect<number>
  /** Start a child process in this process's group (output goes where this process's goes). */
  readonly spawn: (command: RemoteCommand) => Effect.Effect<ChildProcess>
  /** The host's listening ports (what `ss` prints). */
  readonly ports: Effect.Effect<ReadonlyArray<ListeningPort>>
  /** The host's process table (what `ps` would print). */
  readonly processes: Effect.Effect<ReadonlyArray<ProcessInfo>>
}

/** @category models */
export interface ChildProcess {
  readonly pid: number
  readonly exit: Effect.Effect<ExitStatus>
}

/**
 * A program the fake host can run. `match` is a name compared with `argv[0]` and its basename,
 * or a predicate on the whole argv. A failure or defect of `run` ends the process with exit 1
 * and the error on stderr.
 *
 * @category models
 */
export interface Program {
  readonly match: string | ((argv: ReadonlyArray<string>) => boolean)
  readonly run: (ctx: ProgramContext) => Effect.Effect<number, unknown>
}

/** One row of the process table. @category models */
export interface ProcessInfo {
  readonly pid: number
  readonly pgid: number
  readonly ppid: number
  readonly argv: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
  readonly state: "running" | "stopping"
  readonly detached: boolean
  readonly startedAtMs: number
  /** A detached process started with a run directory (`spawnDetached`, `start` with `runDir`). */
  readonly runDir?: string
  /** Where its output goes (with `runDir`). */
  readonly logPath?: string
}

/** @category models */
export interface ListeningPort {
  readonly port: number
  readonly pid: number
  /** The program's name (basename of argv[0]). */
  readonly command: string
  /** The real loopback port that `forward` connects to. */
  readonly loopbackPort: number
}
