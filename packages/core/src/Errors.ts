/**
 * The tagged errors of @mlops/core. Each carries what a person needs to act: the host, the
 * file or the command, and a `fix` when one is known.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

// ---- hosts -------------------------------------------------------------------------------

/** An alias that is neither in ssh_config nor in the mlops hosts file. @category errors */
export class HostNotFound extends Schema.TaggedError<HostNotFound>()("HostNotFound", {
  alias: Schema.String,
  known: Schema.Array(Schema.String),
  sources: Schema.Array(Schema.String)
}) {
  override get message() {
    const known = this.known.length > 0 ? this.known.join(", ") : "(none)"
    return `unknown host "${this.alias}"; known hosts: ${known} (from ${this.sources.join(", ")})`
  }
}

/** A config file (ssh_config, the mlops hosts file, known_hosts, a key) that cannot be used. @category errors */
export class ConfigFileError extends Schema.TaggedError<ConfigFileError>()("ConfigFileError", {
  path: Schema.String,
  reason: Schema.String,
  fix: Schema.optional(Schema.String),
  /** The host entry the problem is in, when it is in one. */
  host: Schema.optional(Schema.String),
  /** The field (or ssh_config keyword) at fault. */
  field: Schema.optional(Schema.String),
  /** The 1-based line of the file, when known. */
  line: Schema.optional(Schema.Number)
}) {
  override get message() {
    const at = this.line === undefined ? "" : `:${this.line}`
    return `${this.path}${at}: ${this.reason}${this.fix ? ` (fix: ${this.fix})` : ""}`
  }
}

// ---- connections -------------------------------------------------------------------------

/** The server's key differs from the one recorded in known_hosts. No command was run. @category errors */
export class HostKeyMismatch extends Schema.TaggedError<HostKeyMismatch>()("HostKeyMismatch", {
  host: Schema.String,
  port: Schema.Number,
  knownHostsFile: Schema.String,
  expectedFingerprints: Schema.Array(Schema.String),
  actualFingerprint: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `host key for ${this.host}:${this.port} changed: known_hosts (${this.knownHostsFile}) has ${this.expectedFingerprints.join(", ")}, server offered ${this.actualFingerprint}. If the change is expected: ${this.fix}`
  }
}

/** The host is not in known_hosts and the policy is strict. @category errors */
export class HostKeyUnknown extends Schema.TaggedError<HostKeyUnknown>()("HostKeyUnknown", {
  host: Schema.String,
  port: Schema.Number,
  knownHostsFiles: Schema.Array(Schema.String),
  actualFingerprint: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `no known host key for ${this.host}:${this.port} (server offered ${this.actualFingerprint}); ${this.fix}`
  }
}

/** @category errors */
export class AuthenticationFailed extends Schema.TaggedError<AuthenticationFailed>()("AuthenticationFailed", {
  host: Schema.String,
  user: Schema.String,
  tried: Schema.Array(Schema.String),
  reason: Schema.String
}) {
  override get message() {
    return `authentication as ${this.user}@${this.host} failed (${this.reason}); tried: ${this.tried.join(", ") || "nothing"}`
  }
}

/** @category errors */
export class ConnectionRefused extends Schema.TaggedError<ConnectionRefused>()("ConnectionRefused", {
  host: Schema.String,
  port: Schema.Number,
  reason: Schema.String
}) {
  override get message() {
    return `connection to ${this.host}:${this.port} refused (${this.reason})`
  }
}

/** The connection (TCP + key exchange + auth) did not complete in time. @category errors */
export class ConnectTimeout extends Schema.TaggedError<ConnectTimeout>()("ConnectTimeout", {
  host: Schema.String,
  port: Schema.Number,
  timeoutMs: Schema.Number
}) {
  override get message() {
    return `connecting to ${this.host}:${this.port} timed out after ${this.timeoutMs} ms`
  }
}

/** An established connection dropped (network, keepalive timeout, sshd killed). @category errors */
export class ConnectionLost extends Schema.TaggedError<ConnectionLost>()("ConnectionLost", {
  host: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `connection to ${this.host} lost: ${this.reason}`
  }
}

/** @category errors */
export type ConnectError =
  | HostKeyMismatch
  | HostKeyUnknown
  | AuthenticationFailed
  | ConnectionRefused
  | ConnectTimeout
  | ConnectionLost
  | ConfigFileError

// ---- commands ----------------------------------------------------------------------------

/** sshd refused a new session channel (MaxSessions, or an injected fault). @category errors */
export class ChannelOpenFailed extends Schema.TaggedError<ChannelOpenFailed>()("ChannelOpenFailed", {
  host: Schema.String,
  reason: Schema.String,
  fix: Schema.optional(Schema.String)
}) {
  override get message() {
    return `could not open a channel on ${this.host}: ${this.reason}${this.fix ? ` (fix: ${this.fix})` : ""}`
  }
}

/** The command ran past its timeout; its remote process group was killed. @category errors */
export class CommandTimeout extends Schema.TaggedError<CommandTimeout>()("CommandTimeout", {
  host: Schema.String,
  command: Schema.String,
  timeoutMs: Schema.Number
}) {
  override get message() {
    return `command on ${this.host} timed out after ${this.timeoutMs} ms: ${this.command}`
  }
}

/** A command that had to succeed exited non-zero or by a signal. @category errors */
export class CommandFailed extends Schema.TaggedError<CommandFailed>()("CommandFailed", {
  host: Schema.String,
  command: Schema.String,
  exitCode: Schema.NullOr(Schema.Number),
  signal: Schema.NullOr(Schema.String),
  stderr: Schema.String
}) {
  override get message() {
    const how = this.signal !== null ? `signal ${this.signal}` : `exit code ${this.exitCode}`
    const err = this.stderr.trim().split("\n").slice(-5).join("\n")
    return `command on ${this.host} failed with ${how}: ${this.command}${err ? `\n${err}` : ""}`
  }
}

/** @category errors */
export type CommandError = ConnectError | ChannelOpenFailed | CommandTimeout

// ---- files and logs ----------------------------------------------------------------------

/** @category errors */
export class RemoteFileError extends Schema.TaggedError<RemoteFileError>()("RemoteFileError", {
  host: Schema.String,
  path: Schema.String,
  operation: Schema.String,
  reason: Schema.String,
  /** True when the file does not exist (sftp status 2 / ENOENT). */
  notFound: Schema.Boolean,
  /** How to get past it, when mlops knows (sshd had no session left for sftp). */
  fix: Schema.optional(Schema.String)
}) {
  override get message() {
    return `${this.operation} ${this.host}:${this.path} failed: ${this.reason}`
  }
}

/** A followed log shrank below the offset already read: truncated or rotated. @category errors */
export class LogTruncated extends Schema.TaggedError<LogTruncated>()("LogTruncated", {
  host: Schema.String,
  path: Schema.String,
  offset: Schema.Number,
  size: Schema.Number
}) {
  override get message() {
    return `${this.host}:${this.path} was truncated or rotated (read up to byte ${this.offset}, file is now ${this.size} bytes)`
  }
}

/** A tunnel to a remote port could not be opened (nothing listening, forwarding disabled). @category errors */
export class ForwardFailed extends Schema.TaggedError<ForwardFailed>()("ForwardFailed", {
  host: Schema.String,
  port: Schema.Number,
  reason: Schema.String,
  /** The tunnel was open and the request broke on it (a cut connection looks like this), not refused. */
  midRequest: Schema.optional(Schema.Boolean)
}) {
  override get message() {
    return `could not reach port ${this.port} on ${this.host} through ssh: ${this.reason}`
  }
}

// ---- processes and probes ----------------------------------------------------------------

/** A detached process could not be started, inspected or stopped. @category errors */
export class ProcessError extends Schema.TaggedError<ProcessError>()("ProcessError", {
  host: Schema.String,
  runDir: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `process in ${this.host}:${this.runDir}: ${this.reason}`
  }
}

/**
 * Another spawn holds the run directory's lock (`<runDir>/spawn.lock`, created with `mkdir`):
 * two spawns of one directory cannot both start. A lock whose holder is gone is stale (a
 * spawner killed mid-way) and is removed by hand.
 *
 * @category errors
 */
export class SpawnLocked extends Schema.TaggedError<SpawnLocked>()("SpawnLocked", {
  host: Schema.String,
  runDir: Schema.String,
  lockPath: Schema.String,
  /** The spawner's pid on the host, when the lock records one. */
  holderPid: Schema.optional(Schema.Number),
  fix: Schema.String
}) {
  override get message() {
    const holder = this.holderPid === undefined ? "" : ` (held by pid ${this.holderPid})`
    return `another start is in progress in ${this.host}:${this.runDir}: ${this.lockPath} exists${holder}; ${this.fix}`
  }
}

/** The lock's error, with the fix for a stale lock. @category constructors */
export const spawnLocked = (
  host: string,
  runDir: string,
  lockPath: string,
  holderPid?: number
): SpawnLocked =>
  new SpawnLocked({
    host,
    runDir,
    lockPath,
    ...(holderPid === undefined ? {} : { holderPid }),
    fix: `wait for it to finish; if no start is running (${
      holderPid === undefined
        ? "no holder recorded"
        : `pid ${holderPid} is gone: check with \`ps -p ${holderPid}\``
    }), the lock is stale: remove it with \`rm -r ${lockPath}\` on ${host}`
  })

/** A process started earlier in this run directory still runs (and is still ours): not started again. @category errors */
export class AlreadyRunning extends Schema.TaggedError<AlreadyRunning>()("AlreadyRunning", {
  host: Schema.String,
  runDir: Schema.String,
  pgid: Schema.Number
}) {
  override get message() {
    return `a process started in ${this.host}:${this.runDir} still runs (process group ${this.pgid}); stop it first`
  }
}

/** @category errors */
export type SpawnError = CommandError | ProcessError | SpawnLocked | AlreadyRunning

/** A probe's output could not be understood, or its tool is missing. @category errors */
export class ProbeFailed extends Schema.TaggedError<ProbeFailed>()("ProbeFailed", {
  host: Schema.String,
  probe: Schema.String,
  reason: Schema.String,
  fix: Schema.optional(Schema.String)
}) {
  override get message() {
    return `${this.probe} on ${this.host}: ${this.reason}${this.fix ? ` (fix: ${this.fix})` : ""}`
  }
}
