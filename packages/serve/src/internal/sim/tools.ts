/**
 * Small POSIX tools the sim host needs beyond FakeHost's built-ins and file tools: `ls -1 DIR`
 * (listing deployments), `cp -a SRC DST` (a job's synced code). `pgrep -g PGID` is deliberately absent (callers fall back to the pid).
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import { Effect } from "effect"

/** `ls [-1] [-A] [--] DIR`: the names of the entries directly under DIR, sorted. */
export const ls: FakeHost.Program = {
  match: "ls",
  run: (ctx) =>
    Effect.gen(function* () {
      const operands = ctx.argv.slice(1).filter((arg) => arg === "" || !arg.startsWith("-"))
      const target = ctx.fs.resolve(operands[0] ?? ctx.cwd)
      const stat = yield* ctx.fs.stat(target)
      if (stat === undefined) {
        yield* ctx.stderr.line(`ls: cannot access '${operands[0] ?? "."}': No such file or directory`)
        return 2
      }
      if (!stat.isDirectory) {
        yield* ctx.stdout.line(operands[0] ?? target)
        return 0
      }
      const prefix = target.endsWith("/") ? target : `${target}/`
      const entries = new Set<string>()
      for (const path of yield* ctx.fs.listFiles) {
        if (path.startsWith(prefix)) entries.add(path.slice(prefix.length).split("/")[0]!)
      }
      for (const entry of [...entries].filter((e) => e !== "").sort()) yield* ctx.stdout.line(entry)
      return 0
    })
}

/**
 * `cp -a [--] SRC DST` as coreutils does it for a tree: DST made a copy of SRC (into DST/SRC's
 * name when DST is a directory), modes kept; a job's synced code is snapshot this way.
 */
export const cp: FakeHost.Program = {
  match: "cp",
  run: (ctx) =>
    Effect.gen(function* () {
      const words = ctx.argv.slice(1)
      const end = words.indexOf("--")
      const flags = (end === -1 ? words.filter((w) => w.startsWith("-")) : words.slice(0, end)).join("")
      const paths = end === -1 ? words.filter((w) => !w.startsWith("-")) : words.slice(end + 1)
      if (paths.length !== 2 || !/[aR]/.test(flags)) {
        yield* ctx.stderr.line("cp: the sim copies one tree: cp -a SRC DST")
        return 1
      }
      const from = ctx.fs.resolve(paths[0]!.replace(/\/\.$/, ""))
      const source = yield* ctx.fs.stat(from)
      if (source === undefined) {
        yield* ctx.stderr.line(`cp: cannot stat '${paths[0]}': No such file or directory`)
        return 1
      }
      const target = yield* ctx.fs.stat(paths[1]!)
      const into = ctx.fs.resolve(
        target?.isDirectory === true && !paths[0]!.endsWith("/.")
          ? `${paths[1]}/${from.split("/").pop()}`
          : paths[1]!
      )
      yield* ctx.fs.mkdir(into, { mode: source.mode })
      for (const path of yield* ctx.fs.listFiles) {
        if (!path.startsWith(`${from}/`)) continue
        const stat = yield* ctx.fs.stat(path)
        const copy = `${into}/${path.slice(from.length + 1)}`
        if (stat?.isDirectory === true) yield* ctx.fs.mkdir(copy, { mode: stat.mode })
        else
          yield* ctx.fs.write(copy, (yield* ctx.fs.read(path)) ?? new Uint8Array(), {
            mode: stat?.mode ?? 0o644
          })
      }
      return 0
    })
}
