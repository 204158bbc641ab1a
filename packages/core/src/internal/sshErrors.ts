/**
 * Maps ssh2 / socket errors to the tagged errors of `Errors.ts`.
 *
 * @internal
 */
import {
  AuthenticationFailed,
  ConfigFileError,
  type ConnectError,
  ConnectionLost,
  ConnectionRefused,
  ConnectTimeout,
  ForwardFailed,
  RemoteFileError
} from "../Errors.js"

/** What an error message needs to know about the endpoint being connected to. */
export interface Endpoint {
  readonly alias: string
  readonly hostname: string
  readonly port: number
  readonly user: string
  readonly connectTimeoutMs: number
}

/** ssh2 errors carry a `level`, sockets a `code`. */
interface SshError extends Error {
  readonly level?: string
  readonly code?: string | number
  readonly reason?: number | string
}

const asSshError = (error: unknown): SshError =>
  error instanceof Error ? (error as SshError) : new Error(String(error))

export const messageOf = (error: unknown): string => asSshError(error).message

/** A failure while opening the connection (TCP, handshake, authentication). */
export const connectFailure = (
  endpoint: Endpoint,
  error: unknown,
  tried: ReadonlyArray<string>
): ConnectError => {
  const e = asSshError(error)
  if (e.code === "ECONNREFUSED") {
    return new ConnectionRefused({ host: endpoint.hostname, port: endpoint.port, reason: e.message })
  }
  if (e.code === "ETIMEDOUT" || (e.level === "client-timeout" && /handshake/i.test(e.message))) {
    return new ConnectTimeout({
      host: endpoint.hostname,
      port: endpoint.port,
      timeoutMs: endpoint.connectTimeoutMs
    })
  }
  if (e.level === "client-authentication") {
    return new AuthenticationFailed({
      host: endpoint.hostname,
      user: endpoint.user,
      tried,
      reason: e.message
    })
  }
  if (
    e.code === "ENOTFOUND" ||
    e.code === "EAI_AGAIN" ||
    e.code === "EHOSTUNREACH" ||
    e.code === "ENETUNREACH"
  ) {
    return new ConnectionRefused({ host: endpoint.hostname, port: endpoint.port, reason: e.message })
  }
  return new ConnectionLost({ host: endpoint.alias, reason: `while connecting: ${e.message}` })
}

/** A key file that cannot be parsed: wrong passphrase, none given, unsupported format. */
export const keyFileError = (path: string, error: unknown): ConfigFileError => {
  const message = messageOf(error)
  if (/no passphrase given/i.test(message)) {
    return new ConfigFileError({
      path,
      reason: "the private key is encrypted and no passphrase was given",
      fix: "set MLOPS_SSH_PASSPHRASE, or load the key into ssh-agent (ssh-add) and set SSH_AUTH_SOCK"
    })
  }
  if (/bad passphrase|integrity check failed/i.test(message)) {
    return new ConfigFileError({
      path,
      reason: "the passphrase does not decrypt the private key",
      fix: "check MLOPS_SSH_PASSPHRASE, or load the key into ssh-agent (ssh-add)"
    })
  }
  return new ConfigFileError({
    path,
    reason: `cannot use the private key: ${message}`,
    fix: "use an OpenSSH or PEM private key (ssh-keygen -p -m PEM converts PKCS#8 keys)"
  })
}

/** sshd refused to open a session channel (MaxSessions reached, or prohibited). */
export const isChannelOpenFailure = (error: unknown): boolean =>
  /channel open failure/i.test(messageOf(error))

/** The connection is gone (exec after close, pending requests flushed at close). */
export const isDisconnected = (error: unknown): boolean =>
  /not connected|no response from server|connection lost|socket.*(closed|ended)|ECONNRESET|EPIPE/i.test(
    messageOf(error)
  )

export const lost = (endpoint: Pick<Endpoint, "alias">, error: unknown): ConnectionLost =>
  new ConnectionLost({ host: endpoint.alias, reason: messageOf(error) })

export const forwardFailure = (
  endpoint: Pick<Endpoint, "alias">,
  port: number,
  error: unknown
): ForwardFailed | ConnectionLost =>
  isDisconnected(error)
    ? lost(endpoint, error)
    : new ForwardFailed({ host: endpoint.alias, port, reason: messageOf(error) })

/** sftp status 2 (SSH_FX_NO_SUCH_FILE) or a local ENOENT. */
export const isNotFound = (error: unknown): boolean => {
  const e = asSshError(error)
  return e.code === 2 || e.code === "ENOENT" || /no such file/i.test(e.message)
}

export const fileFailure = (
  endpoint: Pick<Endpoint, "alias">,
  path: string,
  operation: string,
  error: unknown
): RemoteFileError =>
  new RemoteFileError({
    host: endpoint.alias,
    path,
    operation,
    reason: messageOf(error),
    notFound: isNotFound(error)
  })
