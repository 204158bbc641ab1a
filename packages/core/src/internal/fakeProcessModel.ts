/**
 * What a fake host's process table starts and hands out: the `execve` view of a process
 * (`ProcessSpec`), its stdio, start options, and the system context the shell and mlops'
 * wrapper counterparts run with.
 *
 * @internal
 */
import { Effect } from "effect"
import type { ExitStatus } from "../Connection.js"
import type { ChildProcess, Program, ProgramContext } from "../FakeProgram.js"
import { type RemoteCommand, render } from "../RemoteCommand.js"
import type { ProcessTable } from "./fakeProcesses.js"

/** What `execve` gets. */
export interface ProcessSpec {
  readonly argv: ReadonlyArray<string>
  /** The whole environment. */
  readonly env: Readonly<Record<string, string>>
  /** Absolute. */
  readonly cwd: string
}

/** Where a process's output goes, and what its stdin holds. */
export interface Stdio {
  readonly stdin: Uint8Array
  readonly stdout: (bytes: Uint8Array) => Effect.Effect<void>
  readonly stderr: (bytes: Uint8Array) => Effect.Effect<void>
}

/**
 * How a `RemoteCommand` started from inside the host (a program's child, a restored process)
 * runs: `sh -c <rendered line>` with the command's environment on top of `parent`'s, in
 * `parent`'s directory; the line's `cd` and `exec` do the rest, as on a real host.
 */
export const specOf = (
  command: RemoteCommand,
  parent: { readonly env: Readonly<Record<string, string>>; readonly cwd: string }
): ProcessSpec => ({
  argv: ["sh", "-c", render(command)],
  env: { ...parent.env, ...command.env },
  cwd: parent.cwd
})

/** Output that goes nowhere. */
export const discard = (): Effect.Effect<void> => Effect.void

export interface StartOptions {
  readonly stdio: Stdio
  /** Join this group; default: a new group led by the new pid. */
  readonly pgid?: number
  readonly ppid?: number
  readonly detached?: boolean
  /** Runs before the process leaves the table (e.g. write an `exit` file). */
  readonly onExit?: (status: ExitStatus) => Effect.Effect<void>
  /** Use this pid (it must be free); default: the next one. Later pids are allocated above it. */
  readonly pid?: number
  /** The start time the table reports; default: now. */
  readonly startedAtMs?: number
  /** Recorded in the process table (a detached process's run directory and log). */
  readonly runDir?: string
  readonly logPath?: string
  /** Run this instead of looking the program up by argv (internal wrappers). */
  readonly program?: Program
}

/** A started process: its pid, group, and its end. */
export interface Started extends ChildProcess {
  readonly pgid: number
}

/** What internal programs (the shell and mlops' wrapper scripts) may do beyond a program. */
export interface SystemContext extends ProgramContext {
  readonly stdio: Stdio
  readonly table: ProcessTable
  /**
   * Replace this process's program (execve): same pid and group, handlers reset. `program`
   * (found through PATH) runs instead of the one looked up by argv.
   */
  readonly exec: (spec: ProcessSpec, stdio: Stdio, program?: Program) => Effect.Effect<number, unknown>
  /**
   * A child of this process, in its group unless `pgid` or `newGroup` (then parented to init,
   * as after `setsid -f`).
   */
  readonly startChild: (
    spec: ProcessSpec,
    stdio: Stdio,
    options?: Omit<StartOptions, "stdio" | "ppid"> & { readonly newGroup?: boolean }
  ) => Effect.Effect<Started>
  /** End this process as killed by `signal` (a shell re-raising its child's death). */
  readonly raise: (signal: string) => Effect.Effect<never>
}

/** A program that needs the system context (the shell); `run` is never called for it. */
export interface SystemProgram extends Program {
  readonly runSystem: (ctx: SystemContext) => Effect.Effect<number, unknown>
}
