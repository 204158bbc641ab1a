/**
 * The fake host's `sh`: runs `sh -c SCRIPT [NAME ARGS...]` the way dash does, for the syntax
 * `fakeShellSyntax` accepts (lists, pipelines, `if`/`for`/`while`/`until`/`case`, groups,
 * subshells, functions, command substitution, parameter expansions, pathname expansion) with
 * dash's builtins (`fakeShellBuiltins`); everything else is a program of the host, started as
 * a child (or, with `exec`, in place of the shell: same pid). What the fake does not model is
 * refused by name (`sh: fake host: unsupported shell syntax: ...`, exit 2), before anything
 * runs when the parser finds it, else when the shell reaches it.
 *
 * The wrapper scripts mlops itself sends (`shellScripts.ts`) are recognised by their exact
 * text and run by their fake counterparts (`fakeWrappers.ts`), which do what the script does
 * with the same arguments and stdin.
 *
 * @internal
 */
import { Cause, Effect, Option } from "effect"
import { toBytes } from "./fakeFs.js"
import { basename, discard, type Stdio, type SystemContext, type SystemProgram } from "./fakeProcesses.js"
import { makeInterpreter } from "./fakeShellRun.js"
import { environmentOf, Input, type ShellState, stateOf } from "./fakeShellState.js"
import { parseLines, type Script, Unsupported } from "./fakeShellSyntax.js"

export { environmentOf, type ShellState, stateOf } from "./fakeShellState.js"

/** A known script's fake counterpart: gets the shell's context, `$0..$n` and stdio. */
export type Wrapper = (
  ctx: SystemContext,
  args: ReadonlyArray<string>,
  stdio: Stdio
) => Effect.Effect<number, unknown>

const line = (sink: Stdio["stderr"], text: string) => sink(toBytes(`${text}\n`))

const refusal = (error: Unsupported) => `sh: fake host: unsupported shell syntax: ${error.message}`

/** The `Unsupported` a cause holds, as a failure or a defect (pure code throws it). */
const unsupportedIn = (cause: Cause.Cause<unknown>): Option.Option<Unsupported> =>
  Cause.find(cause, (reason) => {
    const error = reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : undefined
    return error instanceof Unsupported ? Option.some(error) : Option.none()
  })

/** Run a parsed script in `state`; the shell's exit status. Unsupported syntax reached ends it (exit 2). */
export const runScript = (
  ctx: SystemContext,
  script: Script,
  state: ShellState,
  stdio: Stdio
): Effect.Effect<number, unknown> => execute(ctx, script, state, stdio, undefined)

/** Run `script`; when it does not `exit`, the shell's status, or what `atEnd` makes of it. */
const execute = (
  ctx: SystemContext,
  script: Script,
  state: ShellState,
  stdio: Stdio,
  atEnd: Effect.Effect<number> | undefined
): Effect.Effect<number, unknown> =>
  Effect.gen(function* () {
    const io = { input: new Input(stdio.stdin), stdout: stdio.stdout, stderr: stdio.stderr }
    const outcome = yield* makeInterpreter(ctx).runList(script, state, io)
    if (outcome._tag === "Exit") return outcome.code
    return atEnd === undefined ? state.status & 255 : yield* atEnd
  }).pipe(
    Effect.catchAllCause((cause) =>
      Option.match(unsupportedIn(cause), {
        onNone: () => Effect.failCause(cause),
        onSome: (error) => Effect.as(line(stdio.stderr, refusal(error)), 2)
      })
    )
  )

/** Parse and run `text` in `state`; syntax errors are dash's (exit 2), unsupported syntax is named. */
export const runText = (
  ctx: SystemContext,
  text: string,
  state: ShellState,
  stdio: Stdio
): Effect.Effect<number, unknown> =>
  Effect.suspend(() => {
    let parsed: ReturnType<typeof parseLines>
    try {
      parsed = parseLines(text)
    } catch (error) {
      if (error instanceof Unsupported) return Effect.as(line(stdio.stderr, refusal(error)), 2)
      throw error
    }
    const { script, error } = parsed
    if (error === undefined) return runScript(ctx, script, state, stdio)
    // dash runs the lines before a syntax error, then exits 2 with it (unless they exited first)
    const message = `${state.positional[0] ?? "sh"}: ${error.line ?? 1}: ${error.message}`
    return execute(ctx, script, state, stdio, Effect.as(line(stdio.stderr, message), 2))
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
