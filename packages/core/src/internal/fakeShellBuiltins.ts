/**
 * The fake shell's builtins, as dash has them. Special builtins (their assignments stay, their
 * errors end the shell): `:`, `break`, `continue`, `exit`, `export`, `return`, `set --`,
 * `shift`, `unset` (and `exec`, run by `fakeShellSimple`). Regular builtins: `true`, `false`,
 * `cd`, `pwd`, `echo`, `printf`, `read`, `test`/`[`, `command -v`. dash's other builtins are
 * refused with `Unsupported` rather than looked up as programs.
 *
 * @internal
 */
import { Effect } from "effect"
import { decodeLossy, toBytes } from "./fakeFs.js"
import type { SystemContext } from "./fakeProcesses.js"
import { absolute, accessOf, searchPath } from "./fakeShellPath.js"
import { echo, printf } from "./fakeShellPrintf.js"
import { exitWith, type Outcome, type ShellIo, type ShellState } from "./fakeShellState.js"
import { runTest } from "./fakeShellTest.js"
import { Unsupported } from "./fakeShellWords.js"

export interface BuiltinCall {
  readonly ctx: SystemContext
  readonly state: ShellState
  readonly io: ShellIo
  readonly name: string
  readonly args: ReadonlyArray<string>
  /** dash's prefix of error messages: `$0: LINE:`. */
  readonly at: string
}

/** A status, or a jump (exit, return, break, continue). */
export type Builtin = (call: BuiltinCall) => Effect.Effect<number | Outcome, unknown>

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

const say = (sink: ShellIo["stdout"], text: string) => sink(toBytes(text))

const complain = (call: BuiltinCall, message: string, status: number) =>
  Effect.as(say(call.io.stderr, `${call.at} ${call.name}: ${message}\n`), status)

/** A count argument (`exit N`, `shift N`...): a number, or dash's "Illegal number" (the shell exits). */
const count = (call: BuiltinCall, fallback: number): number | Effect.Effect<Outcome> => {
  const arg = call.args[0]
  if (arg === undefined) return fallback
  if (/^\d+$/.test(arg)) return Number(arg)
  return Effect.as(complain(call, `Illegal number: ${arg}`, 2), exitWith(2))
}

const loopJump =
  (tag: "Break" | "Continue"): Builtin =>
  (call) => {
    const n = count(call, 1)
    if (typeof n !== "number") return n
    if (n === 0) return Effect.as(complain(call, "Illegal number: 0", 2), exitWith(2))
    // outside a loop (in this function) dash ignores them
    if (call.state.loops === 0) return Effect.succeed(0)
    call.state.status = 0
    return Effect.succeed<Outcome>({ _tag: tag, levels: Math.min(n, call.state.loops) })
  }

const setVariables: Builtin = (call) =>
  Effect.gen(function* () {
    const { state, name } = call
    for (const arg of call.args) {
      if (arg.startsWith("-")) throw new Unsupported(`${name} ${arg}`)
      const eq = arg.indexOf("=")
      const key = eq < 0 || name === "unset" ? arg : arg.slice(0, eq)
      if (!ENV_NAME.test(key)) {
        yield* complain(call, `${key}: bad variable name`, 2)
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
    return 0
  })

export const SPECIAL_BUILTINS: ReadonlyMap<string, Builtin> = new Map<string, Builtin>([
  [":", () => Effect.succeed(0)],
  ["break", loopJump("Break")],
  ["continue", loopJump("Continue")],
  [
    "exit",
    (call) => {
      const n = count(call, call.state.status)
      return typeof n === "number" ? Effect.succeed(exitWith(n & 255)) : n
    }
  ],
  [
    "return",
    (call) => {
      const n = count(call, call.state.status)
      if (typeof n !== "number") return n
      // dash keeps the number as given (`return 300` is $? 300); at the top it ends the shell
      call.state.status = n
      return Effect.succeed<Outcome>({ _tag: "Return" })
    }
  ],
  ["export", setVariables],
  ["unset", setVariables],
  [
    "shift",
    (call) => {
      const n = count(call, 1)
      if (typeof n !== "number") return n
      const [zero = "sh", ...rest] = call.state.positional
      if (n > rest.length) return Effect.as(complain(call, "can't shift that many", 2), exitWith(2))
      call.state.positional = [zero, ...rest.slice(n)]
      return Effect.succeed(0)
    }
  ],
  [
    "set",
    (call) => {
      const [first, ...rest] = call.args
      if (first === undefined || (first !== "--" && /^[-+]/.test(first)))
        throw new Unsupported(first === undefined ? "set without arguments" : `set ${first}`)
      call.state.positional = [call.state.positional[0] ?? "sh", ...(first === "--" ? rest : call.args)]
      return Effect.succeed(0)
    }
  ]
])

/** dash's builtins the fake does not model: refused, never run as a program of the same name. */
export const UNMODELLED_BUILTINS: ReadonlySet<string> = new Set(
  "alias bg eval fc fg getopts hash jobs local readonly times trap type ulimit umask unalias wait .".split(
    " "
  )
)

const KEYWORDS = new Set("! { } case do done elif else esac fi for if in then until while".split(" "))

/** What `command -v NAME` prints: the name of a keyword, builtin or function, or a path; undefined if none. */
const commandPath = (call: BuiltinCall, name: string): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    const { ctx, state } = call
    if (name.includes("/")) {
      const access = yield* accessOf(ctx, state.cwd, name)
      return access !== undefined && !access.isDirectory && access.executable ? name : undefined
    }
    if (KEYWORDS.has(name) || state.functions.has(name) || isBuiltin(name) || name === "kill") return name
    return yield* searchPath(ctx, name, state.vars.get("PATH"), state.cwd)
  })

/** `command -v NAME`: dash describes only the first name (127 when there is none). */
const commandV: Builtin = (call) =>
  Effect.gen(function* () {
    const [option, name] = call.args
    if (option !== "-v") throw new Unsupported(`command ${option ?? ""}`.trim())
    if (name === undefined) return 0
    const found = yield* commandPath(call, name)
    if (found === undefined) return 127
    yield* say(call.io.stdout, `${found}\n`)
    return 0
  })

/** `read [-r] NAME...`: one line of stdin split by IFS; status 1 at end of input without a newline. */
const read: Builtin = (call) =>
  Effect.gen(function* () {
    const args = [...call.args]
    let raw = false
    while (args[0]?.startsWith("-")) {
      const option = args.shift()!
      if (option === "--") break
      if (option !== "-r") throw new Unsupported(`read ${option}`)
      raw = true
    }
    if (args.length === 0) return yield* complain(call, "arg count", 2)
    const bad = args.find((n) => !ENV_NAME.test(n))
    if (bad !== undefined) return yield* complain(call, `${bad}: bad variable name`, 2)
    const { line, complete } = call.io.input.readLine()
    const text = decodeLossy(line)
    if (!raw && text.includes("\\")) throw new Unsupported("read without -r of a line holding a backslash")
    const values = splitForRead(text, args.length, call.state.vars.get("IFS") ?? " \t\n")
    for (const [k, name] of args.entries()) call.state.vars.set(name, values[k] ?? "")
    return complete ? 0 : 1
  })

/** `read`'s fields: IFS-split, the last name taking the rest; IFS blanks trimmed at both ends. */
const splitForRead = (text: string, names: number, ifs: string): Array<string> => {
  const isIfs = (c: string) => ifs.includes(c)
  const isBlank = (c: string) => isIfs(c) && " \t\n".includes(c)
  const values: Array<string> = []
  let i = 0
  while (i < text.length && isBlank(text[i]!)) i++
  while (values.length < names - 1 && i < text.length) {
    let j = i
    while (j < text.length && !isIfs(text[j]!)) j++
    values.push(text.slice(i, j))
    while (j < text.length && isBlank(text[j]!)) j++
    if (j < text.length && isIfs(text[j]!)) j++
    while (j < text.length && isBlank(text[j]!)) j++
    i = j
  }
  let end = text.length
  while (end > i && isBlank(text[end - 1]!)) end--
  values.push(text.slice(i, end))
  return values
}

export const REGULAR_BUILTINS: ReadonlyMap<string, Builtin> = new Map<string, Builtin>([
  ["true", () => Effect.succeed(0)],
  ["false", () => Effect.succeed(1)],
  [
    "cd",
    (call) =>
      Effect.gen(function* () {
        const { ctx, state } = call
        const target = call.args[0] ?? state.vars.get("HOME") ?? "/"
        if (target === "-") throw new Unsupported("cd -")
        const path = ctx.fs.resolve(absolute(target, state.cwd))
        if ((yield* ctx.fs.stat(path))?.isDirectory !== true)
          return yield* complain(call, `can't cd to ${target}`, 2)
        state.cwd = path
        return 0
      })
  ],
  ["pwd", (call) => Effect.as(say(call.io.stdout, `${call.state.cwd}\n`), 0)],
  ["echo", (call) => Effect.as(say(call.io.stdout, echo(call.args)), 0)],
  [
    "printf",
    (call) =>
      Effect.gen(function* () {
        const [format, ...args] = call.args
        if (format === undefined) return yield* complain(call, "usage: printf format [arg ...]", 2)
        const printed = printf(format, args)
        yield* say(call.io.stdout, printed.output)
        for (const error of printed.errors) yield* complain(call, error, 1)
        if (printed.invalid !== undefined) return yield* complain(call, printed.invalid, 2)
        return printed.errors.length > 0 ? 1 : 0
      })
  ],
  ["read", read],
  ["command", commandV],
  ...(["test", "["] as const).map((name): [string, Builtin] => [
    name,
    (call) =>
      Effect.gen(function* () {
        const result = yield* runTest(call.args, name === "[", (path) =>
          accessOf(call.ctx, call.state.cwd, path)
        )
        return "error" in result ? yield* complain(call, result.error, 2) : result.status
      })
  ])
])

export const isBuiltin = (name: string): boolean =>
  name === "exec" || SPECIAL_BUILTINS.has(name) || REGULAR_BUILTINS.has(name) || UNMODELLED_BUILTINS.has(name)
