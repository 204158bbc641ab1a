/**
 * `test` and `[` as dash runs them, by POSIX's rules on the number of arguments (up to four):
 * `!`, `( EXPR )`, the unary file operators `-e -f -d -r -w -x -s -h -L` and string operators
 * `-n -z`, the binary `= != -eq -ne -lt -le -gt -ge -a -o`. Longer expressions, and the
 * operators that need what a fake file system does not have (devices, pipes, sockets,
 * set-id bits, terminals, file times), are refused with `Unsupported`.
 *
 * @internal
 */
import { Effect } from "effect"
import { Unsupported } from "./fakeShellWords.js"

/** What `test` may ask about a path (undefined: nothing there). */
export interface FileAccess {
  readonly isDirectory: boolean
  readonly size: number
  readonly readable: boolean
  readonly writable: boolean
  readonly executable: boolean
}

export type AccessOf = (path: string) => Effect.Effect<FileAccess | undefined>

/** A test's status, or dash's message for a malformed one (status 2). */
export type TestResult = { readonly status: 0 | 1 } | { readonly error: string }

class Malformed extends Error {}

const UNARY_FILE = new Set(["-e", "-f", "-d", "-r", "-w", "-x", "-s", "-h", "-L"])
const UNARY = new Set([...UNARY_FILE, "-n", "-z"])
const UNMODELLED_UNARY = new Set(["-b", "-c", "-p", "-S", "-g", "-u", "-k", "-t", "-O", "-G"])
const INTEGER = new Set(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"])
const BINARY = new Set(["=", "!=", "-a", "-o", ...INTEGER])
const UNMODELLED_BINARY = new Set(["-nt", "-ot", "-ef", "<", ">", "=="])

const integer = (text: string): number => {
  if (!/^\s*[+-]?\d+\s*$/.test(text)) throw new Malformed(`Illegal number: ${text}`)
  return Number(text.trim())
}

const unary = (op: string, operand: string, access: AccessOf): Effect.Effect<boolean> => {
  if (op === "-n") return Effect.succeed(operand !== "")
  if (op === "-z") return Effect.succeed(operand === "")
  return Effect.map(access(operand), (file) => {
    if (file === undefined) return false
    switch (op) {
      case "-f":
        return !file.isDirectory
      case "-d":
        return file.isDirectory
      case "-r":
        return file.readable
      case "-w":
        return file.writable
      case "-x":
        return file.executable
      case "-s":
        return file.size > 0
      // the fake's file system has no symbolic links
      case "-h":
      case "-L":
        return false
      default:
        return true
    }
  })
}

const binary = (left: string, op: string, right: string): boolean => {
  switch (op) {
    case "=":
      return left === right
    case "!=":
      return left !== right
    case "-a":
      return left !== "" && right !== ""
    case "-o":
      return left !== "" || right !== ""
  }
  const [a, b] = [integer(left), integer(right)]
  switch (op) {
    case "-eq":
      return a === b
    case "-ne":
      return a !== b
    case "-lt":
      return a < b
    case "-le":
      return a <= b
    case "-gt":
      return a > b
    default:
      return a >= b
  }
}

const evaluate = (args: ReadonlyArray<string>, access: AccessOf): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const [a = "", b = "", c = "", d = ""] = args
    const refuseUnary = (op: string) => {
      if (UNMODELLED_UNARY.has(op)) throw new Unsupported(`test ${op}`)
    }
    switch (args.length) {
      case 0:
        return Effect.succeed(false)
      case 1:
        return Effect.succeed(a !== "")
      case 2:
        if (a === "!") return Effect.succeed(b === "")
        refuseUnary(a)
        if (UNARY.has(a)) return unary(a, b, access)
        throw new Malformed(`${a}: unexpected operator`)
      case 3:
        if (UNMODELLED_BINARY.has(b)) throw new Unsupported(`test ${b}`)
        if (BINARY.has(b)) return Effect.succeed(binary(a, b, c))
        if (a === "!") return Effect.map(evaluate([b, c], access), (x) => !x)
        if (a === "(" && c === ")") return Effect.succeed(b !== "")
        throw new Malformed(`${a}: unexpected operator`)
      case 4:
        if (a === "!") return Effect.map(evaluate([b, c, d], access), (x) => !x)
        if (a === "(" && d === ")") return evaluate([b, c], access)
        throw new Unsupported(`test with 4 arguments not starting with ! or (: ${args.join(" ")}`)
      default:
        throw new Unsupported(`test with more than 4 arguments: ${args.join(" ")}`)
    }
  })

/** `test ARGS...` or `[ ARGS... ]` (`bracket`: the last argument must be `]`). */
export const runTest = (
  args: ReadonlyArray<string>,
  bracket: boolean,
  access: AccessOf
): Effect.Effect<TestResult, Unsupported> => {
  if (bracket && args.at(-1) !== "]") return Effect.succeed({ error: "missing ]" })
  return evaluate(bracket ? args.slice(0, -1) : args, access).pipe(
    Effect.map((ok): TestResult => ({ status: ok ? 0 : 1 })),
    Effect.catchAllDefect((defect) =>
      defect instanceof Malformed
        ? Effect.succeed<TestResult>({ error: defect.message })
        : defect instanceof Unsupported
          ? Effect.fail(defect)
          : Effect.die(defect)
    )
  )
}
