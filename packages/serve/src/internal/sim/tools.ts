/**
 * Small POSIX tools the sim host needs beyond FakeHost's built-ins: `ls -1 DIR` (listing
 * deployments). `pgrep -g PGID` is deliberately absent (callers fall back to the pid).
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
