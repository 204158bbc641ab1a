/**
 * The fake host's `sh`: runs `sh -c SCRIPT [NAME ARGS...]` the way dash does, for the syntax
 * `fakeShellSyntax` accepts. Builtins: `cd`, `export`, `unset`, `exec`, `exit`, `:`, `true`,
 * `false`; everything else is a program of the host, started as a child (or, with `exec`, in
 * place of the shell: same pid). A program named by a path runs only if that path exists
 * (`'~/x'` is a literal `~` directory under the working directory, as on a real host).
 *
 * The wrapper scripts mlops itself sends (`shellScripts.ts`) are recognised by their exact
 * text and run by their fake counterparts (`fakeWrappers.ts`), which do what the script does
 * with the same arguments and stdin.
 *
 * @internal
 */
import { Effect } from "effect"
import { toBytes } from "./fakeFs.js"
import {
  basename,
  discard,
  type ProcessSpec,
  type Stdio,
  type SystemContext,
  type SystemProgram,
  shellStatus
} from "./fakeProcesses.js"
import { expandValue, expandWord, type Parameters } from "./fakeShellExpand.js"
import { redirect } from "./fakeShellRedirect.js"
import { type AndOr, parse, type Script, type SimpleCommand } from "./fakeShellSyntax.js"

/** A shell's variables, working directory and positional parameters. */
export interface ShellState {
  readonly vars: Map<string, string>
  readonly exported: Set<string>
  cwd: string
  /** `$0`, `$1`, ... */
  readonly positional: ReadonlyArray<string>
  status: number
}

/** A fresh shell state from a process's environment (every variable exported). */
export const stateOf = (
  env: Readonly<Record<string, string>>,
  cwd: string,
  positional: ReadonlyArray<string>
): ShellState => ({
  vars: new Map(Object.entries(env)),
  exported: new Set(Object.keys(env)),
  cwd,
  positional,
  status: 0
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

/** The end of running a list: go on, or the shell exits (`exit`, `exec`, a fatal error). */
type Outcome = { readonly _tag: "Continue" } | { readonly _tag: "Exit"; readonly code: number }

const CONTINUE: Outcome = { _tag: "Continue" }
const exitWith = (code: number): Outcome => ({ _tag: "Exit", code })

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** A known script's fake counterpart: gets the shell's context, `$0..$n` and stdio. */
export type Wrapper = (
  ctx: SystemContext,
  args: ReadonlyArray<string>,
  stdio: Stdio
) => Effect.Effect<number, unknown>

const absolute = (path: string, cwd: string) => (path.startsWith("/") ? path : `${cwd}/${path}`)

const paramsOf = (state: ShellState, pid: number): Parameters => ({
  lookup: (name) => {
    if (name === "$") return String(pid)
    if (name === "?") return String(state.status)
    if (name === "#") return String(Math.max(0, state.positional.length - 1))
    if (/^\d+$/.test(name)) return state.positional[Number(name)]
    return state.vars.get(name)
  }
})

/** Run a parsed script in `state`; the shell's exit status. */
export const runScript = (
  ctx: SystemContext,
  script: Script,
  state: ShellState,
  stdio: Stdio
): Effect.Effect<number, unknown> =>
  Effect.gen(function* () {
    for (const list of script) {
      const outcome = yield* runAndOr(ctx, list, state, stdio)
      if (outcome._tag === "Exit") return outcome.code
    }
    return state.status
  })

const runAndOr = (ctx: SystemContext, list: AndOr, state: ShellState, stdio: Stdio) =>
  Effect.gen(function* () {
    const first = yield* runSimple(ctx, list.first, state, stdio)
    if (first._tag === "Exit") return first
    for (const { op, command } of list.rest) {
      if ((op === "&&") !== (state.status === 0)) continue
      const outcome = yield* runSimple(ctx, command, state, stdio)
      if (outcome._tag === "Exit") return outcome
    }
    return CONTINUE
  })

const line = (sink: Stdio["stderr"], text: string) => sink(toBytes(`${text}\n`))

const runSimple = (
  ctx: SystemContext,
  command: SimpleCommand,
  state: ShellState,
  stdio: Stdio
): Effect.Effect<Outcome, unknown> =>
  Effect.gen(function* () {
    const params = paramsOf(state, ctx.pid)
    // dash's messages: `$0: LINE: ...`
    const at = `${state.positional[0] ?? "sh"}: ${command.line}:`
    let fields: Array<string>
    let assignments: ReadonlyArray<readonly [string, string]>
    try {
      fields = command.words.flatMap((word) => expandWord(word, params))
      assignments = command.assignments.map((a) => [a.name, expandValue(a.value, params)] as const)
    } catch (error) {
      yield* line(stdio.stderr, `sh: fake host: unsupported shell syntax: ${(error as Error).message}`)
      return exitWith(2)
    }
    const io = yield* redirect(ctx, command.redirects, state, stdio, params, at)
    if (typeof io === "string") {
      yield* line(stdio.stderr, io)
      state.status = 2
      return CONTINUE
    }
    if (fields.length === 0) {
      for (const [name, value] of assignments) state.vars.set(name, value)
      state.status = 0
      return CONTINUE
    }
    const [name, ...args] = fields as [string, ...Array<string>]
    switch (name) {
      case ":":
      case "true":
        state.status = 0
        return CONTINUE
      case "false":
        state.status = 1
        return CONTINUE
      case "exit":
        return exitWith(args[0] === undefined ? state.status : Number(args[0]) & 255)
      case "cd": {
        const target = args[0] ?? state.vars.get("HOME") ?? "/"
        const path = ctx.fs.resolve(absolute(target, state.cwd))
        if ((yield* ctx.fs.stat(path))?.isDirectory !== true) {
          yield* line(io.stderr, `${at} cd: can't cd to ${target}`)
          state.status = 2
          return CONTINUE
        }
        state.cwd = path
        state.status = 0
        return CONTINUE
      }
      case "export":
      case "unset": {
        for (const arg of args) {
          const eq = arg.indexOf("=")
          const key = eq < 0 ? arg : arg.slice(0, eq)
          if (!ENV_NAME.test(key)) {
            yield* line(io.stderr, `${at} ${name}: ${key}: bad variable name`)
            return exitWith(2)
          }
          if (name === "unset") {
            state.vars.delete(key)
            state.exported.delete(key)
            continue
          }
          if (eq >= 0) state.vars.set(key, arg.slice(eq + 1))
          state.exported.add(key)
        }
        state.status = 0
        return CONTINUE
      }
      case "exec": {
        if (args.length === 0) {
          state.status = 0
          return CONTINUE
        }
        const spec = yield* programSpec(ctx, args, state, assignments)
        if (spec === undefined) {
          yield* line(io.stderr, `${at} exec: ${args[0]}: not found`)
          return exitWith(127)
        }
        return exitWith(yield* ctx.exec(spec, io))
      }
      default: {
        const spec = yield* programSpec(ctx, fields, state, assignments)
        if (spec === undefined) {
          yield* line(io.stderr, `${at} ${name}: not found`)
          state.status = 127
          return CONTINUE
        }
        const child = yield* ctx.startChild(spec, io)
        state.status = shellStatus(yield* child.exit)
        return CONTINUE
      }
    }
  })

/** The spec to run `argv` with, or undefined when there is no such program. */
const programSpec = (
  ctx: SystemContext,
  argv: ReadonlyArray<string>,
  state: ShellState,
  assignments: ReadonlyArray<readonly [string, string]>
): Effect.Effect<ProcessSpec | undefined> =>
  Effect.gen(function* () {
    const program = argv[0]!
    if (program.includes("/")) {
      const stat = yield* ctx.fs.stat(ctx.fs.resolve(absolute(program, state.cwd)))
      if (stat === undefined || stat.isDirectory) return undefined
    } else if (!ctx.table.exists(argv)) return undefined
    return { argv, env: { ...environmentOf(state), ...Object.fromEntries(assignments) }, cwd: state.cwd }
  })

/** Parse and run `text` in `state`; syntax errors are dash's (exit 2), unsupported syntax is named. */
export const runText = (
  ctx: SystemContext,
  text: string,
  state: ShellState,
  stdio: Stdio
): Effect.Effect<number, unknown> =>
  Effect.suspend(() => {
    let script: Script
    try {
      script = parse(text)
    } catch (error) {
      const e = error as Error & { readonly _tag?: string }
      const message =
        e._tag === "Unsupported"
          ? `sh: fake host: unsupported shell syntax: ${e.message}`
          : `${state.positional[0] ?? "sh"}: 1: ${e.message}`
      return Effect.as(line(stdio.stderr, message), 2)
    }
    return runScript(ctx, script, state, stdio)
  })

/**
 * Evaluate an environment script (`export NAME='value'` lines, as the wrappers get on stdin)
 * on top of `env`; the resulting environment, or the error text.
 */
export const evalEnvScript = (
  ctx: SystemContext,
  text: string,
  env: Readonly<Record<string, string>>
): Effect.Effect<Record<string, string> | string, unknown> =>
  Effect.gen(function* () {
    const errors: Array<Uint8Array> = []
    const state = stateOf(env, ctx.cwd, ["sh"])
    const status = yield* runText(ctx, text, state, {
      stdin: new Uint8Array(),
      stdout: discard,
      stderr: (bytes) => Effect.sync(() => void errors.push(bytes))
    })
    if (status !== 0) return new TextDecoder().decode(Buffer.concat(errors)) || `exit ${status}`
    return environmentOf(state)
  })

/**
 * `sh`, `/bin/sh`, `dash`: `-c SCRIPT [NAME ARGS...]` only. A script in `wrappers` (by exact
 * text) runs its counterpart instead of being interpreted.
 */
export const shellProgram = (wrappers: ReadonlyMap<string, Wrapper>): SystemProgram => ({
  match: (argv) => ["sh", "dash"].includes(basename(argv[0] ?? "")),
  run: () => Effect.dieMessage("the fake shell runs as a system program"),
  runSystem: (ctx) =>
    Effect.gen(function* () {
      const [, flag, script, ...rest] = ctx.argv
      if (flag !== "-c" || script === undefined) {
        yield* ctx.stderr.line(`sh: fake host: only "sh -c SCRIPT [NAME ARGS...]" is modelled`)
        return 2
      }
      const positional = [rest[0] ?? ctx.argv[0]!, ...rest.slice(1)]
      const wrapper = wrappers.get(script)
      if (wrapper !== undefined) return yield* wrapper(ctx, positional, ctx.stdio)
      return yield* runText(ctx, script, stateOf(ctx.env, ctx.cwd, positional), ctx.stdio)
    })
})
