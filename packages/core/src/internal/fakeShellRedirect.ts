/**
 * Redirections for the fake host's shell: `<file`, `>file`, `>>file`, `N>&M`, `N>&-`, `<&-`,
 * `/dev/null`, over the host's files and the shell's stdin and outputs (fds 0, 1 and 2).
 * Targets arrive expanded (as dash does: no field splitting, no pathname expansion).
 *
 * @internal
 */
import { Effect } from "effect"
import { discard, type SystemContext } from "./fakeProcesses.js"
import { absolute } from "./fakeShellPath.js"
import { Input, type ShellIo, type Sink } from "./fakeShellState.js"
import type { Redirect } from "./fakeShellSyntax.js"
import { Unsupported } from "./fakeShellWords.js"

/** A redirection with its target expanded. */
export interface ExpandedRedirect {
  readonly fd: number
  readonly op: Redirect["op"]
  readonly target: string
}

const EMPTY = new Uint8Array()

/**
 * Apply redirections in order; a target that cannot be opened is dash's message (the command
 * then does not run, status 2). What the fake cannot do fails with `Unsupported`.
 */
export const redirect = (
  ctx: SystemContext,
  redirects: ReadonlyArray<ExpandedRedirect>,
  cwd: string,
  io: ShellIo,
  at: string
): Effect.Effect<ShellIo | string, Unsupported> =>
  Effect.gen(function* () {
    const fds = new Map<number, Sink>([
      [1, io.stdout],
      [2, io.stderr]
    ])
    let input = io.input
    for (const r of redirects) {
      const target = r.target
      if (r.op === ">&" || r.op === "<&") {
        if (target === "-") {
          if (r.fd === 0) input = new Input(EMPTY)
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
        if (/^\d+$/.test(target) && Number(target) > 2)
          return yield* Effect.fail(new Unsupported(`redirection of fd ${target}`))
        return `${at} ${target}: Bad file descriptor`
      }
      if (r.fd > 2 || (r.op === "<" && r.fd !== 0) || (r.op !== "<" && r.fd === 0))
        return yield* Effect.fail(new Unsupported(`redirection of fd ${r.fd}`))
      if (target === "/dev/null") {
        if (r.op === "<") input = new Input(EMPTY)
        else fds.set(r.fd, discard)
        continue
      }
      const path = absolute(target, cwd)
      if (r.op === "<") {
        const data = yield* ctx.fs.read(path)
        if (data === undefined) return `${at} cannot open ${target}: No such file`
        input = new Input(data)
        continue
      }
      const parent = yield* ctx.fs.stat(path.replace(/\/[^/]*$/, "") || "/")
      if (parent?.isDirectory !== true) return `${at} cannot create ${target}: Directory nonexistent`
      if ((yield* ctx.fs.stat(path))?.isDirectory === true)
        return `${at} cannot create ${target}: Is a directory`
      if (r.op === ">") yield* ctx.fs.write(path, "")
      else yield* ctx.fs.append(path, "")
      fds.set(r.fd, (bytes) => ctx.fs.append(path, bytes))
    }
    return { input, stdout: fds.get(1)!, stderr: fds.get(2)! }
  })
