/**
 * The live `Connection` on ssh2: commands under the lifeline wrapper and a channel budget
 * (through the connection's remote helper when it runs, else on exec channels), detached
 * processes, sftp files (as commands through the helper when sshd has no session left for
 * sftp), and direct-tcpip forwards.
 *
 * @internal
 */

import { randomBytes } from "node:crypto"
import type { Duplex } from "node:stream"
import { Deferred, Duration, Effect, type Scope, Stream } from "effect"
import type { Connection, ExecOptions } from "../Connection.js"
import { CommandTimeout, type ConnectError } from "../Errors.js"
import type { HostConfig } from "../HostConfig.js"
import * as RemoteCommand from "../RemoteCommand.js"
import { makeCommandFiles, sftpOrCommands } from "./commandFiles.js"
import * as HelperSockets from "./helperSockets.js"
import * as RemoteHelper from "./remoteHelper.js"
import * as Scripts from "./shellScripts.js"
import { parseSpawnResult } from "./spawnResult.js"
import { collect, lines, openChannel, type SlotActivity, writeStdin } from "./sshChannels.js"
import { type ClientOptions, openClient } from "./sshClient.js"
import { forwardFailure, lost } from "./sshErrors.js"
import { makeFiles } from "./sshFiles.js"

export interface ConnectionOptions extends ClientOptions {
  /** Session channels open at once on this connection (sshd's MaxSessions is 10). Default 8. */
  readonly maxChannels?: number
  /** Default command timeout. Default 30 s. */
  readonly commandTimeout?: Duration.DurationInput
  /** Run commands through the remote helper (`remoteHelper.ts`) when it can start. Default true. */
  readonly remoteHelper?: boolean
  /**
   * How long the login shell may take to start the helper before the connection gives up on it
   * and runs commands on exec channels. Default: the command timeout, at most 15 s.
   */
  readonly remoteHelperStartTimeout?: Duration.DurationInput
  /** How long the helper stays after its last connection closed; zero: it ends with this one. Default 10 minutes. */
  readonly remoteHelperPersist?: Duration.DurationInput
  /** The local directory remembering helpers' sockets across processes. Default: this process's memory. */
  readonly remoteHelperSockets?: string
}

const bytesOf = (data: string | Uint8Array | undefined): Buffer =>
  data === undefined
    ? Buffer.alloc(0)
    : typeof data === "string"
      ? Buffer.from(data, "utf8")
      : Buffer.from(data)

/** The exec text and channel stdin for a command under the lifeline: environment script first. */
const underLifeline = (command: RemoteCommand.RemoteCommand, stdin: string | Uint8Array | undefined) => {
  const env = bytesOf(RemoteCommand.envScript(command))
  const input = bytesOf(stdin)
  return {
    line: Scripts.lifeline(RemoteCommand.render(command), env.length, input.length),
    stdin: Buffer.concat([env, input])
  }
}

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
    const { client, closed, hostKey } = yield* openClient(host, options)
    const budget = yield* Effect.makeSemaphore(options.maxChannels ?? 8)
    const slots: SlotActivity = { lastFreedMs: 0 }
    const defaultTimeout = Duration.decode(options.commandTimeout ?? "30 seconds")
    const endpoint = { alias: host.alias }
    const files = yield* makeFiles(client, endpoint, budget, defaultTimeout, slots)
    const helper = yield* RemoteHelper.make(client, host.alias, {
      enabled: options.remoteHelper ?? true,
      startTimeout:
        options.remoteHelperStartTimeout === undefined
          ? Duration.min(defaultTimeout, Duration.seconds(15))
          : Duration.decode(options.remoteHelperStartTimeout),
      persist:
        options.remoteHelperPersist === undefined
          ? RemoteHelper.defaultPersist
          : Duration.decode(options.remoteHelperPersist),
      sockets:
        options.remoteHelperSockets === undefined
          ? HelperSockets.inMemory
          : HelperSockets.inDirectory(options.remoteHelperSockets),
      key: HelperSockets.keyOf(host, hostKey)
    })

    const timeoutOf = (execOptions: ExecOptions | undefined) =>
      execOptions?.timeout === undefined ? defaultTimeout : Duration.decode(execOptions.timeout)

    const timedOut = (description: string, timeout: Duration.Duration) =>
      new CommandTimeout({ host: host.alias, command: description, timeoutMs: Duration.toMillis(timeout) })

    /** Send one exec request with its stdin, to completion (`end`: EOF after the stdin). */
    const run = (
      line: string,
      stdin: Uint8Array,
      description: string,
      timeout: Duration.Duration,
      options: { readonly end?: boolean } = {}
    ) =>
      budget
        .withPermits(1)(
          Effect.scoped(
            Effect.gen(function* () {
              const open = yield* openChannel(yield* helper.opener, endpoint, line, slots)
              yield* writeStdin(open, stdin, options)
              return yield* collect(open, endpoint)
            })
          )
        )
        .pipe(
          // interruption runs the channel's release (EOF -> the remote group is killed) first
          Effect.timeoutFail({ duration: timeout, onTimeout: () => timedOut(description, timeout) })
        )

    const exec: Connection["exec"] = Effect.fn("Connection.exec")(function* (command, execOptions) {
      const { line, stdin } = underLifeline(command, execOptions?.stdin)
      return yield* run(line, stdin, RemoteCommand.describe(command), timeoutOf(execOptions))
    })

    const stream: Connection["stream"] = (command, execOptions) => {
      const output = Stream.unwrapScoped(
        Effect.gen(function* () {
          const { line, stdin } = underLifeline(command, execOptions?.stdin)
          // waiting for a permit stays interruptible (acquireRelease would make it uninterruptible)
          yield* Effect.uninterruptibleMask((restore) =>
            Effect.zipRight(
              restore(budget.take(1)),
              Effect.addFinalizer(() => budget.release(1))
            )
          )
          const open = yield* openChannel(yield* helper.opener, endpoint, line, slots)
          yield* writeStdin(open, stdin)
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

    // Not under the lifeline: the start script runs to its end whatever happens to the channel.
    const spawnDetached: Connection["spawnDetached"] = Effect.fn("Connection.spawnDetached")(
      function* (command, detached) {
        const token = detached.token ?? randomBytes(8).toString("hex")
        const runDir = detached.runDir.replace(/\/+$/, "")
        const env = bytesOf(RemoteCommand.envScript(command))
        const line = Scripts.spawnDetached(
          RemoteCommand.render(command),
          runDir,
          detached.logPath ?? `${runDir}/log`,
          token,
          env.length
        )
        const result = yield* run(
          line,
          env,
          `start detached: ${RemoteCommand.describe(command)}`,
          defaultTimeout,
          {
            end: true
          }
        )
        return yield* parseSpawnResult(host.alias, detached.runDir, token, result)
      }
    )

    const forward: Connection["forward"] = (port, target = "127.0.0.1") =>
      Effect.acquireRelease(
        Effect.async<Duplex, ConnectError | ReturnType<typeof forwardFailure>>((resume) => {
          let cancelled = false
          try {
            client.forwardOut("127.0.0.1", 0, target, port, (error, channel) => {
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
      // sftp, or the same operations as commands through the helper when sshd leaves no session for sftp
      files: sftpOrCommands(files, makeCommandFiles(exec, host.alias), helper.serving),
      forward,
      closed: Deferred.await(closed)
    } satisfies Connection
  })
