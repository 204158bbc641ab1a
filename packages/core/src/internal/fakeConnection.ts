/**
 * `Connection` over a fake host's state. One value per (re)connect: once dropped, every
 * operation on it fails with ConnectionLost, like a dead ssh2 client.
 *
 * Commands go in as the live layer sends them: the exact exec-request text (the lifeline or
 * the detached-start wrapper around `RemoteCommand.render`) and the exact channel stdin (the
 * environment script first), run as sshd runs them, `sh -c <text>` in the login environment
 * and home directory, in a new process group. The fake shell does the rest.
 *
 * @internal
 */

import { randomBytes } from "node:crypto"
import * as Net from "node:net"
import type { Duplex } from "node:stream"
import { Deferred, Duration, Effect, Mailbox, Stream } from "effect"
import type {
  Connection,
  DetachedInfo,
  DetachedOptions,
  ExecOptions,
  ExecResult,
  Exited,
  ExitStatus,
  OutputLine,
  RemoteFs
} from "../Connection.js"
import {
  ChannelOpenFailed,
  type CommandError,
  CommandTimeout,
  type ConnectionLost,
  ForwardFailed,
  RemoteFileError,
  type SpawnError
} from "../Errors.js"
import type { JournalEntry } from "../FakeHost.js"
import type { FakeFs } from "../FakeProgram.js"
import type { HostConfig } from "../HostConfig.js"
import { describe, envScript, type RemoteCommand, render } from "../RemoteCommand.js"
import { concatBytes, decodeLossy, type FakeFileSystem, toBytes } from "./fakeFs.js"
import type { ProcessSpec, ProcessTable, Stdio } from "./fakeProcesses.js"
import * as Scripts from "./shellScripts.js"
import { parseSpawnResult } from "./spawnResult.js"

type Outcome =
  | { readonly _tag: "exit"; readonly status: ExitStatus }
  | { readonly _tag: "lost"; readonly error: ConnectionLost }
  | { readonly _tag: "timeout" }

const DEFAULT_TIMEOUT = Duration.seconds(30)

/** What a connection needs from its host. */
export interface HostRuntime {
  readonly alias: string
  readonly config: HostConfig
  readonly store: FakeFileSystem
  readonly fs: FakeFs
  readonly table: ProcessTable
  readonly journal: Array<JournalEntry>
  /** Take one scripted channel refusal, if any is pending. */
  readonly takeRefusal: () => boolean
  /** How long each file operation takes on the Clock (so a drop can land mid-operation). */
  readonly fileLatency: () => Duration.Duration
  /** A command of `kind` has reached the host: drop the connection now if that was scripted. */
  readonly reached: (kind: JournalEntry["kind"]) => Effect.Effect<void>
}

export interface ConnectionState {
  readonly id: number
  readonly closed: Deferred.Deferred<ConnectionLost>
  dropped: ConnectionLost | undefined
}

/** Bytes → lines, keeping a partial line until its newline; lossy UTF-8; strips a trailing `\r`. */
export const lineSplitter = (emit: (line: string) => Effect.Effect<void>) => {
  const decoder = new TextDecoder("utf-8", { fatal: false })
  let pending = ""
  const emitAll = (lines: ReadonlyArray<string>) =>
    Effect.forEach(lines, (line) => emit(line.endsWith("\r") ? line.slice(0, -1) : line), { discard: true })
  return {
    push: (bytes: Uint8Array) =>
      Effect.suspend(() => {
        const parts = (pending + decoder.decode(bytes, { stream: true })).split("\n")
        pending = parts.pop()!
        return emitAll(parts)
      }),
    flush: Effect.suspend(() => {
      const rest = pending + decoder.decode()
      pending = ""
      return rest === "" ? Effect.void : emitAll([rest])
    })
  }
}

export const makeConnection = (host: HostRuntime, state: ConnectionState): Connection => {
  const alias = host.alias
  const alive = Effect.suspend(() => (state.dropped === undefined ? Effect.void : Effect.fail(state.dropped)))
  const fileStep = Effect.suspend(() => {
    const latency = host.fileLatency()
    return Duration.toMillis(latency) === 0
      ? alive
      : Effect.zipRight(Effect.zipRight(alive, Effect.sleep(latency)), alive)
  })
  const record = (kind: JournalEntry["kind"], command: RemoteCommand, line: string) =>
    Effect.clockWith((clock) =>
      Effect.sync(() =>
        host.journal.push({
          kind,
          command,
          line,
          atMs: clock.unsafeCurrentTimeMillis(),
          connection: state.id
        })
      )
    )
  const openChannel = (kind: JournalEntry["kind"], command: RemoteCommand, line: string) =>
    Effect.zipRight(
      alive,
      Effect.suspend(() =>
        host.takeRefusal()
          ? Effect.fail(
              new ChannelOpenFailed({ host: alias, reason: "(SSH) Channel open failure: open failed" })
            )
          : record(kind, command, line)
      )
    )
  const killGroup = (pgid: number) => Effect.asVoid(host.table.signal({ pgid }, "KILL"))
  const timeoutOf = (options?: ExecOptions) =>
    options?.timeout === undefined ? DEFAULT_TIMEOUT : Duration.decode(options.timeout)
  /** What sshd runs for an exec request: the login shell with `-c <text>`, in the home directory. */
  const session = (text: string): ProcessSpec => ({
    argv: ["sh", "-c", text],
    env: host.table.baseEnv,
    cwd: host.table.home
  })
  /** The exec text and channel stdin for a command under the lifeline. */
  const underLifeline = (command: RemoteCommand, options?: ExecOptions) => {
    const env = toBytes(envScript(command))
    const stdin = options?.stdin === undefined ? new Uint8Array() : toBytes(options.stdin)
    return {
      text: Scripts.lifeline(render(command), env.length, stdin.length),
      stdin: concatBytes([env, stdin])
    }
  }

  const run = (
    kind: JournalEntry["kind"],
    command: RemoteCommand,
    text: string,
    stdin: Uint8Array,
    timeout: Duration.Duration
  ): Effect.Effect<ExecResult, CommandError> =>
    Effect.gen(function* () {
      yield* openChannel(kind, command, text)
      const out: Array<Uint8Array> = []
      const err: Array<Uint8Array> = []
      const stdio: Stdio = {
        stdin,
        stdout: (bytes) => Effect.sync(() => void out.push(bytes)),
        stderr: (bytes) => Effect.sync(() => void err.push(bytes))
      }
      const proc = yield* host.table.start(session(text), { stdio })
      yield* host.reached(kind)
      const outcome = yield* Effect.raceAll<Effect.Effect<Outcome>>([
        Effect.map(proc.exit, (status): Outcome => ({ _tag: "exit", status })),
        Effect.map(Deferred.await(state.closed), (error): Outcome => ({ _tag: "lost", error })),
        Effect.as(Effect.sleep(timeout), { _tag: "timeout" } as Outcome)
      ]).pipe(Effect.onInterrupt(() => (kind === "detached" ? Effect.void : killGroup(proc.pgid))))
      if (outcome._tag === "exit") {
        return {
          ...outcome.status,
          stdout: decodeLossy(concatBytes(out)),
          stderr: decodeLossy(concatBytes(err))
        }
      }
      // the lifeline kills the group when its channel goes; the detached start runs on regardless
      if (kind !== "detached") {
        yield* killGroup(proc.pgid)
        yield* proc.exit
      }
      if (outcome._tag === "lost") return yield* outcome.error
      return yield* new CommandTimeout({
        host: alias,
        command: describe(command),
        timeoutMs: Duration.toMillis(timeout)
      })
    })

  const exec = (command: RemoteCommand, options?: ExecOptions): Effect.Effect<ExecResult, CommandError> =>
    Effect.suspend(() => {
      const { text, stdin } = underLifeline(command, options)
      return run("exec", command, text, stdin, timeoutOf(options))
    })

  const stream = (
    command: RemoteCommand,
    options?: ExecOptions
  ): Stream.Stream<OutputLine | Exited, CommandError> =>
    Stream.unwrapScoped(
      Effect.gen(function* () {
        const { text, stdin } = underLifeline(command, options)
        yield* openChannel("stream", command, text)
        const mailbox = yield* Mailbox.make<OutputLine | Exited, CommandError>()
        const offer = (stream: "stdout" | "stderr") => (line: string) =>
          Effect.asVoid(mailbox.offer({ _tag: "Output", stream, line }))
        const out = lineSplitter(offer("stdout"))
        const err = lineSplitter(offer("stderr"))
        const proc = yield* Effect.acquireRelease(
          host.table.start(session(text), { stdio: { stdin, stdout: out.push, stderr: err.push } }),
          (proc) => killGroup(proc.pgid)
        )
        yield* Effect.forkScoped(
          Effect.gen(function* () {
            const status = yield* proc.exit
            yield* out.flush
            yield* err.flush
            yield* mailbox.offer({ _tag: "Exited", ...status })
            yield* mailbox.end
          })
        )
        const timeout = timeoutOf(options)
        yield* Effect.forkScoped(
          Effect.gen(function* () {
            yield* Effect.sleep(timeout)
            yield* mailbox.fail(
              new CommandTimeout({
                host: alias,
                command: describe(command),
                timeoutMs: Duration.toMillis(timeout)
              })
            )
            yield* killGroup(proc.pgid)
          })
        )
        yield* Effect.forkScoped(
          Effect.gen(function* () {
            const lost = yield* Deferred.await(state.closed)
            yield* mailbox.fail(lost)
            yield* killGroup(proc.pgid)
          })
        )
        return Mailbox.toStream(mailbox)
      })
    )

  const spawnDetached = (
    command: RemoteCommand,
    options: DetachedOptions
  ): Effect.Effect<DetachedInfo, SpawnError> =>
    Effect.gen(function* () {
      const token = options.token ?? randomBytes(8).toString("hex")
      const runDir = options.runDir.replace(/\/+$/, "")
      const env = toBytes(envScript(command))
      const text = Scripts.spawnDetached(
        render(command),
        runDir,
        options.logPath ?? `${runDir}/log`,
        token,
        env.length
      )
      const result = yield* run("detached", command, text, env, DEFAULT_TIMEOUT)
      return yield* parseSpawnResult(alias, options.runDir, token, result)
    })

  const fileError = (path: string, operation: string, reason: string) =>
    new RemoteFileError({ host: alias, path, operation, reason, notFound: reason === "No such file" })
  const withClock = <A>(f: (now: number) => A) =>
    Effect.clockWith((clock) => Effect.sync(() => f(clock.unsafeCurrentTimeMillis())))

  const files: RemoteFs = {
    stat: (path) =>
      Effect.zipRight(
        fileStep,
        Effect.sync(() => host.store.stat(path))
      ),
    read: (path, options) =>
      Effect.zipRight(
        fileStep,
        Effect.suspend(() => {
          const result = host.store.read(path, options?.offset ?? 0, options?.length)
          return result.ok
            ? Effect.succeed(result.value)
            : Effect.fail(fileError(path, "read", result.reason))
        })
      ),
    write: (path, data, options) =>
      Effect.zipRight(
        fileStep,
        Effect.flatMap(
          withClock((now) => host.store.write(path, data, now, options?.mode ?? 0o600, 0o700)),
          (result) => (result.ok ? Effect.void : Effect.fail(fileError(path, "write", result.reason)))
        )
      ),
    mkdir: (path) =>
      Effect.zipRight(
        fileStep,
        Effect.flatMap(
          withClock((now) => host.store.mkdir(path, now, 0o700)),
          (result) => (result.ok ? Effect.void : Effect.fail(fileError(path, "mkdir", result.reason)))
        )
      ),
    resolvePath: (path) =>
      Effect.zipRight(
        fileStep,
        Effect.sync(() => host.store.resolve(path))
      )
  }

  // the fake host is one machine: a forward to another host finds nothing listening there
  const forward = (port: number, to: string = "127.0.0.1") =>
    Effect.gen(function* () {
      yield* alive
      const target = to === "127.0.0.1" || to === "localhost" ? host.table.port(port) : undefined
      if (target === undefined) {
        return yield* new ForwardFailed({
          host: alias,
          port,
          reason: "(SSH) Channel open failure: Connection refused"
        })
      }
      return yield* Effect.acquireRelease(
        Effect.async<Duplex, ForwardFailed>((resume) => {
          const socket = Net.connect(target.loopbackPort, "127.0.0.1")
          socket.once("connect", () => resume(Effect.succeed(socket)))
          socket.once("error", (error) =>
            resume(Effect.fail(new ForwardFailed({ host: alias, port, reason: error.message })))
          )
        }),
        (socket) => Effect.sync(() => socket.destroy())
      )
    })

  return {
    host: host.config,
    exec,
    stream,
    spawnDetached,
    files,
    forward,
    closed: Deferred.await(state.closed)
  }
}
