/**
 * Small POSIX tools the sim host needs beyond FakeHost's built-ins: `ls -1 DIR` (listing
 * deployments), `rm -rf DIR` (`mlops rm`). `pgrep -g PGID` is deliberately absent (callers fall back to the pid).
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

/** `rm [-r] [-f] [--] PATH...` as coreutils does it: a directory needs `-r`, a missing path `-f`. */
export const rm: FakeHost.Program = {
  match: "rm",
  run: (ctx) =>
    Effect.gen(function* () {
      const words = ctx.argv.slice(1)
      const end = words.indexOf("--")
      const flags = (end === -1 ? words.filter((w) => w.startsWith("-")) : words.slice(0, end)).join("")
      const paths = end === -1 ? words.filter((w) => !w.startsWith("-")) : words.slice(end + 1)
      const recursive = /[rR]/.test(flags)
      const force = flags.includes("f")
      let status = 0
      for (const path of paths) {
        const stat = yield* ctx.fs.stat(path)
        if (stat === undefined) {
          if (!force) {
            yield* ctx.stderr.line(`rm: cannot remove '${path}': No such file or directory`)
            status = 1
          }
        } else if (stat.isDirectory && !recursive) {
          yield* ctx.stderr.line(`rm: cannot remove '${path}': Is a directory`)
          status = 1
        } else {
          yield* ctx.fs.remove(path)
        }
      }
      return status
    })
}
