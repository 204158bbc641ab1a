/**
 * Redirections for the fake host's shell: `<file`, `>file`, `>>file`, `N>&M`, `N>&-`,
 * `/dev/null`, over the host's files and the process's stdio (fds 0, 1 and 2).
 *
 * @internal
 */
import { Effect } from "effect"
import { discard, type Stdio, type SystemContext } from "./fakeProcesses.js"
import { expandWord, type Parameters } from "./fakeShellExpand.js"
import type { Redirect } from "./fakeShellSyntax.js"

const absolute = (path: string, cwd: string) => (path.startsWith("/") ? path : `${cwd}/${path}`)

/** Apply redirections in order; a target that cannot be opened is `sh: 1: cannot ...` (exit 2). */
export const redirect = (
  ctx: SystemContext,
  redirects: ReadonlyArray<Redirect>,
  state: { readonly cwd: string },
  stdio: Stdio,
  params: Parameters,
  at: string
): Effect.Effect<Stdio | string> =>
  Effect.gen(function* () {
    const fds = new Map<number, (bytes: Uint8Array) => Effect.Effect<void>>([
      [1, stdio.stdout],
      [2, stdio.stderr]
    ])
    let stdin = stdio.stdin
    for (const r of redirects) {
      const fields = expandWord(r.target, params)
      if (fields.length !== 1) return `${at} ${fields.join(" ")}: ambiguous redirect`
      const target = fields[0]!
      if (r.op === ">&" || r.op === "<&") {
        if (target === "-") {
          if (r.fd === 0) stdin = new Uint8Array()
          else fds.set(r.fd, discard)
          continue
        }
        const from = Number(target)
        if (r.op === "<&" && r.fd === 0 && from === 0) continue
        const sink = fds.get(from)
        if (r.op === ">&" && sink !== undefined && (r.fd === 1 || r.fd === 2)) {
          fds.set(r.fd, sink)
          continue
        }
        return `${at} ${target}: Bad file descriptor`
      }
      if (target === "/dev/null") {
        if (r.op === "<") stdin = new Uint8Array()
        else fds.set(r.fd, discard)
        continue
      }
      const path = absolute(target, state.cwd)
      if (r.op === "<") {
        const data = yield* ctx.fs.read(path)
        if (data === undefined) return `${at} cannot open ${target}: No such file`
        stdin = data
        continue
      }
      if (r.fd !== 1 && r.fd !== 2)
        return `sh: fake host: unsupported shell syntax: redirection of fd ${r.fd}`
      const parent = yield* ctx.fs.stat(path.replace(/\/[^/]*$/, "") || "/")
      if (parent?.isDirectory !== true) return `${at} cannot create ${target}: Directory nonexistent`
      if (r.op === ">") yield* ctx.fs.write(path, "")
      else yield* ctx.fs.append(path, "")
      fds.set(r.fd, (bytes) => ctx.fs.append(path, bytes))
    }
    return { stdin, stdout: fds.get(1)!, stderr: fds.get(2)! }
  })
