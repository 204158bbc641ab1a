/**
 * Running commands on a host by alias through the `ConnectionPool`: to completion, as a
 * must-succeed step, as a stream of lines, or several at once.
 *
 * A refused session channel (sshd's MaxSessions) is already retried by the live connection
 * for about 10 s before it surfaces as ChannelOpenFailed, so `run` does not retry again by
 * default; `channelRetries` adds more (the command never started, so retrying is safe). A lost
 * connection is never retried: the command may have run.
 *
 * @since 0.1.0
 */
import { Effect, Option, Schedule, Stream } from "effect"
import type { ExecOptions, ExecResult } from "./Connection.js"
import { ConnectionPool } from "./ConnectionPool.js"
import { type CommandError, CommandFailed, type ConfigFileError, type HostNotFound } from "./Errors.js"
import * as RemoteCommand from "./RemoteCommand.js"

/** @category models */
export type RunError = CommandError | HostNotFound | ConfigFileError

/** @category models */
export interface RunOptions extends ExecOptions {
  /** Extra retries after ChannelOpenFailed, on top of the connection's own (default 0; exponential from 100 ms, jittered). */
  readonly channelRetries?: number
}

const STDERR_TAIL_LINES = 20

const stderrTail = (stderr: string): string =>
  stderr.trimEnd().split("\n").slice(-STDERR_TAIL_LINES).join("\n")

const channelRetry = (retries: number) =>
  Schedule.exponential("100 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(retries)))

const execOptions = (options: RunOptions): ExecOptions => ({
  ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
  ...(options.stdin === undefined ? {} : { stdin: options.stdin })
})

/** Run to completion; a non-zero exit is a result, not an error. @category running */
export const run = Effect.fn("Command.run")(function* (
  alias: string,
  command: RemoteCommand.RemoteCommand,
  options: RunOptions = {}
): Effect.fn.Return<ExecResult, RunError, ConnectionPool> {
  yield* Effect.annotateCurrentSpan({ host: alias, command: RemoteCommand.describe(command) })
  const pool = yield* ConnectionPool
  return yield* Effect.flatMap(pool.get(alias), (conn) => conn.exec(command, execOptions(options))).pipe(
    Effect.retry({
      schedule: channelRetry(options.channelRetries ?? 0),
      while: (error) => error._tag === "ChannelOpenFailed"
    })
  )
})

/** The CommandFailed for a finished command that did not exit 0. @category errors */
export const failure = (
  alias: string,
  command: RemoteCommand.RemoteCommand,
  result: ExecResult
): CommandFailed =>
  new CommandFailed({
    host: alias,
    command: RemoteCommand.describe(command),
    exitCode: result.exitCode,
    signal: result.signal,
    stderr: stderrTail(result.stderr)
  })

/** Run and require exit 0; otherwise CommandFailed with the stderr tail. @category running */
export const runOrFail = (
  alias: string,
  command: RemoteCommand.RemoteCommand,
  options: RunOptions = {}
): Effect.Effect<ExecResult, RunError | CommandFailed, ConnectionPool> =>
  Effect.flatMap(run(alias, command, options), (result) =>
    result.exitCode === 0 ? Effect.succeed(result) : Effect.fail(failure(alias, command, result))
  )

/**
 * The command's stdout lines as they come. stderr is kept (its last lines) for the
 * CommandFailed the stream fails with when the command does not exit 0.
 *
 * @category running
 */
export const lines = (
  alias: string,
  command: RemoteCommand.RemoteCommand,
  options: ExecOptions = {}
): Stream.Stream<string, RunError | CommandFailed, ConnectionPool> =>
  Stream.unwrap(
    Effect.gen(function* () {
      const pool = yield* ConnectionPool
      const conn = yield* pool.get(alias)
      const stderr: Array<string> = []
      return conn.stream(command, options).pipe(
        Stream.tap((item) =>
          Effect.sync(() => {
            if (item._tag === "Output" && item.stream === "stderr") {
              stderr.push(item.line)
              if (stderr.length > STDERR_TAIL_LINES) stderr.shift()
            }
          })
        ),
        Stream.mapEffect((item) =>
          item._tag === "Exited" && item.exitCode !== 0
            ? Effect.fail(failure(alias, command, { ...item, stdout: "", stderr: stderr.join("\n") }))
            : Effect.succeed(item)
        ),
        Stream.filterMap((item) =>
          item._tag === "Output" && item.stream === "stdout" ? Option.some(item.line) : Option.none()
        )
      )
    })
  )

/**
 * Run several commands on one host, at most `concurrency` at a time (default 4, well under
 * sshd's default of 10 sessions per connection). Results keep the input order.
 *
 * @category running
 */
export const runAll = (
  alias: string,
  commands: Iterable<RemoteCommand.RemoteCommand>,
  options: RunOptions & { readonly concurrency?: number } = {}
): Effect.Effect<ReadonlyArray<ExecResult>, RunError, ConnectionPool> =>
  Effect.forEach(commands, (command) => run(alias, command, options), {
    concurrency: options.concurrency ?? 4
  })
