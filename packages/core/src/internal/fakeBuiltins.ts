/**
 * The few programs every fake host has: what core's own modules run (sh, kill, ps, true,
 * false, cat, tail, sleep, echo, mkdir -p, test). Unknown programs exit 127 like a shell.
 *
 * @internal
 */
import { Duration, Effect } from "effect"
import type { ProcessInfo, Program, ProgramContext } from "../FakeProgram.js"
import { basename, normalizeSignal } from "./fakeProcesses.js"
import { shell } from "./fakeWrappers.js"

const program = (match: string, run: (ctx: ProgramContext) => Effect.Effect<number, unknown>): Program => ({
  match,
  run
})

/**
 * `kill [-s SIG | -SIG] [--] (pid | -pgid)...` as dash (Debian's /bin/sh) has it: a group
 * (negative) target needs `--`, and dash rejects `--` after the `-SIG` form, so only
 * `kill -s SIG -- -PGID` is portable. Exit 1 with "No such process" when a target is missing.
 */
const kill = program("kill", (ctx) =>
  Effect.gen(function* () {
    const args = ctx.argv.slice(1)
    let signal = "TERM"
    let rest = args
    if (args[0] === "-s") {
      signal = args[1] ?? ""
      rest = args.slice(2)
    } else if (args[0] !== undefined && args[0] !== "--" && /^-[A-Za-z0-9]+$/.test(args[0])) {
      signal = args[0].slice(1)
      rest = args.slice(1)
      if (rest[0] === "--") {
        yield* ctx.stderr.line("sh: 1: kill: Illegal number: -")
        return 2
      }
    }
    const afterDashes = rest[0] === "--"
    const targets = afterDashes ? rest.slice(1) : rest
    if (targets.length === 0 || signal === "") {
      yield* ctx.stderr.line(
        "kill: usage: kill [-s sigspec | -signum | -sigspec] [pid | job]... or kill -l [exitstatus]"
      )
      return 2
    }
    let status = 0
    for (const target of targets) {
      const n = Number(target)
      if (target.startsWith("-") && !afterDashes) {
        yield* ctx.stderr.line(`sh: 1: kill: Illegal option ${target.slice(0, 2)}`)
        return 2
      }
      if (!Number.isInteger(n) || n === 0) {
        yield* ctx.stderr.line(`sh: 1: kill: Illegal number: ${target}`)
        status = 1
        continue
      }
      const reached = yield* ctx.kill(n < 0 ? { pgid: -n } : { pid: n }, normalizeSignal(signal))
      if (reached === 0) {
        yield* ctx.stderr.line("sh: 1: kill: No such process")
        status = 1
      }
    }
    return status
  })
)

/** `ps` columns the fake knows, with how each prints a process. */
const PS_COLUMNS: Record<string, { readonly header: string; readonly value: (p: ProcessInfo) => string }> = {
  pid: { header: "PID", value: (p) => String(p.pid) },
  ppid: { header: "PPID", value: (p) => String(p.ppid) },
  pgid: { header: "PGID", value: (p) => String(p.pgid) },
  // The fake has no zombies: a process leaves the table when it ends.
  stat: { header: "STAT", value: () => "S" },
  args: { header: "COMMAND", value: (p) => p.argv.join(" ") },
  comm: { header: "COMMAND", value: (p) => basename(p.argv[0] ?? "") }
}

/**
 * `ps -A -o COL[=HEADER][,COL...] [-o ...]` over the host's process table (every process:
 * `-A`/`-e` are accepted and implied). The header line is left out when every header is
 * empty, as procps does. Unknown columns or options exit 1 like procps.
 */
const ps = program("ps", (ctx) =>
  Effect.gen(function* () {
    const columns: Array<{ readonly header: string; readonly value: (p: ProcessInfo) => string }> = []
    const args = ctx.argv.slice(1)
    for (let i = 0; i < args.length; i++) {
      const arg = args[i]!
      if (arg === "-A" || arg === "-e") continue
      if (arg !== "-o" || args[i + 1] === undefined) {
        yield* ctx.stderr.line(`error: unsupported option ${arg}`)
        return 1
      }
      for (const spec of args[++i]!.split(",")) {
        const [name = "", header] = spec.split("=", 2)
        const column = PS_COLUMNS[name]
        if (column === undefined) {
          yield* ctx.stderr.line(`error: unknown user-defined format specifier "${name}"`)
          return 1
        }
        columns.push({ header: header ?? column.header, value: column.value })
      }
    }
    if (columns.length === 0) columns.push(PS_COLUMNS.pid!, PS_COLUMNS.args!)
    if (columns.some((c) => c.header !== "")) yield* ctx.stdout.line(columns.map((c) => c.header).join(" "))
    for (const process of yield* ctx.processes) {
      yield* ctx.stdout.line(columns.map((c) => c.value(process)).join(" "))
    }
    return 0
  })
)

const cat = program("cat", (ctx) =>
  Effect.gen(function* () {
    const files = ctx.argv.slice(1).filter((a) => a !== "--")
    if (files.length === 0) {
      yield* ctx.stdout.write(ctx.stdin)
      return 0
    }
    let status = 0
    for (const file of files) {
      const data = yield* ctx.fs.read(file.startsWith("/") ? file : `${ctx.cwd}/${file}`)
      if (data === undefined) {
        yield* ctx.stderr.line(`cat: ${file}: No such file or directory`)
        status = 1
      } else yield* ctx.stdout.write(data)
    }
    return status
  })
)

/** The last `count` lines of `data` (a last line without its newline counts), or from line `count` with `+`. */
const lastLines = (data: Uint8Array, count: number, fromStart: boolean): Uint8Array => {
  const ends: Array<number> = []
  data.forEach((byte, i) => {
    if (byte === 10) ends.push(i + 1)
  })
  if (data.length > 0 && data[data.length - 1] !== 10) ends.push(data.length)
  const lines = ends.length
  const first = fromStart ? Math.max(0, count - 1) : Math.max(0, lines - count)
  if (first >= lines) return new Uint8Array()
  return data.subarray(first === 0 ? 0 : ends[first - 1]!)
}

/**
 * `tail [-n [+]N | -N] [FILE]`: the last N lines (10 by default) of one file or of stdin, as
 * coreutils prints them. Following, bytes, several files: exit 1 naming the option.
 */
const tail = program("tail", (ctx) =>
  Effect.gen(function* () {
    const args = ctx.argv.slice(1)
    let spec = "10"
    const files: Array<string> = []
    for (let i = 0; i < args.length; i++) {
      const arg = args[i]!
      if (arg === "-n") spec = args[++i] ?? ""
      else if (arg.startsWith("-n")) spec = arg.slice(2)
      else if (/^-\d+$/.test(arg)) spec = arg.slice(1)
      else if (arg === "--") {
        files.push(...args.slice(i + 1))
        break
      } else if (arg.startsWith("-") && arg !== "-") {
        yield* ctx.stderr.line(`tail: fake host: unsupported option ${arg}`)
        return 1
      } else files.push(arg)
    }
    const match = /^(\+?)(\d+)$/.exec(spec)
    if (match === null) {
      yield* ctx.stderr.line(`tail: invalid number of lines: '${spec}'`)
      return 1
    }
    if (files.length > 1) {
      yield* ctx.stderr.line("tail: fake host: several files are not modelled")
      return 1
    }
    const file = files[0]
    let data = ctx.stdin
    if (file !== undefined && file !== "-") {
      const read = yield* ctx.fs.read(file.startsWith("/") ? file : `${ctx.cwd}/${file}`)
      if (read === undefined) {
        yield* ctx.stderr.line(`tail: cannot open '${file}' for reading: No such file or directory`)
        return 1
      }
      data = read
    }
    yield* ctx.stdout.write(lastLines(data, Number(match[2]), match[1] === "+"))
    return 0
  })
)

const sleep = program("sleep", (ctx) =>
  Effect.gen(function* () {
    const arg = ctx.argv[1] ?? ""
    if (arg === "infinity") return yield* Effect.never
    const match = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(arg)
    if (match === null) {
      yield* ctx.stderr.line(`sleep: invalid time interval '${arg}'`)
      return 1
    }
    const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2] as "" | "s" | "m" | "h" | "d"]
    yield* Effect.sleep(Duration.millis(Number(match[1]) * unit * 1000))
    return 0
  })
)

const echo = program("echo", (ctx) => {
  const noNewline = ctx.argv[1] === "-n"
  const words = ctx.argv.slice(noNewline ? 2 : 1).join(" ")
  return Effect.as(ctx.stdout.write(noNewline ? words : `${words}\n`), 0)
})

const mkdir = program("mkdir", (ctx) =>
  Effect.gen(function* () {
    const parents = ctx.argv.includes("-p")
    // `-m MODE` (octal): the new directories' mode, as coreutils sets it
    const modeAt = ctx.argv.indexOf("-m")
    const mode = modeAt === -1 ? undefined : Number.parseInt(ctx.argv[modeAt + 1] ?? "", 8)
    let status = 0
    for (const [i, dir] of ctx.argv.entries()) {
      if (i === 0 || dir.startsWith("-") || (modeAt !== -1 && i === modeAt + 1)) continue
      const path = dir.startsWith("/") ? dir : `${ctx.cwd}/${dir}`
      const existing = yield* ctx.fs.stat(path)
      if (existing !== undefined && !parents) {
        yield* ctx.stderr.line(`mkdir: cannot create directory '${dir}': File exists`)
        status = 1
      } else if (existing === undefined)
        yield* ctx.fs.mkdir(path, mode === undefined || Number.isNaN(mode) ? undefined : { mode })
    }
    return status
  })
)

const test = program("test", (ctx) =>
  Effect.gen(function* () {
    const [flag, path] = [ctx.argv[1] ?? "", ctx.argv[2] ?? ""]
    const stat = yield* ctx.fs.stat(path.startsWith("/") ? path : `${ctx.cwd}/${path}`)
    switch (flag) {
      case "-e":
        return stat !== undefined ? 0 : 1
      case "-f":
        return stat !== undefined && !stat.isDirectory ? 0 : 1
      case "-d":
        return stat?.isDirectory === true ? 0 : 1
      case "-s":
        return stat !== undefined && stat.size > 0 ? 0 : 1
      default:
        yield* ctx.stderr.line(`test: unsupported operator ${flag}`)
        return 2
    }
  })
)

export const builtins: ReadonlyArray<Program> = [
  shell,
  kill,
  ps,
  cat,
  tail,
  sleep,
  echo,
  mkdir,
  test,
  program("true", () => Effect.succeed(0)),
  program("false", () => Effect.succeed(1))
]

/** What a shell does with an unknown command. */
export const notFound: Program = {
  match: () => true,
  run: (ctx) => Effect.as(ctx.stderr.line(`sh: 1: ${ctx.argv[0]}: not found`), 127)
}
