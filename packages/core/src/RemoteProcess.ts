/**
 * Long-lived remote processes that outlive the connection (an inference server): start
 * detached, check, wait, stop by process group, and find again from the run directory on
 * any machine (`attach`). The run directory holds `pid`, `pgid`, `exit` (`code N` or
 * `signal NAME`) and, after `stop`, `stopped` (how it ended).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Schedule } from "effect"
import type { Connection, DetachedInfo, DetachedOptions, ExitStatus } from "./Connection.js"
import { type CommandError, type ConnectError, ProcessError, type RemoteFileError } from "./Errors.js"
import * as Liveness from "./internal/groupLiveness.js"
import * as RemoteCommand from "./RemoteCommand.js"
import * as RemoteFiles from "./RemoteFiles.js"

/** @category models */
export interface DetachedProcess extends DetachedInfo {
  /** The host alias it runs on. */
  readonly host: string
}

/** How `stop` ended the process. @category models */
export type StopOutcome = "exited-before" | "terminated" | "killed"

/** @category models */
export type ProcessStepError = CommandError | ProcessError | RemoteFileError | ConnectError

const SIGNAL_TIMEOUT = "10 seconds"

/** @category constructors */
export const spawnDetached = (
  conn: Connection,
  command: RemoteCommand.RemoteCommand,
  options: DetachedOptions
): Effect.Effect<DetachedProcess, CommandError | ProcessError> =>
  Effect.map(conn.spawnDetached(command, options), (info) => ({ ...info, host: conn.host.alias })).pipe(
    Effect.withSpan("RemoteProcess.spawnDetached", {
      attributes: { host: conn.host.alias, runDir: options.runDir }
    })
  )

// `kill -s SIG -- -PGID` is the one spelling that dash's builtin, bash's builtin and procps
// kill all accept (dash rejects `kill -0 -- -PGID`; procps needs the `--`).
const sendSignal = (conn: Connection, pgid: number, signal: string) =>
  conn.exec(RemoteCommand.make(["kill", "-s", signal, "--", `-${pgid}`]), { timeout: SIGNAL_TIMEOUT })

/**
 * True while some process of the group runs. Zombies do not count: they hold no memory, GPU or
 * port, and hosts whose init reaps slowly (or never: Docker without `--init`) keep them. One
 * exec of `ps -A -o pgid= -o stat=`; where `ps` is missing or unusable, `kill -s 0 -- -PGID`
 * (which counts zombies).
 *
 * @category inspecting
 */
export const isAlive = (
  conn: Connection,
  proc: { readonly pgid: number }
): Effect.Effect<boolean, CommandError> =>
  conn.exec(RemoteCommand.make(Liveness.psArgv), { timeout: SIGNAL_TIMEOUT }).pipe(
    Effect.flatMap((table) => {
      const runs = table.exitCode === 0 ? Liveness.groupRuns(table.stdout, proc.pgid) : undefined
      return runs !== undefined
        ? Effect.succeed(runs)
        : Effect.map(sendSignal(conn, proc.pgid, "0"), (result) => result.exitCode === 0)
    })
  )

/** Poll `isAlive` until the group is gone (true) or `within` has passed (false). */
const goneWithin = (
  conn: Connection,
  proc: { readonly pgid: number },
  within: Duration.Duration,
  poll: Duration.DurationInput
) =>
  isAlive(conn, proc).pipe(
    Effect.repeat({ schedule: Schedule.spaced(poll), until: (alive) => !alive }),
    Effect.as(true),
    Effect.timeoutTo({ duration: within, onSuccess: (gone) => gone, onTimeout: () => false })
  )

/** How `kill` left the group. @category models */
export type KillOutcome = "gone" | "still-running"

const KILL_POLL = Duration.millis(50)

/**
 * SIGKILL the whole group at once (no grace: for what is left of something already failed)
 * and wait up to `within` (default 5 s) until none of it runs, zombies aside (see `isAlive`).
 * One round trip where the host has a POSIX shell; otherwise `kill`, then `isAlive` polls.
 * Fails only with the connection's errors.
 *
 * @category stopping
 */
export const kill = Effect.fn("RemoteProcess.kill")(function* (
  conn: Connection,
  proc: { readonly pgid: number },
  options: { readonly within?: Duration.DurationInput } = {}
) {
  yield* Effect.annotateCurrentSpan({ host: conn.host.alias, pgid: proc.pgid })
  const within = Duration.decode(options.within ?? "5 seconds")
  const polls = Math.max(1, Math.ceil(Duration.toMillis(within) / Duration.toMillis(KILL_POLL)))
  const pgid = String(proc.pgid)
  const result = yield* conn.exec(
    RemoteCommand.make(["sh", "-c", Liveness.killAndConfirmScript, "mlops-kill", pgid, String(polls)]),
    { timeout: Duration.sum(within, Duration.decode(SIGNAL_TIMEOUT)) }
  )
  if (result.exitCode === 0) return "gone" satisfies KillOutcome
  if (result.exitCode !== 127) return "still-running" satisfies KillOutcome
  // no shell (fake hosts): the same steps, one exec each
  yield* sendSignal(conn, proc.pgid, "KILL")
  return (yield* goneWithin(conn, proc, within, KILL_POLL)) ? "gone" : "still-running"
}) as (
  conn: Connection,
  proc: { readonly pgid: number },
  options?: { readonly within?: Duration.DurationInput }
) => Effect.Effect<KillOutcome, CommandError>

/** `code 3` / `signal TERM` (a bare number is read as an exit code). */
export const parseExitFile = (text: string): ExitStatus | undefined => {
  const trimmed = text.trim()
  const code = /^(?:code\s+)?(\d+)$/.exec(trimmed)
  if (code !== null) return { exitCode: Number(code[1]), signal: null }
  const signal = /^signal\s+(?:SIG)?([A-Z0-9]+)$/i.exec(trimmed)
  if (signal !== null) return { exitCode: null, signal: signal[1]!.toUpperCase() }
  return undefined
}

/** The recorded exit status; `undefined` while running or when none was recorded (killed with its wrapper). @category inspecting */
export const exitStatus = (
  conn: Connection,
  proc: { readonly runDir: string }
): Effect.Effect<ExitStatus | undefined, RemoteFileError | ConnectError> =>
  Effect.map(RemoteFiles.readTextIfExists(conn, `${proc.runDir}/exit`), (text) =>
    text === undefined ? undefined : parseExitFile(text)
  )

/** @category models */
export interface WaitOptions {
  /** Between checks; default 1 s. */
  readonly poll?: Duration.DurationInput
  /** Give up (ProcessError) after this; default: wait forever. */
  readonly timeout?: Duration.DurationInput
}

/**
 * Wait until every process of the group is gone; returns the recorded exit status (or
 * `undefined` when none was written, e.g. the group was SIGKILLed).
 *
 * @category inspecting
 */
export const wait = (
  conn: Connection,
  proc: DetachedProcess,
  options: WaitOptions = {}
): Effect.Effect<ExitStatus | undefined, ProcessStepError> => {
  // The group, not just the main process: the supervisor writes `exit` and then leaves, and
  // children the command left behind still hold resources (GPU memory, the port).
  const check = Effect.gen(function* () {
    if (yield* isAlive(conn, proc)) return { done: false, status: undefined }
    return { done: true, status: yield* exitStatus(conn, proc) }
  })
  const polled = check.pipe(
    Effect.repeat(
      Schedule.identity<{ readonly done: boolean; readonly status: ExitStatus | undefined }>().pipe(
        Schedule.zipLeft(Schedule.spaced(options.poll ?? "1 second")),
        Schedule.whileInput((r) => !r.done)
      )
    ),
    Effect.map((r) => r.status)
  )
  if (options.timeout === undefined) return polled
  const timeout = Duration.decode(options.timeout)
  return Effect.timeoutFail(polled, {
    duration: timeout,
    onTimeout: () =>
      new ProcessError({
        host: proc.host,
        runDir: proc.runDir,
        reason: `still running after ${Duration.format(timeout)} (pgid ${proc.pgid})`
      })
  })
}

/** @category models */
export interface StopOptions {
  /** How long SIGTERM gets before SIGKILL; default 10 s. */
  readonly grace?: Duration.DurationInput
  /** Between liveness checks; default 250 ms. */
  readonly poll?: Duration.DurationInput
}

/**
 * SIGTERM to the whole group, up to `grace` to exit, then SIGKILL, then confirm it is gone.
 * Writes the outcome to `<runDir>/stopped`.
 *
 * @category stopping
 */
export const stop = Effect.fn("RemoteProcess.stop")(function* (
  conn: Connection,
  proc: DetachedProcess,
  options: StopOptions = {}
) {
  yield* Effect.annotateCurrentSpan({ host: proc.host, pgid: proc.pgid })
  const poll = options.poll ?? "250 millis"
  const record = (outcome: StopOutcome) =>
    Effect.as(conn.files.write(`${proc.runDir}/stopped`, `${outcome}\n`), outcome)
  if (!(yield* isAlive(conn, proc))) return yield* record("exited-before")
  // Exit 1 here means the group died in between: the liveness checks below decide.
  yield* sendSignal(conn, proc.pgid, "TERM")
  if (yield* goneWithin(conn, proc, Duration.decode(options.grace ?? "10 seconds"), poll)) {
    return yield* record("terminated")
  }
  yield* sendSignal(conn, proc.pgid, "KILL")
  if (yield* goneWithin(conn, proc, Duration.seconds(10), poll)) return yield* record("killed")
  return yield* new ProcessError({
    host: proc.host,
    runDir: proc.runDir,
    reason: `process group ${proc.pgid} still alive 10 s after SIGKILL`
  })
}) as (
  conn: Connection,
  proc: DetachedProcess,
  options?: StopOptions
) => Effect.Effect<StopOutcome, ProcessStepError>

/**
 * Read a run directory back into a `DetachedProcess` (for status/stop from another machine).
 *
 * @category constructors
 */
export const attach = Effect.fn("RemoteProcess.attach")(function* (
  conn: Connection,
  runDir: string,
  options: { readonly logPath?: string } = {}
) {
  const dir = yield* conn.files.resolvePath(runDir)
  const number = (name: string) =>
    Effect.flatMap(RemoteFiles.readTextIfExists(conn, `${dir}/${name}`), (text) => {
      const value = text === undefined ? Number.NaN : Number(text.trim())
      return Number.isInteger(value) && value > 0
        ? Effect.succeed(value)
        : Effect.fail(
            new ProcessError({
              host: conn.host.alias,
              runDir: dir,
              reason:
                text === undefined
                  ? `no ${name} file: the process was not started here or its run directory was removed`
                  : `unreadable ${name} file: ${JSON.stringify(text.slice(0, 40))}`
            })
          )
    })
  const pid = yield* number("pid")
  const pgid = yield* number("pgid")
  const logPath =
    options.logPath === undefined ? `${dir}/log` : yield* conn.files.resolvePath(options.logPath)
  return { host: conn.host.alias, pid, pgid, runDir: dir, logPath } satisfies DetachedProcess
}) as (
  conn: Connection,
  runDir: string,
  options?: { readonly logPath?: string }
) => Effect.Effect<DetachedProcess, ProcessError | RemoteFileError | ConnectError>
