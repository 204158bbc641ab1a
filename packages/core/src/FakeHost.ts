/**
 * A deterministic in-memory host that implements `Connection`: a virtual file system, a
 * process table running registered programs (Effects), detached processes with run
 * directories, HTTP listeners reachable through `forward`, and scripted faults. Time comes
 * only from Effect's `Clock`, so `TestClock` drives sleeps, timeouts and mtimes.
 *
 * It is sent what a real host is sent: the exact exec-request text of the live layer (the
 * wrapper scripts around `RemoteCommand.render`) and the exact channel stdin (environment
 * values travel there), run as sshd runs it (`sh -c <text>` in the home directory). Its `sh`
 * interprets POSIX sh the way dash does (quoting, parameter expansions, `$(...)`, globs over
 * its files, pipelines, `if`/`for`/`while`/`case`, functions, dash's builtins; checked
 * against the real dash) and refuses what it does not model by name (background jobs,
 * here-documents, `$((...))`, `trap`...); mlops' own wrapper scripts run as counterparts
 * that do what they do. A bare command name runs a program registered for it, else the one
 * for the first executable file PATH finds; `command -v` and `[ -x ]` see the files. So a
 * detached process has a supervisor (its pgid) and the program it `exec`s (its pid), a
 * program named by a path runs only where that file exists (`/bin/sh` always does), and
 * `/proc/<pid>/stat` exists for running processes.
 *
 * `layer(specs)` provides `Hosts`, `ConnectionPool` and `FakeHostControl`. What a program
 * running on it sees is `FakeProgram` (re-exported here).
 *
 * @since 0.1.0
 */
import { type Duration, Effect, type Layer } from "effect"
import type { ExitStatus } from "./Connection.js"
import type { ConnectionPool } from "./ConnectionPool.js"
import type { HostNotFound } from "./Errors.js"
import type {
  ChildProcess,
  FakeFs,
  ListeningPort,
  ProcessInfo,
  Program,
  SignalTarget
} from "./FakeProgram.js"
import type { Hosts } from "./Hosts.js"
import * as internal from "./internal/fakeHost.js"
import { FakeHostControl } from "./internal/fakeHostControl.js"
import * as tools from "./internal/fakeTools.js"
import { syncPrograms } from "./internal/sync/fakeTools.js"
import type { Gpu } from "./Probes.js"
import type { RemoteCommand } from "./RemoteCommand.js"

// The program-facing API lives in FakeProgram; these names stay reachable as `FakeHost.X`.
export {
  AddressInUse,
  type ChildProcess,
  type FakeFs,
  type HttpHandler,
  type HttpRequest,
  type HttpResponse,
  type ListeningPort,
  type ProcessInfo,
  type Program,
  type ProgramContext,
  type SignalTarget,
  type Writer
} from "./FakeProgram.js"

// ---- hosts ---------------------------------------------------------------------------------

/** @category models */
export interface FakeHostSpec {
  readonly alias: string
  /** Default: the alias. Never dialled. */
  readonly hostname?: string
  /** Default "root". */
  readonly user?: string
  /** Default "/root" for root, else "/home/<user>". */
  readonly home?: string
  /** Initial files, path (absolute or `~/`) → content. */
  readonly files?: Readonly<Record<string, string | Uint8Array>>
  readonly programs?: ReadonlyArray<Program>
  /** The login environment every command starts with (plus HOME and USER). */
  readonly env?: Readonly<Record<string, string>>
  /** `HostConfig.python`. */
  readonly python?: string
  readonly tags?: ReadonlyArray<string>
  /** `HostConfig.stateDir`; default `~/.mlops`. */
  readonly stateDir?: string
}

/** One file of a fake host, as `exportFiles` gives it and `importFiles` takes it. @category models */
export interface FakeFileEntry {
  /** Absolute. */
  readonly path: string
  readonly data: Uint8Array
  readonly mtimeMs: number
  readonly mode: number
}

/**
 * How `FakeHostHandle.start` starts a process; everything is optional. With `runDir` it runs
 * as `spawnDetached` runs it (output appended to `logPath`, default `<runDir>/log`; `pid`,
 * `pgid` and, when it ends, `exit` files in `runDir`); without, its output is discarded.
 *
 * @category models
 */
export interface StartOptions {
  /** Use this pid (it must not be running); later pids are allocated above it. */
  readonly pid?: number
  /** Join (or lead) this group; default: a new group led by the pid. */
  readonly pgid?: number
  /** The start time the process table reports (epoch ms); default: now. */
  readonly startedAtMs?: number
  readonly runDir?: string
  readonly logPath?: string
}

/** A process that ended (kept in the host's history). @category models */
export interface ExitedProcess extends ExitStatus {
  readonly pid: number
  readonly pgid: number
  readonly argv: ReadonlyArray<string>
  readonly endedAtMs: number
}

/** One command the host was asked to run, in order. @category models */
export interface JournalEntry {
  readonly kind: "exec" | "stream" | "detached"
  readonly command: RemoteCommand
  /** The exact exec-request text the host was sent (the same the live layer sends). */
  readonly line: string
  readonly atMs: number
  /** Which connection (1 = the first connect) carried it. */
  readonly connection: number
}

/** Inspection and scripted faults for one fake host. @category models */
export interface FakeHostHandle {
  readonly alias: string
  readonly home: string
  readonly fs: FakeFs
  /** Running processes, by pid. */
  readonly processes: Effect.Effect<ReadonlyArray<ProcessInfo>>
  readonly exited: Effect.Effect<ReadonlyArray<ExitedProcess>>
  readonly journal: Effect.Effect<ReadonlyArray<JournalEntry>>
  readonly ports: Effect.Effect<ReadonlyArray<ListeningPort>>
  /** Number of successful connects so far. */
  readonly connects: Effect.Effect<number>
  /** Registered later = matched first (before the built-ins). */
  readonly register: (program: Program) => Effect.Effect<void>
  /** Drop the current connection: `closed` fires, in-flight exec/stream fail with ConnectionLost. */
  readonly dropConnection: (reason?: string) => Effect.Effect<void>
  /** Drop whatever connection is open when the Clock reaches `atMs` (epoch millis). */
  readonly dropConnectionAt: (atMs: number, reason?: string) => Effect.Effect<void>
  /** Drop the connection after `delay` on the Clock. */
  readonly dropConnectionAfter: (delay: Duration.DurationInput, reason?: string) => Effect.Effect<void>
  /**
   * Drop the connection as soon as the next command of `kind` has reached the host (its
   * process started), before its answer: the client cannot know what it did. A `detached`
   * start runs on to its end; an `exec` or `stream` dies with its channel (the lifeline).
   */
  readonly dropWhenReached: (kind: JournalEntry["kind"], reason?: string) => Effect.Effect<void>
  /** A down host refuses connects (ConnectionRefused); `down(true)` also drops the current one. */
  readonly setDown: (down: boolean) => Effect.Effect<void>
  /** Every file operation (stat/read/write/mkdir) takes this long on the Clock; default 0. */
  readonly setFileLatency: (latency: Duration.DurationInput) => Effect.Effect<void>
  /** The next `n` session channels (exec, stream, spawnDetached) fail with ChannelOpenFailed. */
  readonly refuseChannels: (n: number) => Effect.Effect<void>
  /** The next connects fail with HostKeyMismatch until `restoreHostKey`. */
  readonly changeHostKey: Effect.Effect<void>
  readonly restoreHostKey: Effect.Effect<void>
  /** Signal processes as `kill` would; returns how many it reached. */
  readonly signal: (target: SignalTarget, signal: string) => Effect.Effect<number>
  /**
   * Start a detached process directly (no connection, not journaled), e.g. a background writer,
   * or a process restored with its earlier pid (see `StartOptions`).
   */
  readonly start: (command: RemoteCommand, options?: StartOptions) => Effect.Effect<ChildProcess>
  /** Every file (bytes copied), with mtime and mode, sorted by path. */
  readonly exportFiles: Effect.Effect<ReadonlyArray<FakeFileEntry>>
  /** Create or replace files keeping their mtime and mode (parents are created). */
  readonly importFiles: (files: ReadonlyArray<FakeFileEntry>) => Effect.Effect<void>
  /** The pid the next process will get. */
  readonly nextPid: Effect.Effect<number>
  /** Never hand out a pid below `next` again (e.g. the pids of an earlier, saved run). */
  readonly reservePids: (next: number) => Effect.Effect<void>
}

/** @category tags */
export { FakeHostControl }

/** The handle of one fake host. @category accessors */
export const host = (alias: string): Effect.Effect<FakeHostHandle, HostNotFound, FakeHostControl> =>
  Effect.flatMap(FakeHostControl, (control) => control.host(alias))

/**
 * Fake hosts as `Hosts | ConnectionPool | FakeHostControl`. Processes live in the layer's
 * scope; closing it interrupts them.
 *
 * @category layers
 */
export const layer = (
  specs: ReadonlyArray<FakeHostSpec>
): Layer.Layer<Hosts | ConnectionPool | FakeHostControl> => internal.layer(specs)

// ---- canned tools for probes and the simulator --------------------------------------------

/**
 * A GPU the fake `nvidia-smi` reports: the probe's own model. Without `computeCapability` it
 * behaves like an old driver that rejects the `compute_cap` field.
 *
 * @category models
 */
export type FakeGpu = Gpu

/** @category models */
export interface FakeGpuProcess {
  readonly pid: number
  readonly gpuUuid: string
  readonly usedMemoryMiB: number
}

/** A value fixed at registration, or read each time the tool runs. @category models */
export type Live<A> = A | Effect.Effect<A>

/**
 * `nvidia-smi` answering the `--query-gpu=...` and `--query-compute-apps=...` forms with
 * `--format=csv,noheader,nounits`, like the real tool (an unknown field → exit 2).
 *
 * @category programs
 */
export const nvidiaSmi = (
  gpus: Live<ReadonlyArray<FakeGpu>>,
  processes: Live<ReadonlyArray<FakeGpuProcess>> = []
): Program => tools.nvidiaSmi(gpus, processes)

/**
 * `ss -ltnp[H] ['sport = :PORT']` printing the host's listening ports table (with the
 * pid/name of the listening program).
 *
 * @category programs
 */
export const ss: Program = tools.ss

/**
 * `tar -x`, `rm` and `mv` as GNU tar and coreutils behave for what a host is sent (`Sync.push`'s
 * archives, `mlops rm`): the fake's built-ins have none of them. Register them with `programs`.
 *
 * @category programs
 */
export const fileTools: ReadonlyArray<Program> = syncPrograms

/** A program that prints nothing and never ends (until signalled). @category programs */
export const hang = (match: string | ((argv: ReadonlyArray<string>) => boolean)): Program => ({
  match,
  run: () => Effect.never
})
