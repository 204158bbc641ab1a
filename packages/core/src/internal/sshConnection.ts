/**
 * The live `Connection` on ssh2: commands under the lifeline wrapper and a channel budget,
 * detached processes, sftp files, and direct-tcpip forwards.
 *
 * @internal
 */

import type { Duplex } from "node:stream"
import { Deferred, Duration, Effect, type Scope, Stream } from "effect"
import type { Connection, DetachedInfo, ExecOptions } from "../Connection.js"
import { CommandTimeout, type ConnectError, ProcessError } from "../Errors.js"
import type { HostConfig } from "../HostConfig.js"
import * as RemoteCommand from "../RemoteCommand.js"
import * as Scripts from "./shellScripts.js"
import { collect, lines, openChannel, writeStdin } from "./sshChannels.js"
import { type ClientOptions, openClient } from "./sshClient.js"
import { forwardFailure, lost } from "./sshErrors.js"
import { makeFiles } from "./sshFiles.js"

export interface ConnectionOptions extends ClientOptions {
  /** Session channels open at once on this connection (sshd's MaxSessions is 10). Default 8. */
  readonly maxChannels?: number
  /** Default command timeout. Default 30 s. */
  readonly commandTimeout?: Duration.DurationInput
}

const stdinLength = (stdin: string | Uint8Array | undefined) =>
  stdin === undefined ? 0 : typeof stdin === "string" ? Buffer.byteLength(stdin, "utf8") : stdin.length

/** ssh2 duplexes lack the socket methods node:http calls on a connection. */
const asSocketLike = (stream: Duplex): Duplex => {
  const target = stream as Duplex & Record<string, unknown>
  for (const name of ["setKeepAlive", "setNoDelay", "setTimeout", "ref", "unref"]) {
    if (typeof target[name] !== "function") target[name] = () => stream
  }
  return stream
}

/** Open a connection to `host`; it is closed (with its jump hops) when the scope closes. */
export const make = (
  host: HostConfig,
  options: ConnectionOptions = {}
): Effect.Effect<Connection, ConnectError, Scope.Scope> =>
  Effect.gen(function* () {
    const { client, closed } = yield* openClient(host, options)
    const budget = yield* Effect.makeSemaphore(options.maxChannels ?? 8)
    const defaultTimeout = Duration.decode(options.commandTimeout ?? "30 seconds")
    const endpoint = { alias: host.alias }
    const files = yield* makeFiles(client, endpoint, budget, defaultTimeout)

    const timeoutOf = (execOptions: ExecOptions | undefined) =>
      execOptions?.timeout === undefined ? defaultTimeout : Duration.decode(execOptions.timeout)

    const timedOut = (description: string, timeout: Duration.Duration) =>
      new CommandTimeout({ host: host.alias, command: description, timeoutMs: Duration.toMillis(timeout) })

    /** Run one shell line (already rendered) under the lifeline, to completion. */
    const run = (line: string, description: string, execOptions: ExecOptions | undefined) => {
      const timeout = timeoutOf(execOptions)
      const wrapped = Scripts.lifeline(line, stdinLength(execOptions?.stdin))
      return budget
        .withPermits(1)(
          Effect.scoped(
            Effect.gen(function* () {
              const open = yield* openChannel(client, endpoint, wrapped)
              yield* writeStdin(open, execOptions?.stdin)
              return yield* collect(open, endpoint)
            })
          )
        )
        .pipe(
          // interruption runs the channel's release (EOF -> the remote group is killed) first
          Effect.timeoutFail({ duration: timeout, onTimeout: () => timedOut(description, timeout) })
        )
    }

    const exec: Connection["exec"] = Effect.fn("Connection.exec")(function* (command, execOptions) {
      return yield* run(RemoteCommand.render(command), RemoteCommand.describe(command), execOptions)
    })

    const stream: Connection["stream"] = (command, execOptions) => {
      const line = Scripts.lifeline(RemoteCommand.render(command), stdinLength(execOptions?.stdin))
      const output = Stream.unwrapScoped(
        Effect.gen(function* () {
          // waiting for a permit stays interruptible (acquireRelease would make it uninterruptible)
          yield* Effect.uninterruptibleMask((restore) =>
            Effect.zipRight(
              restore(budget.take(1)),
              Effect.addFinalizer(() => budget.release(1))
            )
          )
          const open = yield* openChannel(client, endpoint, line)
          yield* writeStdin(open, execOptions?.stdin)
          return lines(open, endpoint)
        })
      )
      // A stream runs until it ends or is interrupted; a timeout applies only when asked for.
      if (execOptions?.timeout === undefined) return output
      const timeout = Duration.decode(execOptions.timeout)
      return output.pipe(
        Stream.interruptWhen(
          Effect.sleep(timeout).pipe(
            Effect.zipRight(Effect.fail(timedOut(RemoteCommand.describe(command), timeout)))
          )
        )
      )
    }

    const spawnDetached: Connection["spawnDetached"] = Effect.fn("Connection.spawnDetached")(
      function* (command, detached) {
        const logPath = detached.logPath ?? `${detached.runDir.replace(/\/+$/, "")}/log`
        const line = Scripts.spawnDetached(RemoteCommand.render(command), detached.runDir, logPath)
        const result = yield* run(line, `start detached: ${RemoteCommand.describe(command)}`, undefined)
        const failed = (reason: string) =>
          new ProcessError({ host: host.alias, runDir: detached.runDir, reason })
        if (result.exitCode !== 0) {
          return yield* failed(
            `could not start: ${result.stderr.trim() || `exit ${result.exitCode ?? result.signal}`}`
          )
        }
        const [runDir, log, pid, pgid] = result.stdout.trim().split("\n")
        const info: DetachedInfo = {
          runDir: runDir ?? detached.runDir,
          logPath: log ?? logPath,
          pid: Number(pid),
          pgid: Number(pgid)
        }
        if (!Number.isInteger(info.pid) || !Number.isInteger(info.pgid)) {
          return yield* failed(`unexpected output from the start script: ${JSON.stringify(result.stdout)}`)
        }
        return info
      }
    )

    const forward: Connection["forward"] = (port) =>
      Effect.acquireRelease(
        Effect.async<Duplex, ConnectError | ReturnType<typeof forwardFailure>>((resume) => {
          let cancelled = false
          try {
            client.forwardOut("127.0.0.1", 0, "127.0.0.1", port, (error, channel) => {
              // opened after a timeout or interruption: nobody will release it but us
              if (cancelled) return error ? undefined : channel.destroy()
              if (error) resume(Effect.fail(forwardFailure(endpoint, port, error)))
              else resume(Effect.succeed(asSocketLike(channel)))
            })
          } catch (error) {
            resume(Effect.fail(lost(endpoint, error)))
          }
          return Effect.sync(() => {
            cancelled = true
          })
        }).pipe(
          Effect.timeoutFail({
            duration: defaultTimeout,
            onTimeout: () => forwardFailure(endpoint, port, new Error("no answer from sshd"))
          })
        ),
        (duplex) => Effect.sync(() => duplex.destroy())
      )

    return {
      host,
      exec,
      stream,
      spawnDetached,
      files,
      forward,
      closed: Deferred.await(closed)
    } satisfies Connection
  })
