/**
 * The remote helper of a connection (the script is `remoteHelperScript.ts`): each command opens
 * a `direct-streamlocal` channel to the helper's socket instead of an exec channel, so it does
 * not pay for the user's shell start-up (`~/.bashrc` running `conda init` costs 0.1 to 1 s per
 * exec). What reaches the command is exactly what an exec channel gets: the same wrapper line
 * (lifeline, environment on stdin), in a session of its own, with its own exit status.
 *
 * Persistent (the default): the helper outlives the connection that started it, so a new
 * connection (a new `mlops` run) does not pay for the login shell at all. Its socket path is
 * remembered on this machine (`helperSockets.ts`); a new connection holds it (a channel that
 * stays open for the connection's life, answered `ok` unless the host's rc files changed since
 * the helper started) and uses it; when there is none, or it is gone or stale, one is started
 * through the login shell, which leaves the exec channel at once. The helper exits after
 * `persist` without connections. With `persist` zero, or where its directory on the host
 * (`~/.mlops/run`) cannot be trusted, the helper is attached: it lives on its exec channel and
 * ends with the connection.
 *
 * It needs `python3` (3.5 or newer) on the login shell's PATH and sshd allowing stream-local
 * forwarding (`AllowStreamLocalForwarding`, on by default). When the helper cannot start, or
 * a channel to it is refused, that command and every later one on the connection use plain
 * exec channels, as before; the reason is logged once.
 *
 * @internal
 */
import { Duration, Effect, Either, Fiber, type Scope } from "effect"
import type { Client, ClientChannel } from "ssh2"
import { quote } from "../RemotePath.js"
import { type HelperSockets, isSocketPath } from "./helperSockets.js"
import { type ExecChannel, Frame, firstFrame, HelperChannel, requestOf } from "./remoteHelperChannel.js"
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

/** How long a persistent helper stays without connections unless told otherwise. */
export const defaultPersist: Duration.Duration = Duration.minutes(10)

export interface HelperOptions {
  readonly enabled: boolean
  readonly startTimeout: Duration.Duration
  /** How long a persistent helper stays without connections; zero: attached to this connection. */
  readonly persist: Duration.Duration
  /** Where persistent helpers' sockets are remembered, and this helper's key there. */
  readonly sockets: HelperSockets
  readonly key: string
}

/**
 * What the login shell runs, once: `-I` keeps PYTHON* variables and user site out. The
 * arguments are a hex key and a number: nothing of the user's reaches the command line.
 */
export const startLine = (persistent?: { readonly key: string; readonly idle: Duration.Duration }): string =>
  `exec python3 -I -c ${quote(HELPER_PY)}` +
  (persistent === undefined
    ? " attached"
    : ` persistent ${persistent.key} ${Math.max(1, Math.ceil(Duration.toSeconds(persistent.idle)))}`)

// a line of its own: an rc that prints to stdout comes first
const READY = /(?:^|\n)mlops-helper 2 (persistent|attached) ([^\n]+)\n/

const plainOf =
  (client: Client): ExecFn =>
  (line, callback) =>
    client.exec(line, (error, channel: ClientChannel) => callback(error, channel))

interface Started {
  readonly persistent: boolean
  readonly socket: string
}

/** Start the helper on `client` with `line`: where its socket is, or why it cannot run. */
const start = (client: Client, line: string, timeout: Duration.Duration) =>
  Effect.async<Started, string>((resume) => {
    let stdout = ""
    let stderr = ""
    let settled = false
    const settle = (result: Either.Either<Started, string>) => {
      if (settled) return
      settled = true
      resume(Either.isRight(result) ? Effect.succeed(result.right) : Effect.fail(result.left))
    }
    let channel: ClientChannel | undefined
    let found: Started | undefined
    // set when the start is abandoned (timeout, interruption): a channel that opens later is closed at once
    let abandoned = false
    try {
      client.exec(line, (error, opened) => {
        if (error) return settle(Either.left(`its channel was refused: ${messageOf(error)}`))
        if (abandoned) {
          opened.on("error", () => {})
          return opened.close()
        }
        channel = opened
        opened.on("data", (chunk: Buffer) => {
          stdout += chunk.toString("utf8")
          if (found !== undefined) return
          const ready = READY.exec(stdout)
          if (ready === null) return
          if (!isSocketPath(ready[2]!))
            return settle(Either.left(`it named an unusable socket path: ${JSON.stringify(ready[2])}`))
          found = { persistent: ready[1] === "persistent", socket: ready[2]! }
          // a persistent helper leaves the exec channel at once: wait for its close, so that
          // its session is free before commands and sftp start (MaxSessions 1)
          if (!found.persistent) settle(Either.right(found))
        })
        opened.stderr.on("data", (chunk: Buffer) => {
          stderr = (stderr + chunk.toString("utf8")).slice(-2000)
        })
        opened.on("error", () => {})
        opened.on("close", () =>
          settle(
            found?.persistent === true
              ? Either.right(found)
              : Either.left(
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
 * Hold a persistent helper for this connection: a channel to its socket that stays open until
 * the scope closes (the helper counts the connection as live meanwhile). Fails unless the
 * helper answers `ok`; `onEnd` runs if the helper goes away while held.
 */
const hold = (
  client: Client,
  socket: string,
  timeout: Duration.Duration,
  onEnd: () => void
): Effect.Effect<void, string, Scope.Scope> =>
  Effect.acquireRelease(
    // interruptible, so its timeout holds even when the connection is opened inside a finalizer
    Effect.interruptible(
      Effect.async<ClientChannel, string>((resume) => {
        let settled = false
        let held = false
        let stream: ClientChannel | undefined
        let abandoned = false
        const settle = (result: Either.Either<ClientChannel, string>) => {
          if (settled) return
          settled = true
          if (Either.isLeft(result)) stream?.close()
          resume(Either.isRight(result) ? Effect.succeed(result.right) : Effect.fail(result.left))
        }
        try {
          client.openssh_forwardOutStreamLocal(socket, (error, opened) => {
            if (error) return settle(Either.left(`a channel to its socket was refused: ${messageOf(error)}`))
            opened.on("error", () => {})
            if (abandoned) return opened.close()
            stream = opened
            let reply: Buffer = Buffer.alloc(0)
            opened.on("data", (chunk: Buffer) => {
              if (settled) return
              reply = Buffer.concat([reply, chunk])
              const frame = firstFrame(reply)
              if (frame === undefined) return
              const word = frame.kind === Frame.hold ? frame.data.toString("utf8") : undefined
              held = word === "ok"
              if (held) settle(Either.right(opened))
              else if (word === "stale") settle(Either.left("the host's rc files changed since it started"))
              else settle(Either.left("it answered something else than a helper would"))
            })
            opened.on("close", () => {
              if (held) onEnd()
              settle(Either.left("it closed the channel without answering"))
            })
            opened.write(requestOf("")) // an empty command line: a hold
          })
        } catch (error) {
          settle(Either.left(messageOf(error)))
        }
        return Effect.sync(() => {
          abandoned = true
          stream?.close()
        })
      }).pipe(Effect.timeoutFail({ duration: timeout, onTimeout: () => "it did not answer in time" }))
    ),
    (stream) => Effect.sync(() => stream.close())
  ).pipe(Effect.asVoid)

/**
 * The connection's helper: reached or started now (in the background, for the connection's
 * scope, so a command's interruption never stops it), unless `enabled` is false.
 */
export const make = (
  client: Client,
  alias: string,
  options: HelperOptions
): Effect.Effect<RemoteHelper, never, Scope.Scope> =>
  Effect.gen(function* () {
    const plain = plainOf(client)
    if (!options.enabled) return { opener: Effect.succeed(plain), serving: Effect.succeed(false) }
    // set when the helper cannot serve (never started, a channel to it was refused, it went away)
    let unusable: string | undefined
    let reported = false
    const ended = () => {
      unusable ??= "it ended while this connection held it"
    }
    const holdTimeout = Duration.min(options.startTimeout, Duration.seconds(5))

    const attached = Effect.map(start(client, startLine(), options.startTimeout), (started) => started.socket)
    const persistent = Effect.gen(function* () {
      const recalled = yield* options.sockets.recall(options.key)
      if (recalled !== undefined) {
        const held = yield* Effect.either(hold(client, recalled, holdTimeout, ended))
        if (Either.isRight(held)) return recalled
        yield* options.sockets.forget(options.key)
        yield* Effect.logDebug(
          `remote helper on ${alias}: the running one cannot serve (${held.left}); starting one`
        )
      }
      const started = yield* start(
        client,
        startLine({ key: options.key, idle: options.persist }),
        options.startTimeout
      )
      if (!started.persistent) return started.socket
      yield* hold(client, started.socket, holdTimeout, ended)
      yield* options.sockets.remember(options.key, started.socket)
      return started.socket
    })
    // interruptible: a connection opened inside a finalizer still closes (see connectionPool)
    const fiber = yield* Effect.forkScoped(
      Effect.interruptible(Effect.either(Duration.toMillis(options.persist) > 0 ? persistent : attached))
    )

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
