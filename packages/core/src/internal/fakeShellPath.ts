/**
 * Which program a command name runs on a fake host, and what `[ -x ]` and `command -v` see.
 *
 * A file is executable when it has an execute bit for the user (any bit for root), or when a
 * program of the host runs for its path: the fake runs programs by path without looking at
 * modes (a test's interpreter file is often written 0644), so `[ -x ]` says what running it
 * would do. PATH is searched as dash does, in the fake file system: the first executable
 * regular file `DIR/NAME`. That is what `command -v NAME` prints; a program the host runs by
 * name but that has no file on PATH (the built-in `cat`, a program registered by name only)
 * still runs when called by name, as before, but no PATH search finds it.
 *
 * @internal
 */
import { Effect } from "effect"
import type { Program } from "../FakeProgram.js"
import type { ProcessSpec, SystemContext } from "./fakeProcesses.js"
import type { FileAccess } from "./fakeShellTest.js"

export const absolute = (path: string, cwd: string) => (path.startsWith("/") ? path : `${cwd}/${path}`)

/** What the host's user may do with `path` (relative to `cwd`); undefined when nothing is there. */
export const accessOf = (
  ctx: SystemContext,
  cwd: string,
  path: string
): Effect.Effect<FileAccess | undefined> =>
  Effect.gen(function* () {
    const resolved = ctx.fs.resolve(absolute(path, cwd))
    const stat = yield* ctx.fs.stat(resolved)
    if (stat === undefined) return undefined
    const root = ctx.table.baseEnv.USER === "root"
    const bits = (owner: number) => (root ? true : (stat.mode & owner) !== 0)
    const executeBit = root ? (stat.mode & 0o111) !== 0 : (stat.mode & 0o100) !== 0
    return {
      isDirectory: stat.isDirectory,
      size: stat.size,
      readable: bits(0o400),
      writable: bits(0o200),
      executable: executeBit || (!stat.isDirectory && ctx.table.exists([resolved]))
    }
  })

/** dash's PATH search: the first `DIR/NAME` that is an executable regular file, as PATH spells it. */
export const searchPath = (
  ctx: SystemContext,
  name: string,
  path: string | undefined,
  cwd: string
): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    for (const dir of (path ?? "").split(":")) {
      const candidate = dir === "" ? name : `${dir.replace(/\/+$/, "")}/${name}`
      const access = yield* accessOf(ctx, cwd, candidate)
      if (access !== undefined && !access.isDirectory && access.executable) return candidate
    }
    return undefined
  })

/** What to start for `argv`: its spec, and the program when found through PATH (else looked up by argv). */
export interface Resolved {
  readonly spec: ProcessSpec
  readonly program?: Program
}

/**
 * The program `argv` runs, or undefined when there is none (`NAME: not found`). A name with a
 * `/` runs only if that file exists (`'~/x'` is a literal `~` directory under the working
 * directory, as on a real host); a bare name runs a program of the host registered for it,
 * else the program for the file PATH finds (keeping `argv[0]` as written, as `execvp` does).
 */
export const resolveProgram = (
  ctx: SystemContext,
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>,
  cwd: string,
  /** The shell's PATH for this command (an assignment prefix included). */
  path: string | undefined
): Effect.Effect<Resolved | undefined> =>
  Effect.gen(function* () {
    const name = argv[0]!
    const spec: ProcessSpec = { argv, env, cwd }
    if (name.includes("/")) {
      const stat = yield* ctx.fs.stat(ctx.fs.resolve(absolute(name, cwd)))
      return stat === undefined || stat.isDirectory ? undefined : { spec }
    }
    if (ctx.table.exists(argv)) return { spec }
    const found = yield* searchPath(ctx, name, path, cwd)
    if (found === undefined) return undefined
    const byPath = [ctx.fs.resolve(absolute(found, cwd)), ...argv.slice(1)]
    return ctx.table.exists(byPath) ? { spec, program: ctx.table.lookup(byPath) } : undefined
  })
