/**
 * Starting detached processes and reading their run directories back (`RemoteProcess`'s
 * constructors): the token each start is named by, settling a start whose answer was lost.
 *
 * @internal
 */
import { randomBytes } from "node:crypto"
import { Effect, type Schedule } from "effect"
import type { Connection, DetachedInfo, DetachedOptions } from "../Connection.js"
import { ConnectionPool, defaultReconnect, type GetError, isTransient } from "../ConnectionPool.js"
import { type ConnectError, ProcessError, type RemoteFileError, type SpawnError } from "../Errors.js"
import type * as RemoteCommand from "../RemoteCommand.js"
import * as RemoteFiles from "../RemoteFiles.js"
import type { DetachedProcess } from "../RemoteProcess.js"
import { settle } from "./spawnSettle.js"

const newToken = () => randomBytes(8).toString("hex")

const withHost = (conn: Connection, info: DetachedInfo): DetachedProcess => ({
  ...info,
  host: conn.host.alias
})

export const spawnDetached = Effect.fn("RemoteProcess.spawnDetached")(function* (
  conn: Connection,
  command: RemoteCommand.RemoteCommand,
  options: DetachedOptions
): Effect.fn.Return<DetachedProcess, SpawnError | RemoteFileError> {
  yield* Effect.annotateCurrentSpan({ host: conn.host.alias, runDir: options.runDir })
  const token = options.token ?? newToken()
  return yield* conn.spawnDetached(command, { ...options, token }).pipe(
    Effect.map((info) => withHost(conn, info)),
    Effect.catchTag("CommandTimeout", (timeout) =>
      Effect.flatMap(settle(conn, { ...options, token }), (settled) =>
        settled._tag === "Started" ? Effect.succeed(withHost(conn, settled.info)) : Effect.fail(timeout)
      )
    )
  )
})

export const spawn = Effect.fn("RemoteProcess.spawn")(function* (
  alias: string,
  command: RemoteCommand.RemoteCommand,
  options: DetachedOptions & { readonly reconnect?: Schedule.Schedule<unknown, unknown> }
) {
  yield* Effect.annotateCurrentSpan({ host: alias, runDir: options.runDir })
  const pool = yield* ConnectionPool
  const token = options.token ?? newToken()
  const detached = { ...options, token }
  let unsettled = false
  const attempt = Effect.gen(function* (): Effect.fn.Return<
    DetachedProcess,
    SpawnError | RemoteFileError | GetError,
    ConnectionPool
  > {
    const conn = yield* pool.get(alias)
    if (unsettled) {
      const settled = yield* settle(conn, detached)
      if (settled._tag === "Started") return withHost(conn, settled.info)
      unsettled = false
    }
    return yield* conn.spawnDetached(command, detached).pipe(
      Effect.map((info) => withHost(conn, info)),
      Effect.tapError((error) =>
        Effect.suspend(() => {
          if (error._tag === "CommandTimeout" || isTransient(error)) unsettled = true
          return isTransient(error) ? pool.invalidate(alias, conn) : Effect.void
        })
      )
    )
  })
  return yield* attempt.pipe(
    Effect.retry({
      schedule: options.reconnect ?? defaultReconnect,
      while: (error) => error._tag === "CommandTimeout" || isTransient(error)
    })
  )
})

export const attach = Effect.fn("RemoteProcess.attach")(function* (
  conn: Connection,
  runDir: string,
  options: { readonly logPath?: string } = {}
): Effect.fn.Return<DetachedProcess, ProcessError | RemoteFileError | ConnectError> {
  const dir = yield* conn.files.resolvePath(runDir)
  const text = (name: string) => RemoteFiles.readTextIfExists(conn, `${dir}/${name}`)
  const number = (name: string) =>
    Effect.flatMap(text(name), (content) => {
      const value = content === undefined ? Number.NaN : Number(content.trim())
      return Number.isInteger(value) && value > 0
        ? Effect.succeed(value)
        : Effect.fail(
            new ProcessError({
              host: conn.host.alias,
              runDir: dir,
              reason:
                content === undefined
                  ? `no ${name} file: the process was not started here or its run directory was removed`
                  : `unreadable ${name} file: ${JSON.stringify(content.slice(0, 40))}`
            })
          )
    })
  const [pid, pgid, token, start] = yield* Effect.all(
    [number("pid"), number("pgid"), text("token"), text("start")],
    {
      concurrency: 4
    }
  )
  const logPath =
    options.logPath === undefined ? `${dir}/log` : yield* conn.files.resolvePath(options.logPath)
  return {
    host: conn.host.alias,
    pid,
    pgid,
    runDir: dir,
    logPath,
    ...(token?.trim() ? { token: token.trim() } : {}),
    ...(start?.trim() ? { startTime: start.trim() } : {})
  } satisfies DetachedProcess
})
