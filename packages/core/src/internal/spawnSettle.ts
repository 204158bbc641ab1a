/**
 * Settling a detached start whose answer was lost (a timeout, a dropped connection): the
 * start script runs to its end whatever happens to the channel, and leaves its outcome in
 * the run directory. While `spawn.lock` exists the start is still running (or its spawner
 * died holding it); once it is gone, a `token` file holding this spawn's token means it got as
 * far as starting the supervisor, whose `pid`/`pgid` files follow within moments.
 *
 * @internal
 */
import { Clock, Duration, Effect } from "effect"
import type { Connection, DetachedInfo } from "../Connection.js"
import {
  type ConnectError,
  ProcessError,
  type RemoteFileError,
  type SpawnLocked,
  spawnLocked
} from "../Errors.js"
import * as RemoteFiles from "../RemoteFiles.js"

const POLL = Duration.millis(100)
/** Longer than the start script can take (its own wait for the pid files is 10 s). */
const WINDOW = Duration.seconds(15)

export type Settled =
  | { readonly _tag: "Started"; readonly info: DetachedInfo }
  | { readonly _tag: "NotStarted" }

const trimmed = (conn: Connection, path: string) =>
  Effect.map(RemoteFiles.readTextIfExists(conn, path), (text) => text?.trim())

export const settle = (
  conn: Connection,
  options: { readonly runDir: string; readonly logPath?: string; readonly token: string }
): Effect.Effect<Settled, ProcessError | SpawnLocked | RemoteFileError | ConnectError> =>
  Effect.gen(function* () {
    const dir = yield* conn.files.resolvePath(options.runDir.replace(/\/+$/, ""))
    const lock = `${dir}/spawn.lock`
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(WINDOW)
    for (;;) {
      const locked = (yield* conn.files.stat(lock)) !== undefined
      if (!locked) {
        if ((yield* trimmed(conn, `${dir}/token`)) !== options.token) return { _tag: "NotStarted" } as const
        const [pid, pgid, start] = yield* Effect.all(
          [trimmed(conn, `${dir}/pid`), trimmed(conn, `${dir}/pgid`), trimmed(conn, `${dir}/start`)],
          { concurrency: 3 }
        )
        if (pid && pgid) {
          const info: DetachedInfo = {
            pid: Number(pid),
            pgid: Number(pgid),
            runDir: dir,
            logPath:
              options.logPath === undefined ? `${dir}/log` : yield* conn.files.resolvePath(options.logPath),
            token: options.token,
            ...(start ? { startTime: start } : {})
          }
          return { _tag: "Started", info } as const
        }
      }
      if ((yield* Clock.currentTimeMillis) > deadline) {
        if (locked) {
          const holder = Number(yield* trimmed(conn, `${lock}/pid`))
          return yield* spawnLocked(conn.host.alias, dir, lock, Number.isInteger(holder) ? holder : undefined)
        }
        return yield* new ProcessError({
          host: conn.host.alias,
          runDir: dir,
          reason: `the start got as far as launching its supervisor, but no pid files appeared in ${Duration.format(WINDOW)}: look for a stray process with "ps -ef | grep ${dir}"`
        })
      }
      yield* Effect.sleep(POLL)
    }
  })
