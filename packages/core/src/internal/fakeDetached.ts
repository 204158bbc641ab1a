/**
 * A detached process with a run directory, as `spawnDetached` starts it on a fake host:
 * output appended to the log, `<runDir>/exit` written when it ends, `pid`/`pgid` files. Shared
 * by `spawnDetached` and `FakeHostHandle.start` (which can also restore a known pid).
 *
 * @internal
 */
import { Effect } from "effect"
import type { ChildProcess, FakeFs } from "../FakeProgram.js"
import type { RemoteCommand } from "../RemoteCommand.js"
import type { ProcessTable } from "./fakeProcesses.js"

export interface InRunDir {
  /** Absolute. */
  readonly runDir: string
  /** Absolute. */
  readonly logPath: string
  readonly pid?: number
  readonly pgid?: number
  readonly startedAtMs?: number
}

export const startInRunDir = (
  fs: FakeFs,
  table: ProcessTable,
  command: RemoteCommand,
  options: InRunDir
): Effect.Effect<ChildProcess & { readonly pgid: number }> =>
  Effect.gen(function* () {
    const { runDir, logPath } = options
    const toLog = (bytes: Uint8Array) => fs.append(logPath, bytes)
    yield* fs.append(logPath, "")
    const proc = yield* table.start(command, {
      io: { stdout: toLog, stderr: toLog },
      detached: true,
      runDir,
      logPath,
      ...(options.pid === undefined ? {} : { pid: options.pid }),
      ...(options.pgid === undefined ? {} : { pgid: options.pgid }),
      ...(options.startedAtMs === undefined ? {} : { startedAtMs: options.startedAtMs }),
      onExit: (status) =>
        fs.write(
          `${runDir}/exit`,
          status.signal !== null ? `signal ${status.signal}\n` : `code ${status.exitCode}\n`
        )
    })
    yield* fs.write(`${runDir}/pid`, `${proc.pid}\n`)
    yield* fs.write(`${runDir}/pgid`, `${proc.pgid}\n`)
    return proc
  })
