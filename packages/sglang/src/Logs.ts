/**
 * `logs`: a deployment's server log, the last n lines or followed live. Following resumes
 * across dropped connections at the last complete line (core's `LogTail`).
 *
 * @since 0.1.0
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as LogTail from "@mlops/core/LogTail"
import { Effect, Stream } from "effect"
import * as Deployment from "./Deployment.js"
import { DeploymentNotFound } from "./Stop.js"

const logPathOf = (host: string, name: string) =>
  Effect.gen(function* () {
    const pool = yield* ConnectionPool
    const conn = yield* pool.get(host)
    const state = yield* Deployment.read(conn, name)
    if (state === undefined)
      return yield* new DeploymentNotFound({ host, name, known: yield* Deployment.names(conn) })
    return state.logPath
  })

/**
 * The last `lines` lines (default 100).
 *
 * @category programs
 */
export const tail = Effect.fn("Logs.tail")(function* (
  host: string,
  name: string,
  options: { readonly lines?: number } = {}
) {
  const path = yield* logPathOf(host, name)
  return yield* LogTail.tail(host, path, { lines: options.lines ?? 100 })
})

/**
 * The last `lines` lines (default 10), then every new line as it is written, forever (end it
 * with Stream combinators or by interrupting).
 *
 * @category programs
 */
export const follow = (host: string, name: string, options: { readonly lines?: number } = {}) =>
  Stream.unwrap(
    Effect.gen(function* () {
      const path = yield* logPathOf(host, name)
      const last = yield* LogTail.tail(host, path, { lines: options.lines ?? 10 })
      // an empty tail (an empty log, or lines: 0 asked) follows from the start of the log
      const fromOffset = last.at(-1)?.nextOffset ?? 0
      return Stream.concat(Stream.fromIterable(last), LogTail.follow(host, path, { fromOffset }))
    })
  )
