/**
 * One simple command of the fake shell, as dash runs it: its words expanded (command
 * substitutions run, fields split, pathnames expanded), redirections applied, then a special
 * builtin (its assignments stay), a function or a regular builtin (assignments only for its
 * duration), or a program of the host started as a child (assignments in its environment).
 * `exec` runs the program in place of the shell (same pid). A command that is only
 * assignments has the status of its last command substitution, else 0.
 *
 * @internal
 */
import { Effect } from "effect"
import { toBytes } from "./fakeFs.js"
import { type Stdio, type SystemContext, shellStatus } from "./fakeProcesses.js"
import { type Builtin, REGULAR_BUILTINS, SPECIAL_BUILTINS, UNMODELLED_BUILTINS } from "./fakeShellBuiltins.js"
import { resolveProgram } from "./fakeShellPath.js"
import { redirect } from "./fakeShellRedirect.js"
import {
  type Evaluator,
  environmentOf,
  errorPrefix,
  exitWith,
  NEXT,
  type Outcome,
  type ShellIo,
  type ShellState
} from "./fakeShellState.js"
import type { Command, SimpleCommand } from "./fakeShellSyntax.js"
import { WordExpander } from "./fakeShellWordExpansion.js"
import { Unsupported } from "./fakeShellWords.js"

const complain = (io: ShellIo, text: string) => io.stderr(toBytes(`${text}\n`))

const stdioOf = (io: ShellIo): Stdio => ({
  stdin: io.input.forProgram(),
  stdout: io.stdout,
  stderr: io.stderr
})

/** A status becomes the shell's `$?`; a jump goes up as is. */
const settle = (state: ShellState, result: number | Outcome): Outcome => {
  if (typeof result !== "number") return result
  state.status = result
  return NEXT
}

/** Run `body` with `assignments` set (and exported) only for its duration. */
const withAssignments = <A, E>(
  state: ShellState,
  assignments: ReadonlyArray<readonly [string, string]>,
  body: Effect.Effect<A, E>
): Effect.Effect<A, E> => {
  if (assignments.length === 0) return body
  return Effect.suspend(() => {
    const saved = assignments.map(([name]) => [name, state.vars.get(name), state.exported.has(name)] as const)
    for (const [name, value] of assignments) {
      state.vars.set(name, value)
      state.exported.add(name)
    }
    return Effect.ensuring(
      body,
      Effect.sync(() => {
        for (const [name, value, exported] of saved.reverse()) {
          if (value === undefined) state.vars.delete(name)
          else state.vars.set(name, value)
          if (!exported) state.exported.delete(name)
        }
      })
    )
  })
}

export const runSimple = (
  ctx: SystemContext,
  evaluator: Evaluator,
  command: SimpleCommand,
  state: ShellState,
  io: ShellIo
): Effect.Effect<Outcome, unknown> =>
  Effect.gen(function* () {
    const at = errorPrefix(state, command.line)
    const words = new WordExpander(ctx, evaluator, state, io)
    const fields = yield* words.fields(command.words)
    const redirects = yield* words.redirects(command.redirects)
    const assignments: Array<readonly [string, string]> = []
    for (const a of command.assignments) assignments.push([a.name, yield* words.assignment(a.value)])
    const target = yield* redirect(ctx, redirects, state.cwd, io, at)
    if (typeof target === "string") {
      yield* complain(io, target)
      state.status = 2
      return NEXT
    }
    if (fields.length === 0) {
      for (const [name, value] of assignments) state.vars.set(name, value)
      state.status = words.lastStatus ?? 0
      return NEXT
    }
    return yield* dispatch(ctx, evaluator, {
      fields,
      assignments,
      state,
      io: target,
      at,
      redirected: command.redirects.length > 0
    })
  })

interface Invocation {
  readonly fields: ReadonlyArray<string>
  readonly assignments: ReadonlyArray<readonly [string, string]>
  readonly state: ShellState
  readonly io: ShellIo
  readonly at: string
  readonly redirected: boolean
  /** `command NAME`: functions are skipped. */
  readonly skipFunctions?: boolean
}

const dispatch = (
  ctx: SystemContext,
  evaluator: Evaluator,
  run: Invocation
): Effect.Effect<Outcome, unknown> =>
  Effect.gen(function* () {
    const { state, io, at, assignments } = run
    const [name, ...args] = run.fields as [string, ...Array<string>]
    const call = (builtin: Builtin) =>
      Effect.map(builtin({ ctx, state, io, name, args, at }), (r) => settle(state, r))
    if (name === "command" && args[0] !== undefined && !args[0].startsWith("-")) {
      return yield* dispatch(ctx, evaluator, { ...run, fields: args, skipFunctions: true })
    }
    if (UNMODELLED_BUILTINS.has(name)) return yield* Effect.fail(new Unsupported(`builtin ${name}`))
    const special = SPECIAL_BUILTINS.get(name)
    if (special !== undefined || name === "exec") {
      for (const [key, value] of assignments) state.vars.set(key, value)
      if (special !== undefined) return yield* call(special)
      return yield* exec(ctx, run, args)
    }
    const body = run.skipFunctions === true ? undefined : state.functions.get(name)
    if (body !== undefined)
      return yield* withAssignments(state, assignments, callFunction(evaluator, body, args, run))
    const regular = REGULAR_BUILTINS.get(name)
    if (regular !== undefined) return yield* withAssignments(state, assignments, call(regular))
    const prefix: Record<string, string> = Object.fromEntries(assignments)
    const env = { ...environmentOf(state), ...prefix }
    const resolved = yield* resolveProgram(
      ctx,
      run.fields,
      env,
      state.cwd,
      prefix.PATH ?? state.vars.get("PATH")
    )
    if (resolved === undefined) {
      yield* complain(io, `${at} ${name}: not found`)
      state.status = 127
      return NEXT
    }
    const child = yield* ctx.startChild(
      resolved.spec,
      stdioOf(io),
      resolved.program === undefined ? {} : { program: resolved.program }
    )
    state.status = shellStatus(yield* child.exit)
    return NEXT
  })

/** `exec PROGRAM ARGS...`: the program replaces the shell (same pid); the shell's status is its. */
const exec = (ctx: SystemContext, run: Invocation, args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { state, io, at } = run
    if (args.length === 0) {
      // redirections of the shell's own files would outlive this command: not modelled
      if (run.redirected) return yield* Effect.fail(new Unsupported("exec with only redirections"))
      state.status = 0
      return NEXT
    }
    const env = { ...environmentOf(state), ...Object.fromEntries(run.assignments) }
    const resolved = yield* resolveProgram(ctx, args, env, state.cwd, state.vars.get("PATH"))
    if (resolved === undefined) {
      yield* complain(io, `${at} exec: ${args[0]}: not found`)
      return exitWith(127)
    }
    if (state.subshell) {
      // a real subshell is a process of its own that `exec` replaces: here, a child, then its end
      const child = yield* ctx.startChild(
        resolved.spec,
        stdioOf(io),
        resolved.program === undefined ? {} : { program: resolved.program }
      )
      return exitWith(shellStatus(yield* child.exit))
    }
    return exitWith(yield* ctx.exec(resolved.spec, stdioOf(io), resolved.program))
  })

/** A function call: its own positional parameters (`$0` kept), `return` ends it, loops outside do not count. */
const callFunction = (evaluator: Evaluator, body: Command, args: ReadonlyArray<string>, run: Invocation) =>
  Effect.gen(function* () {
    const { state } = run
    const saved = { positional: state.positional, loops: state.loops, inFunction: state.inFunction }
    state.positional = [state.positional[0] ?? "sh", ...args]
    state.loops = 0
    state.inFunction = true
    const outcome = yield* Effect.ensuring(
      evaluator.runCommand(body, state, run.io),
      Effect.sync(() => Object.assign(state, saved))
    )
    return outcome._tag === "Return" ? NEXT : outcome
  })
