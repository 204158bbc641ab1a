/**
 * Session channels on an ssh2 client: opening under the channel budget with a retry when sshd
 * refuses (MaxSessions), collecting or streaming output, and a release that makes the remote
 * process group die (EOF on the lifeline) before the budget permit is returned.
 *
 * @internal
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Clock, Deferred, Effect, Exit, FiberId, Runtime, Schedule, type Scope, Stream } from "effect"
import type { ExecResult, Exited, ExitStatus, OutputLine } from "../Connection.js"
import { ChannelOpenFailed, type ConnectionLost } from "../Errors.js"
import { boundedWait } from "./boundedWait.js"
import type { ExecFn } from "./remoteHelper.js"
import type { ExecChannel } from "./remoteHelperChannel.js"
import { type Endpoint, isChannelOpenFailure, isDisconnected, lost, messageOf } from "./sshErrors.js"

/** A budget permit's worth of channel: opened, tracked until sshd closes it. */
export interface OpenChannel {
  readonly channel: ExecChannel
  /** How the remote command ended; `undefined` when the channel closed without an exit status. */
  readonly ended: Deferred.Deferred<ExitStatus | undefined>
}

/** When the connection's session channels last closed: a refused open waits as long as slots keep freeing. */
export interface SlotActivity {
  lastFreedMs: number
}

/** How long a refused open keeps trying after the connection last freed a slot (or since it began). */
const REFUSED_PATIENCE_MS = 10_000
/** And at most this long in all, however busy the connection (then `ChannelOpenFailed` with its fix). */
const REFUSED_LIMIT_MS = 60_000

/**
 * sshd refuses a session channel when MaxSessions is below our budget: retry (jittered, so
 * waiters do not open in lockstep) while other commands free their slots, until no slot has
 * freed for about 10 s (so a long queue under load still drains; a slot held for good fails),
 * at most a minute in all.
 * The retrying is interruptible, so a command's timeout is not held up by it.
 */
const retryRefused = (slots: SlotActivity, startedMs: number) =>
  Schedule.exponential("20 millis").pipe(
    Schedule.union(Schedule.spaced("200 millis")),
    Schedule.jittered,
    Schedule.checkEffect(() =>
      Effect.map(
        Clock.currentTimeMillis,
        (now) =>
          now - Math.max(startedMs, slots.lastFreedMs) < REFUSED_PATIENCE_MS &&
          now - startedMs < REFUSED_LIMIT_MS
      )
    )
  )

const REFUSED_FIX =
  "sshd's MaxSessions is below the channel budget: lower MLOPS_MAX_CHANNELS (maxChannels), or raise MaxSessions in the host's sshd_config"

/**
 * Listen for the exit status and the close at once, in the open callback: a short command can
 * exit (and its channel close) before the fiber that asked for it resumes.
 */
const track = (channel: ExecChannel): OpenChannel => {
  const ended = Deferred.unsafeMake<ExitStatus | undefined>(FiberId.none)
  let status: ExitStatus | undefined
  channel.on("exit", (code: number | null, signal?: string) => {
    status = exitStatus(code, signal)
  })
  channel.on("close", () => Deferred.unsafeDone(ended, Exit.succeed(status)))
  channel.on("error", () => {})
  return { channel, ended }
}

/**
 * One exec request (`exec`: ssh2's, or the connection's remote helper). `onOpen` sees every channel that opens, before it is handed on; `late`
 * says the request was interrupted meanwhile (the caller must release it, not leak it).
 */
const openRaw = (
  exec: ExecFn,
  endpoint: Pick<Endpoint, "alias">,
  line: string,
  onOpen: (open: OpenChannel, late: boolean) => void
) =>
  Effect.async<OpenChannel, ChannelOpenFailed | ConnectionLost>((resume) => {
    let cancelled = false
    try {
      exec(line, (error, channel) => {
        if (error || channel === undefined) {
          if (cancelled) return
          return resume(
            Effect.fail(
              error !== undefined && isDisconnected(error)
                ? lost(endpoint, error)
                : new ChannelOpenFailed({ host: endpoint.alias, reason: messageOf(error ?? "no channel") })
            )
          )
        }
        const open = track(channel)
        onOpen(open, cancelled)
        if (!cancelled) resume(Effect.succeed(open))
      })
    } catch (error) {
      resume(Effect.fail(lost(endpoint, error)))
    }
    return Effect.sync(() => {
      cancelled = true
    })
  })

const exitStatus = (code: number | null | undefined, signal: string | undefined): ExitStatus | undefined => {
  if (typeof code === "number") return { exitCode: code, signal: null }
  if (typeof signal === "string") return { exitCode: null, signal: signal.replace(/^SIG/, "") }
  return undefined
}

/**
 * Release: EOF on stdin ends the lifeline, which kills the remote group; sshd then closes
 * the channel (and frees the session slot). Output is resumed so `close` can fire.
 */
const release = (open: OpenChannel, slots: SlotActivity) =>
  Effect.flatMap(Deferred.isDone(open.ended), (done) => {
    if (done) return freed(slots)
    open.channel.resume()
    open.channel.stderr.resume()
    open.channel.end()
    // a release runs uninterruptibly (a command whose escaped child holds its output would
    // otherwise hold the release until that child exits)
    return Deferred.await(open.ended).pipe(
      boundedWait("5 seconds"),
      Effect.ignore,
      Effect.zipRight(Effect.sync(() => open.channel.close())),
      Effect.zipRight(freed(slots))
    )
  })

/** Note that a session slot of the connection has just been freed. */
export const freed = (slots: SlotActivity): Effect.Effect<void> =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    slots.lastFreedMs = now
  })

/**
 * Open an exec channel (retrying while sshd refuses it), released by the scope. Opening is
 * interruptible; a channel that opens after an interruption is released all the same.
 */
export const openChannel = (
  exec: ExecFn,
  endpoint: Pick<Endpoint, "alias">,
  line: string,
  slots: SlotActivity
): Effect.Effect<OpenChannel, ChannelOpenFailed | ConnectionLost, Scope.Scope> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const startedMs = yield* Clock.currentTimeMillis
      // ssh2 hands the channel to a callback: a late one is released through this runtime
      const runInBackground = Runtime.runFork(yield* Effect.runtime<never>())
      // the channel of an interrupted attempt: released here, it would otherwise hold a slot
      let opened: OpenChannel | undefined
      const onOpen = (open: OpenChannel, late: boolean) => {
        if (late) runInBackground(release(open, slots))
        else opened = open
      }
      const open = yield* restore(
        openRaw(exec, endpoint, line, onOpen).pipe(
          Effect.retry({ schedule: retryRefused(slots, startedMs), while: isRefused }),
          Effect.mapError((e) => (isRefused(e) ? new ChannelOpenFailed({ ...e, fix: REFUSED_FIX }) : e))
        )
      ).pipe(Effect.onInterrupt(() => (opened === undefined ? Effect.void : release(opened, slots))))
      yield* Effect.addFinalizer(() => release(open, slots))
      return open
    })
  )

const isRefused = (error: ChannelOpenFailed | ConnectionLost): error is ChannelOpenFailed =>
  error._tag === "ChannelOpenFailed" && isChannelOpenFailure(error.reason)

const decoder = () => new TextDecoder("utf-8", { fatal: false })

/**
 * Write stdin (if any). Under the lifeline it is not ended: the end of stdin is the lifeline's
 * signal. `end` sends EOF after it (a script that reads its stdin to the end).
 */
export const writeStdin = (open: OpenChannel, stdin: Uint8Array, options: { readonly end?: boolean } = {}) =>
  Effect.sync(() => {
    if (stdin.length > 0) open.channel.write(stdin)
    if (options.end === true) open.channel.end()
  })

/** Run to completion, draining stdout and stderr concurrently. */
export const collect = (
  open: OpenChannel,
  endpoint: Pick<Endpoint, "alias">
): Effect.Effect<ExecResult, ConnectionLost> =>
  Effect.gen(function* () {
    const stdout: Array<Buffer> = []
    const stderr: Array<Buffer> = []
    open.channel.on("data", (chunk: Buffer) => stdout.push(chunk))
    open.channel.stderr.on("data", (chunk: Buffer) => stderr.push(chunk))
    const status = yield* Deferred.await(open.ended)
    if (status === undefined)
      return yield* lost(endpoint, new Error("the connection closed while the command ran"))
    return {
      ...status,
      stdout: decoder().decode(Buffer.concat(stdout)),
      stderr: decoder().decode(Buffer.concat(stderr))
    }
  })

/** Output lines from both pipes (merged as they come), then one `Exited`. */
export const lines = (
  open: OpenChannel,
  endpoint: Pick<Endpoint, "alias">
): Stream.Stream<OutputLine | Exited, ConnectionLost> => {
  const pipe = (name: "stdout" | "stderr") =>
    NodeStream.fromReadable<ConnectionLost, Uint8Array>(
      () => (name === "stdout" ? open.channel : open.channel.stderr),
      (error) => lost(endpoint, error),
      // the channel is ended by `release` (EOF first), not destroyed under our feet
      { closeOnDone: false }
    ).pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.map((line): OutputLine => ({ _tag: "Output", stream: name, line }))
    )
  const exited = Effect.flatMap(Deferred.await(open.ended), (status) =>
    status === undefined
      ? Effect.fail(lost(endpoint, new Error("the connection closed while the command ran")))
      : Effect.succeed<Exited>({ _tag: "Exited", ...status })
  )
  return Stream.merge(pipe("stdout"), pipe("stderr")).pipe(Stream.concat(Stream.fromEffect(exited)))
}
