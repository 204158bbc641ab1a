/**
 * The service boundary of @mlops/core: one open connection to one host. The live layer
 * implements it on ssh2; `FakeHost` implements it in memory. Everything above (commands,
 * detached processes, files, log following, probes, tunnels) is written against this
 * interface only, so it behaves the same on both.
 *
 * @since 0.1.0
 */

import type { Duplex } from "node:stream"
import type { Duration, Effect, Scope, Stream } from "effect"
import type {
  CommandError,
  ConnectError,
  ConnectionLost,
  ForwardFailed,
  RemoteFileError,
  SpawnError
} from "./Errors.js"
import type { HostConfig } from "./HostConfig.js"
import type { RemoteCommand } from "./RemoteCommand.js"

/** How a command ended. Exactly one of `exitCode` / `signal` is non-null. @category models */
export interface ExitStatus {
  readonly exitCode: number | null
  /** Signal name without `SIG` (`"KILL"`, `"TERM"`). */
  readonly signal: string | null
}

/** A command run to completion. Output is decoded as UTF-8 (lossily). @category models */
export interface ExecResult extends ExitStatus {
  readonly stdout: string
  readonly stderr: string
}

/** @category models */
export interface ExecOptions {
  /** Default: the connection's command timeout (30 s). On expiry the remote process group is killed. */
  readonly timeout?: Duration.DurationInput
  /** Written to the command's stdin, then EOF. */
  readonly stdin?: string | Uint8Array
}

/** One line of a streamed command's output, without its newline. @category models */
export interface OutputLine {
  readonly _tag: "Output"
  readonly stream: "stdout" | "stderr"
  readonly line: string
}

/** The last element of a command stream. @category models */
export interface Exited extends ExitStatus {
  readonly _tag: "Exited"
}

/**
 * What `spawnDetached` recorded. The run directory holds `pid` (the program's own pid: the
 * command line `exec`s it), `pgid` (its supervisor's group), `start` (the supervisor's start
 * time from `/proc/<pgid>/stat`, empty without /proc), `token`, and `exit` once it ended.
 *
 * @category models
 */
export interface DetachedInfo {
  readonly pid: number
  readonly pgid: number
  readonly runDir: string
  /** Where stdout and stderr go: a fresh file per spawn (the previous one is kept as `<log>.1`). */
  readonly logPath: string
  /** Names this spawn (the `token` file); absent for run directories of older mlops versions. */
  readonly token?: string
  /**
   * The group leader's start time (field 22 of `/proc/<pgid>/stat`): the group is still ours
   * while its leader's start time is this one. Absent where the host has no /proc.
   */
  readonly startTime?: string
}

/** @category models */
export interface DetachedOptions {
  /** Directory for the process's files (0700, created if missing). */
  readonly runDir: string
  /** Default `<runDir>/log`. */
  readonly logPath?: string
  /** Names this spawn, to settle a spawn whose answer was lost (default: random). */
  readonly token?: string
}

/** @category models */
export interface FileStat {
  readonly size: number
  /** Milliseconds since the epoch. */
  readonly mtimeMs: number
  readonly isDirectory: boolean
  /** Permission bits (`0o600`). */
  readonly mode: number
}

/** File operations over one reused sftp channel. Paths may start with `~/`. @category models */
export interface RemoteFs {
  /** `None`-like: resolves to `undefined` when the path does not exist. */
  readonly stat: (path: string) => Effect.Effect<FileStat | undefined, RemoteFileError | ConnectError>
  /** Read `length` bytes (default: to EOF) from `offset` (default 0). */
  readonly read: (
    path: string,
    options?: { readonly offset?: number; readonly length?: number }
  ) => Effect.Effect<Uint8Array, RemoteFileError | ConnectError>
  /**
   * Create or replace a file, creating parent directories (0700). The file gets `mode`,
   * default 0600 (an existing file is changed to it before its new content is written).
   */
  readonly write: (
    path: string,
    data: string | Uint8Array,
    options?: { readonly mode?: number }
  ) => Effect.Effect<void, RemoteFileError | ConnectError>
  /** `mkdir -p`; directories it creates are 0700 (existing ones are left as they are). */
  readonly mkdir: (path: string) => Effect.Effect<void, RemoteFileError | ConnectError>
  /** Expand `~/` against the remote home directory. */
  readonly resolvePath: (path: string) => Effect.Effect<string, RemoteFileError | ConnectError>
}

/** @category models */
export interface Connection {
  readonly host: HostConfig
  /** Run to completion. Both output streams are always drained. */
  readonly exec: (command: RemoteCommand, options?: ExecOptions) => Effect.Effect<ExecResult, CommandError>
  /**
   * Output lines while the command runs, then one `Exited` element, then the end.
   * Interrupting the stream (or the timeout) kills the remote process group.
   */
  readonly stream: (
    command: RemoteCommand,
    options?: ExecOptions
  ) => Stream.Stream<OutputLine | Exited, CommandError>
  /**
   * Start a process that outlives the connection: its own session and process group, stdin
   * from /dev/null, stdout+stderr to a fresh log, pid/pgid/start/token/exit recorded in
   * `runDir`. Atomic per run directory: while another spawn holds the lock it fails with
   * SpawnLocked, while an earlier process of the directory still runs with AlreadyRunning.
   * A CommandTimeout or ConnectionLost leaves the outcome unknown (see
   * `RemoteProcess.spawnDetached`, which settles it from the run directory).
   */
  readonly spawnDetached: (
    command: RemoteCommand,
    options: DetachedOptions
  ) => Effect.Effect<DetachedInfo, SpawnError>
  readonly files: RemoteFs
  /** A byte stream to `127.0.0.1:port` on the host (ssh direct-tcpip); closed with the scope. */
  readonly forward: (
    port: number,
    /** Where the host connects to; default its own loopback. A compute node behind a login node, for Slurm. */
    target?: string
  ) => Effect.Effect<Duplex, ForwardFailed | ConnectError, Scope.Scope>
  /** Completes with the reason when the connection drops. */
  readonly closed: Effect.Effect<ConnectionLost>
}
