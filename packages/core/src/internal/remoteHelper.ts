/**
 * The remote helper of one connection (the script is `remoteHelperScript.ts`): started once,
 * through the login shell, when the connection opens; each command then opens a
 * `direct-streamlocal` channel to the helper's socket instead of an exec channel, so it does
 * not pay for the user's shell start-up (`~/.bashrc` running `conda init` costs 0.1 to 1 s per
 * exec). What reaches the command is exactly what an exec channel gets: the same wrapper line
 * (lifeline, environment on stdin), in a session of its own, with its own exit status.
 *
 * It needs `python3` (3.5 or newer) on the login shell's PATH and sshd allowing stream-local
 * forwarding (`AllowStreamLocalForwarding`, on by default). When the helper cannot start, or
 * a channel to it is refused, that command and every later one on the connection use plain
 * exec channels, as before; the reason is logged once.
 *
 * @internal
 */
import { type Duration, Effect, Either, Fiber, type Scope } from "effect"
import type { Client, ClientChannel } from "ssh2"
import { quote } from "../RemotePath.js"
import { type ExecChannel, HelperChannel } from "./remoteHelperChannel.js"
import { HELPER_PY } from "./remoteHelperScript.js"
import { messageOf } from "./sshErrors.js"

/** How a command's channel is opened (ssh2's `client.exec` signature, on our channel shape). */
export type ExecFn = (
  line: string,
  callback: (error: Error | undefined, channel: ExecChannel | undefined) => void
) => void

export interface RemoteHelper {
  /** How the next command opens its channel: through the helper once it runs, else plain exec. */
  readonly opener: Effect.Effect<ExecFn>
  /** Whether commands go through the helper (it started, and no channel to it was refused). */
  readonly serving: Effect.Effect<boolean>
}

/** The login shell runs only this, once: `-I` keeps PYTHON* variables and user site out. */
export const START_LINE = `exec python3 -I -c ${quote(HELPER_PY)}`

const READY = /^mlops-helper 1 (\/.+)\n/

const plainOf =
  (client: Client): ExecFn =>
  (line, callback) =>
    client.exec(line, (error, channel: ClientChannel) => callback(error, channel))

/** Start the helper on `client`: its socket path, or why it cannot run. */
const start = (client: Client, timeout: Duration.Duration) =>
  Effect.async<string, string>((resume) => {
    let stdout = ""
    let stderr = ""
    let settled = false
    const settle = (result: Either.Either<string, string>) => {
      if (settled) return
      settled = true
      resume(Either.isRight(result) ? Effect.succeed(result.right) : Effect.fail(result.left))
    }
    let channel: ClientChannel | undefined
    // set when the start is abandoned (timeout, interruption): a channel that opens later is closed at once
    let abandoned = false
    try {
      client.exec(START_LINE, (error, opened) => {
        if (error) return settle(Either.left(`its channel was refused: ${messageOf(error)}`))
        if (abandoned) {
          opened.on("error", () => {})
          return opened.close()
        }
        channel = opened
        opened.on("data", (chunk: Buffer) => {
          stdout += chunk.toString("utf8")
          const ready = READY.exec(stdout)
          if (ready !== null) settle(Either.right(ready[1]!))
        })
        opened.stderr.on("data", (chunk: Buffer) => {
          stderr = (stderr + chunk.toString("utf8")).slice(-2000)
        })
        opened.on("error", () => {})
        opened.on("close", () =>
          settle(
            Either.left(
              `python3 -I -c <helper> ended before it was ready: ${stderr.trim() || "no output"} (it needs python3 >= 3.5 on the login PATH)`
            )
          )
        )
      })
    } catch (error) {
      settle(Either.left(messageOf(error)))
    }
    return Effect.sync(() => {
      abandoned = true
      channel?.close()
    })
  }).pipe(
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: () => "the login shell did not start python3 in time"
    })
  )

/**
 * The connection's helper: started now (in the background, for the connection's scope, so a
 * command's interruption never stops it), unless `enabled` is false.
 */
export const make = (
  client: Client,
  alias: string,
  options: { readonly enabled: boolean; readonly startTimeout: Duration.Duration }
): Effect.Effect<RemoteHelper, never, Scope.Scope> =>
  Effect.gen(function* () {
    const plain = plainOf(client)
    if (!options.enabled) return { opener: Effect.succeed(plain), serving: Effect.succeed(false) }
    const fiber = yield* Effect.forkScoped(Effect.either(start(client, options.startTimeout)))
    // set when the helper cannot serve (never started, or a channel to it was refused)
    let unusable: string | undefined
    let reported = false

    const viaHelper =
      (socket: string): ExecFn =>
      (line, callback) => {
        if (unusable !== undefined) return plain(line, callback)
        client.openssh_forwardOutStreamLocal(socket, (error, forwarded) => {
          if (error) {
            unusable = `a channel to its socket was refused: ${messageOf(error)} (it needs sshd's AllowStreamLocalForwarding)`
            try {
              return plain(line, callback)
            } catch (thrown) {
              return callback(thrown instanceof Error ? thrown : new Error(String(thrown)), undefined)
            }
          }
          callback(undefined, new HelperChannel(forwarded, line))
        })
      }

    const opener = Effect.flatMap(Fiber.join(fiber), (started) => {
      if (Either.isLeft(started)) unusable ??= started.left
      if (unusable === undefined && Either.isRight(started)) return Effect.succeed(viaHelper(started.right))
      if (reported) return Effect.succeed(plain)
      reported = true
      return Effect.as(
        Effect.logDebug(
          `remote helper on ${alias} unavailable (${unusable}): commands run through the login shell`
        ),
        plain
      )
    })
    const serving = Effect.map(
      Fiber.join(fiber),
      (started) => Either.isRight(started) && unusable === undefined
    )
    return { opener, serving }
  })
