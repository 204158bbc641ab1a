/**
 * What a running fake shell holds: variables, functions, working directory, positional
 * parameters, the last status; its stdin and outputs; and how running a command ends
 * (`exit`, `return`, `break`, `continue`, or on to the next command).
 *
 * @internal
 */
import type { Effect } from "effect"
import type { Parameters } from "./fakeShellExpand.js"
import type { Command, Script } from "./fakeShellSyntax.js"
import { Unsupported } from "./fakeShellWords.js"

/** A shell's variables, functions, working directory and positional parameters. */
export interface ShellState {
  readonly vars: Map<string, string>
  readonly exported: Set<string>
  readonly functions: Map<string, Command>
  cwd: string
  /** `$0`, `$1`, ... */
  positional: ReadonlyArray<string>
  status: number
  /** How many loops enclose the running command (in this function): what `break` can leave. */
  loops: number
  /** Inside a function: `return` ends it (at the top, `return` ends the shell, as in dash). */
  inFunction: boolean
  /** A subshell runs in the shell's own process here: its `exec` must not replace the shell. */
  readonly subshell: boolean
}

/** A fresh shell state from a process's environment (every variable exported). */
export const stateOf = (
  env: Readonly<Record<string, string>>,
  cwd: string,
  positional: ReadonlyArray<string>
): ShellState => ({
  vars: new Map(Object.entries(env)),
  exported: new Set(Object.keys(env)),
  functions: new Map(),
  cwd,
  positional,
  status: 0,
  loops: 0,
  inFunction: false,
  subshell: false
})

/** A subshell's state (`( )`, `$( )`, a pipeline's side): a copy its commands cannot leak out of. */
export const subshellOf = (state: ShellState): ShellState => ({
  ...state,
  subshell: true,
  vars: new Map(state.vars),
  exported: new Set(state.exported),
  functions: new Map(state.functions)
})

/** The environment a child of this shell gets. */
export const environmentOf = (state: ShellState): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const name of state.exported) {
    const value = state.vars.get(name)
    if (value !== undefined) env[name] = value
  }
  return env
}

export const paramsOf = (state: ShellState, pid: number): Parameters => ({
  lookup: (name) => {
    if (name === "$") return String(pid)
    if (name === "?") return String(state.status)
    if (name === "#") return String(Math.max(0, state.positional.length - 1))
    if (/^\d+$/.test(name)) return state.positional[Number(name)]
    return state.vars.get(name)
  },
  positional: state.positional.slice(1)
})

export type Sink = (bytes: Uint8Array) => Effect.Effect<void>

/**
 * The shell's stdin: bytes and how far the shell's `read`s got. A program given it may read
 * any of it, and the fake cannot tell how much: a later `read` of the same input is refused.
 */
export class Input {
  private offset = 0
  private handedOut = false
  constructor(readonly data: Uint8Array) {}

  /** What a program gets: the bytes no `read` took. */
  forProgram(): Uint8Array {
    this.handedOut = true
    return this.data.subarray(this.offset)
  }

  /** One line for `read` (without its newline), and whether it ended with a newline. */
  readLine(): { readonly line: Uint8Array; readonly complete: boolean } {
    if (this.handedOut) throw new Unsupported("read after a program was given the same input")
    const rest = this.data.subarray(this.offset)
    const newline = rest.indexOf(10)
    const end = newline < 0 ? rest.length : newline
    this.offset += newline < 0 ? rest.length : newline + 1
    return { line: rest.subarray(0, end), complete: newline >= 0 }
  }
}

export interface ShellIo {
  readonly input: Input
  readonly stdout: Sink
  readonly stderr: Sink
}

/** How running a command ended: on to the next one, or a jump out of it. */
export type Outcome =
  | { readonly _tag: "Next" }
  | { readonly _tag: "Exit"; readonly code: number }
  | { readonly _tag: "Return" }
  | { readonly _tag: "Break"; readonly levels: number }
  | { readonly _tag: "Continue"; readonly levels: number }

export const NEXT: Outcome = { _tag: "Next" }
export const exitWith = (code: number): Outcome => ({ _tag: "Exit", code })

/** What running a simple command needs from the interpreter: subshells and function bodies. */
export interface Evaluator {
  /** A command substitution: its script run in a subshell, the output (trailing newlines removed) and status. */
  readonly substitute: (
    script: Script,
    state: ShellState,
    io: ShellIo
  ) => Effect.Effect<{ readonly output: string; readonly status: number }, unknown>
  /** A function's body, run in the caller's shell. */
  readonly runCommand: (command: Command, state: ShellState, io: ShellIo) => Effect.Effect<Outcome, unknown>
}

/** dash's prefix of a command's error messages: `$0: LINE:`. */
export const errorPrefix = (state: ShellState, line: number) => `${state.positional[0] ?? "sh"}: ${line}:`
