/**
 * Opening an ssh2 client: our own TCP socket with Nagle off, ProxyJump hops over
 * `forwardOut`, host keys checked against known_hosts on every hop, keys / agent auth.
 *
 * @internal
 */

import * as net from "node:net"
import type { Duplex } from "node:stream"
import { Deferred, Effect, Exit, Redacted, Runtime, type Scope } from "effect"
import type { AnyAuthMethod, AuthHandlerMiddleware, Client, ConnectConfig } from "ssh2"
import {
  type ConfigFileError,
  type ConnectError,
  ConnectionLost,
  ConnectionRefused,
  ConnectTimeout
} from "../Errors.js"
import type { HostConfig } from "../HostConfig.js"
import * as KnownHosts from "../KnownHosts.js"
import * as LocalFiles from "../LocalFiles.js"
import { boundedWait } from "./boundedWait.js"
import { connectFailure, type Endpoint, isDisconnected, keyFileError, messageOf } from "./sshErrors.js"

/**
 * ssh2 (with its crypto) is loaded on the first connect, not when the module is imported: a
 * command that never connects (`mlops --help`, `check --model-config`) does not pay for it.
 */
type Ssh2 = typeof import("ssh2")
let ssh2Module: Promise<Ssh2> | undefined
const loadSsh2 = async (): Promise<Ssh2> => {
  // a CommonJS package: node's import() puts module.exports on `default`
  const module: Ssh2 & { readonly default?: Ssh2 } = await import("ssh2")
  return module.default ?? module
}
const ssh2Lib = Effect.promise(() => {
  ssh2Module ??= loadSsh2()
  return ssh2Module
})

export interface ClientOptions {
  /** Passphrase for encrypted keys (ConnectionPool's `config` reads `MLOPS_SSH_PASSPHRASE`). */
  readonly passphrase?: Redacted.Redacted<string>
}

/** An open, authenticated client and a signal that fires once when it drops. */
export interface OpenClient {
  readonly client: Client
  readonly closed: Deferred.Deferred<ConnectionLost>
  /** The host key the server proved it holds (verified against known_hosts). */
  readonly hostKey: Uint8Array
}

interface Hop extends Endpoint {
  readonly identityFiles: ReadonlyArray<string>
}

interface LoadedKey {
  readonly path: string
  readonly data: Buffer
}

/** Key types ssh2 can verify; used to prefer the type known_hosts already has (as OpenSSH does). */
const HOST_KEY_ALGORITHMS: Record<string, ReadonlyArray<string>> = {
  "ssh-ed25519": ["ssh-ed25519"],
  "ecdsa-sha2-nistp256": ["ecdsa-sha2-nistp256"],
  "ecdsa-sha2-nistp384": ["ecdsa-sha2-nistp384"],
  "ecdsa-sha2-nistp521": ["ecdsa-sha2-nistp521"],
  "ssh-rsa": ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"]
}

const openSocket = (hop: Hop): Effect.Effect<net.Socket, ConnectError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<net.Socket, ConnectError>((resume) => {
      const socket = net.connect({ host: hop.hostname, port: hop.port })
      // ~45 ms -> ~2 ms per command: channel setup is many small packets (Nagle + delayed ACK).
      socket.setNoDelay(true)
      const timer = setTimeout(() => {
        socket.destroy()
        resume(
          Effect.fail(
            new ConnectTimeout({ host: hop.hostname, port: hop.port, timeoutMs: hop.connectTimeoutMs })
          )
        )
      }, hop.connectTimeoutMs)
      socket.once("connect", () => {
        clearTimeout(timer)
        socket.removeAllListeners("error")
        // a later socket error reaches ssh2, which owns the socket from here on
        socket.on("error", () => {})
        resume(Effect.succeed(socket))
      })
      socket.once("error", (error) => {
        clearTimeout(timer)
        resume(Effect.fail(connectFailure(hop, error, [])))
      })
      return Effect.sync(() => {
        clearTimeout(timer)
        socket.destroy()
      })
    }),
    (socket) => Effect.sync(() => socket.destroy())
  )

const loadKeys = (
  files: ReadonlyArray<string>,
  passphrase: string | undefined,
  hasAgent: boolean
): Effect.Effect<{ keys: ReadonlyArray<LoadedKey>; skipped: ReadonlyArray<string> }, ConfigFileError> =>
  Effect.gen(function* () {
    const keys: Array<LoadedKey> = []
    const skipped: Array<string> = []
    let firstProblem: ConfigFileError | undefined
    for (const path of files) {
      const data = yield* LocalFiles.readIfExists(path)
      // ssh skips identity files that do not exist (the default list names several)
      if (data === undefined) continue
      const parsed = (yield* ssh2Lib).utils.parseKey(data, passphrase)
      if (parsed instanceof Error) {
        const problem = keyFileError(path, parsed)
        firstProblem ??= problem
        skipped.push(`${path} (${problem.reason})`)
        continue
      }
      keys.push({ path, data })
    }
    // An unusable key only matters when nothing else can authenticate.
    if (keys.length === 0 && !hasAgent && firstProblem !== undefined) return yield* firstProblem
    return { keys, skipped }
  })

/** Tries each key, then the agent, recording what was offered (for AuthenticationFailed). */
const authHandler = (
  user: string,
  keys: ReadonlyArray<LoadedKey>,
  passphrase: string | undefined,
  agent: string | undefined,
  tried: Array<string>
): AuthHandlerMiddleware => {
  const queue: Array<{ label: string; method: AnyAuthMethod }> = keys.map((key) => ({
    label: `publickey ${key.path}`,
    method: {
      type: "publickey",
      username: user,
      key: key.data,
      ...(passphrase === undefined ? {} : { passphrase })
    }
  }))
  if (agent !== undefined)
    queue.push({ label: `agent ${agent}`, method: { type: "agent", username: user, agent } })
  return (methodsLeft, _partialSuccess, next) => {
    while (queue.length > 0) {
      const attempt = queue.shift()!
      // methodsLeft is null on the first call; "agent" auth is publickey on the wire
      if (methodsLeft !== null && !methodsLeft.includes("publickey")) continue
      tried.push(attempt.label)
      return next(attempt.method)
    }
    // `false` ends authentication (ssh2 accepts it; its types do not list it)
    return next(false as unknown as AnyAuthMethod)
  }
}

const handshake = (
  hop: Hop,
  host: HostConfig,
  sock: Duplex,
  options: ClientOptions
): Effect.Effect<OpenClient, ConnectError, Scope.Scope> =>
  Effect.gen(function* () {
    const passphrase = options.passphrase === undefined ? undefined : Redacted.value(options.passphrase)
    const { keys, skipped } = yield* loadKeys(hop.identityFiles, passphrase, host.agent !== undefined)
    const knownTypes = yield* KnownHosts.knownKeyTypes({
      host: hop.hostname,
      port: hop.port,
      files: host.knownHostsFiles
    })
    const runtime = yield* Effect.runtime<never>()
    const closed = yield* Deferred.make<ConnectionLost>()
    const tried: Array<string> = [...skipped.map((s) => `skipped ${s}`)]
    let hostKeyError: ConnectError | undefined
    let hostKey = new Uint8Array(0)

    const hostVerifier = (key: Buffer, verify: (valid: boolean) => void) => {
      hostKey = new Uint8Array(key)
      Runtime.runCallback(runtime)(
        KnownHosts.verify({
          host: hop.hostname,
          port: hop.port,
          key: new Uint8Array(key),
          files: host.knownHostsFiles,
          policy: host.hostKeyPolicy
        }),
        {
          onExit: (exit) => {
            if (Exit.isFailure(exit)) {
              const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
              hostKeyError =
                failure ?? new ConnectionLost({ host: hop.alias, reason: "host key verification crashed" })
            }
            verify(Exit.isSuccess(exit))
          }
        }
      )
    }

    const preferred = knownTypes.flatMap((type) => HOST_KEY_ALGORITHMS[type] ?? [])
    const config: ConnectConfig = {
      sock,
      username: hop.user,
      readyTimeout: hop.connectTimeoutMs,
      keepaliveInterval: host.keepaliveIntervalMs,
      keepaliveCountMax: host.keepaliveCountMax,
      hostVerifier,
      authHandler: authHandler(hop.user, keys, passphrase, host.agent, tried),
      // ssh2 accepts a partial { prepend } list; its types want all three keys
      ...(preferred.length > 0
        ? {
            algorithms: { serverHostKey: { prepend: preferred } } as unknown as NonNullable<
              ConnectConfig["algorithms"]
            >
          }
        : {})
    }

    const ssh2 = yield* ssh2Lib
    const client = yield* Effect.acquireRelease(
      Effect.async<Client, ConnectError>((resume) => {
        const client = new ssh2.Client()
        let settled = false
        let lastError: unknown
        const settle = (result: Effect.Effect<Client, ConnectError>) => {
          if (settled) return
          settled = true
          resume(result)
        }
        // An 'error' without a listener would throw from the EventEmitter: keep one for life.
        client.on("error", (error) => {
          lastError = error
          settle(Effect.fail(hostKeyError ?? connectFailure(hop, error, tried)))
        })
        client.once("ready", () => settle(Effect.succeed(client)))
        client.once("close", () => {
          const reason = lastError === undefined ? "connection closed" : messageOf(lastError)
          Deferred.unsafeDone(closed, Exit.succeed(new ConnectionLost({ host: hop.alias, reason })))
          settle(Effect.fail(hostKeyError ?? new ConnectionLost({ host: hop.alias, reason })))
        })
        try {
          client.connect(config)
        } catch (error) {
          settle(Effect.fail(connectFailure(hop, error, tried)))
        }
        return Effect.sync(() => client.end())
      }),
      (client) => closeClient(client, closed)
    )
    return { client, closed, hostKey }
  })

/** End the client and wait (briefly) for its close, so inner hops close before outer ones. */
const closeClient = (client: Client, closed: Deferred.Deferred<ConnectionLost>) =>
  Effect.sync(() => client.end()).pipe(
    Effect.zipRight(Deferred.await(closed).pipe(boundedWait("2 seconds"), Effect.ignore)),
    Effect.zipRight(Effect.sync(() => client.destroy()))
  )

const forwardTo = (via: OpenClient, to: Hop): Effect.Effect<Duplex, ConnectError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<Duplex, ConnectError>((resume) => {
      let cancelled = false
      try {
        via.client.forwardOut("127.0.0.1", 0, to.hostname, to.port, (error, stream) => {
          if (cancelled) return error ? undefined : stream.destroy()
          if (error) {
            resume(
              Effect.fail(
                isDisconnected(error)
                  ? new ConnectionLost({ host: to.alias, reason: `jump host dropped: ${messageOf(error)}` })
                  : new ConnectionRefused({
                      host: to.hostname,
                      port: to.port,
                      reason: `through the jump host: ${messageOf(error)}`
                    })
              )
            )
          } else resume(Effect.succeed(stream))
        })
      } catch (error) {
        resume(Effect.fail(new ConnectionLost({ host: to.alias, reason: messageOf(error) })))
      }
      return Effect.sync(() => {
        cancelled = true
      })
    }),
    (stream) => Effect.sync(() => stream.destroy())
  )

const endpoint = (host: HostConfig): Hop => ({
  alias: host.alias,
  hostname: host.hostname,
  port: host.port,
  user: host.user,
  connectTimeoutMs: host.connectTimeoutMs,
  identityFiles: host.identityFiles
})

/**
 * Connect to `host` through its ProxyJump chain. Every hop's host key is verified. Hops are
 * closed after (inner first) the target, by the scope.
 */
export const openClient = (
  host: HostConfig,
  options: ClientOptions = {}
): Effect.Effect<OpenClient, ConnectError, Scope.Scope> =>
  Effect.gen(function* () {
    const hops: Array<Hop> = host.proxyJump.map((jump) => ({
      ...jump,
      connectTimeoutMs: host.connectTimeoutMs
    }))
    const target = endpoint(host)
    const chain = [...hops, target]
    let sock: Duplex = yield* openSocket(chain[0]!)
    let open: OpenClient | undefined
    for (let i = 0; i < chain.length; i++) {
      const hop = chain[i]!
      if (open !== undefined) sock = yield* forwardTo(open, hop)
      open = yield* handshake(hop, host, sock, options)
    }
    return open!
  }).pipe(
    // readyTimeout covers each handshake; this bounds the whole chain (TCP + every hop).
    Effect.timeoutFail({
      duration: host.connectTimeoutMs * (host.proxyJump.length + 1) + 1000,
      onTimeout: () =>
        new ConnectTimeout({ host: host.hostname, port: host.port, timeoutMs: host.connectTimeoutMs })
    })
  )
