/**
 * `tar -x`, `rm`, `mv` and `find` for fake hosts, as GNU tar and coreutils behave for what `Sync.push`
 * sends (the fake's built-ins have neither): register them with `FakeHostSpec.programs`.
 *
 * - `tar -x[v] -f - [-m] [--no-same-owner]`: reads a ustar/pax archive from stdin (written
 *   here from the format, not with the writer's code) into the working directory: files and
 *   directories with the archive's permission bits; a file over an existing directory fails
 *   as GNU tar's does ("Cannot open: File exists"), a directory over a file replaces it.
 *   Symlinks cannot be stored by the fake file system: exit 2 naming the member.
 * - `rm [-f] [-r|-R] [--] PATH...`: a missing path is an error unless `-f`; a directory needs `-r`.
 * - `mv [-f] [--] FROM TO`: one file, replacing TO.
 * - `find PATH -printf FORMAT`: the entry and, for a directory, everything below it (names in
 *   sorted order), with `%y` (`d`/`f`), `%s`, `%T@`, `%m`, `%P` and the `\0 \t \n` escapes.
 *
 * @internal
 */
import { Effect } from "effect"
import type { FileStat } from "../../Connection.js"
import type { Program, ProgramContext } from "../../FakeProgram.js"

const absolute = (ctx: ProgramContext, path: string) =>
  ctx.fs.resolve(path.startsWith("/") ? path : `${ctx.cwd}/${path}`)

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

/** A NUL-terminated field. */
const field = (block: Uint8Array, offset: number, width: number): string => {
  const slice = block.subarray(offset, offset + width)
  const end = slice.indexOf(0)
  return text(end < 0 ? slice : slice.subarray(0, end))
}

const numeric = (block: Uint8Array, offset: number, width: number): number =>
  Number.parseInt(field(block, offset, width).trim() || "0", 8)

/** pax records `<len> key=value\n`. */
const paxRecords = (data: Uint8Array): Map<string, string> => {
  const records = new Map<string, string>()
  let at = 0
  while (at < data.length) {
    const space = data.indexOf(0x20, at)
    if (space < 0) break
    const length = Number(text(data.subarray(at, space)))
    if (!Number.isInteger(length) || length <= 0) break
    const record = text(data.subarray(space + 1, at + length - 1))
    const eq = record.indexOf("=")
    if (eq > 0) records.set(record.slice(0, eq), record.slice(eq + 1))
    at += length
  }
  return records
}

const tar: Program = {
  match: "tar",
  run: (ctx) =>
    Effect.gen(function* () {
      const args = ctx.argv.slice(1)
      const flags = args.filter((a) => /^-?[xvfm]+$/.test(a)).join("")
      const fileArg = args[args.findIndex((a) => /^-?[xvm]*f$/.test(a)) + 1]
      const unknown = args.filter((a) => a.startsWith("--") && a !== "--no-same-owner")
      if (!flags.includes("x") || fileArg !== "-" || unknown.length > 0) {
        yield* ctx.stderr.line(`tar: fake host: only 'tar -x -f - [-m] [--no-same-owner]' is modelled`)
        return 2
      }
      const input = ctx.stdin
      let at = 0
      let pax = new Map<string, string>()
      let zeroBlocks = 0
      while (at + 512 <= input.length) {
        const block = input.subarray(at, at + 512)
        at += 512
        if (block.every((b) => b === 0)) {
          if (++zeroBlocks === 2) return 0
          continue
        }
        zeroBlocks = 0
        let sum = 0
        block.forEach((b, i) => {
          sum += i >= 148 && i < 156 ? 32 : b
        })
        if (sum !== numeric(block, 148, 8) || field(block, 257, 6) !== "ustar") {
          yield* ctx.stderr.line("tar: This does not look like a tar archive")
          return 2
        }
        const size = numeric(block, 124, 12)
        const data = input.subarray(at, at + size)
        if (data.length < size) {
          yield* ctx.stderr.line("tar: Unexpected EOF in archive")
          return 2
        }
        at += Math.ceil(size / 512) * 512
        const type = field(block, 156, 1) || "0"
        if (type === "x") {
          pax = paxRecords(data)
          continue
        }
        if (type === "g") continue
        const prefix = field(block, 345, 155)
        const name = pax.get("path") ?? (prefix === "" ? "" : `${prefix}/`) + field(block, 0, 100)
        const mode = numeric(block, 100, 8) & 0o7777
        pax = new Map()
        const path = absolute(ctx, name.replace(/\/+$/, ""))
        const existing = yield* ctx.fs.stat(path)
        if (type === "5") {
          if (existing !== undefined && !existing.isDirectory) yield* ctx.fs.remove(path)
          yield* ctx.fs.mkdir(path, { mode })
        } else if (type === "0") {
          if (existing?.isDirectory === true) {
            yield* ctx.stderr.line(`tar: ${name}: Cannot open: File exists`)
            return 2
          }
          // GNU tar unlinks an existing file first: the new one gets the archive's mode
          yield* ctx.fs.remove(path)
          yield* ctx.fs.write(path, data, { mode })
        } else {
          yield* ctx.stderr.line(`tar: fake host: ${name}: member type '${type}' is not modelled`)
          return 2
        }
      }
      yield* ctx.stderr.line("tar: Unexpected EOF in archive")
      return 2
    })
}

const options = (argv: ReadonlyArray<string>) => {
  const flags = new Set<string>()
  const operands: Array<string> = []
  let rest = false
  for (const arg of argv.slice(1)) {
    if (!rest && arg === "--") rest = true
    else if (!rest && arg.startsWith("-") && arg.length > 1) for (const c of arg.slice(1)) flags.add(c)
    else operands.push(arg)
  }
  return { flags, operands }
}

const rm: Program = {
  match: "rm",
  run: (ctx) =>
    Effect.gen(function* () {
      const { flags, operands } = options(ctx.argv)
      const force = flags.has("f")
      const recursive = flags.has("r") || flags.has("R")
      let status = 0
      for (const operand of operands) {
        const path = absolute(ctx, operand)
        const stat = yield* ctx.fs.stat(path)
        if (stat === undefined) {
          if (!force) {
            yield* ctx.stderr.line(`rm: cannot remove '${operand}': No such file or directory`)
            status = 1
          }
        } else if (stat.isDirectory && !recursive) {
          yield* ctx.stderr.line(`rm: cannot remove '${operand}': Is a directory`)
          status = 1
        } else yield* ctx.fs.remove(path)
      }
      return status
    })
}

const mv: Program = {
  match: "mv",
  run: (ctx) =>
    Effect.gen(function* () {
      const { operands } = options(ctx.argv)
      const [from, to] = operands
      if (from === undefined || to === undefined || operands.length > 2) {
        yield* ctx.stderr.line("mv: fake host: only 'mv [-f] FROM TO' of one file is modelled")
        return 1
      }
      if (!(yield* ctx.fs.rename(absolute(ctx, from), absolute(ctx, to)))) {
        yield* ctx.stderr.line(`mv: cannot stat '${from}': No such file or directory`)
        return 1
      }
      return 0
    })
}

/** GNU find's `-printf` directives and escapes that `Pull.pull` uses, for one entry. */
const printf = (format: string, entry: { readonly stat: FileStat; readonly relative: string }): string =>
  format.replace(/%T@|%[ysmP%]|\\[0tn\\]/g, (directive) => {
    switch (directive) {
      case "%y":
        return entry.stat.isDirectory ? "d" : "f"
      case "%s":
        return String(entry.stat.isDirectory ? 4096 : entry.stat.size)
      case "%T@":
        return (entry.stat.mtimeMs / 1000).toFixed(10)
      case "%m":
        return (entry.stat.mode & 0o7777).toString(8)
      case "%P":
        return entry.relative
      case "%%":
        return "%"
      case "\\0":
        return "\0"
      case "\\t":
        return "\t"
      case "\\n":
        return "\n"
      default:
        return "\\"
    }
  })

const find: Program = {
  match: "find",
  run: (ctx) =>
    Effect.gen(function* () {
      const [, start, action, format, ...extra] = ctx.argv
      if (start === undefined || action !== "-printf" || format === undefined || extra.length > 0) {
        yield* ctx.stderr.line("find: fake host: only 'find PATH -printf FORMAT' is modelled")
        return 1
      }
      const root = absolute(ctx, start)
      const visit = (at: string, relative: string): Effect.Effect<void> =>
        Effect.gen(function* () {
          const stat = yield* ctx.fs.stat(at)
          if (stat === undefined) return
          yield* ctx.stdout.write(printf(format, { stat, relative }))
          if (!stat.isDirectory) return
          for (const name of (yield* ctx.fs.readDirectory(at)) ?? [])
            yield* visit(`${at}/${name}`, relative === "" ? name : `${relative}/${name}`)
        })
      if ((yield* ctx.fs.stat(root)) === undefined) {
        yield* ctx.stderr.line(`find: '${start}': No such file or directory`)
        return 1
      }
      yield* visit(root, "")
      return 0
    })
}

/** The programs `Sync.push` and `Pull.pull` need beyond the fake host's built-ins. */
export const syncPrograms: ReadonlyArray<Program> = [tar, rm, mv, find]
