/**
 * A container tool on a host (the `docker` CLI of a Docker Engine, or `podman`), driven over
 * the host's connection: whether this user may use it, its images (inspected and pulled with
 * progress), containers started detached or run once, their records (state, exit code,
 * `OOMKilled`, start time), their processes on the host, stop/kill/remove, and the containers
 * carrying a label (every user's, on a shared daemon).
 *
 * Every run is given `--pull never`: an image is pulled only by `pull`, as a step of its own.
 * Environment values never go on a command line: `run` passes variables by name (`-e NAME`)
 * and the values travel in the command's environment, outside any argv (`RemoteCommand`).
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { Duration, Effect, Either, type Schedule, Stream } from "effect"
import type { Connection, ExecResult, ExitStatus } from "./Connection.js"
import type { ConnectionPool, GetError } from "./ConnectionPool.js"
import {
  type ContainerCommandFailed,
  ContainerOutputUnreadable,
  type ContainerRunRefused,
  ContainerStillRunning,
  type ContainerToolUnavailable,
  type ImageNotFound,
  type ImagePullFailed
} from "./ContainerErrors.js"
import type { ContainerTool } from "./ContainerSettings.js"
import type { CommandError } from "./Errors.js"
import * as commands from "./internal/containerCommands.js"
import * as Watch from "./internal/processWatch.js"
import * as RemoteCommand from "./RemoteCommand.js"

export type { ContainerInfo, ImageInfo, Mount, RunOptions } from "./internal/containerCommands.js"
export { gpuArgs, normalizeId, runRefusal, shortId } from "./internal/containerCommands.js"

/**
 * `run` and its options as the client gives them to `tool` (every run `--pull never`: an image
 * is pulled only by `pull`), without the tool itself.
 *
 * @category commands
 */
export const runArgv = (tool: ContainerTool, options: commands.RunOptions): Array<string> => {
  const [run, ...rest] = commands.runArgs(tool, options)
  return [run ?? "run", "--pull", "never", ...rest]
}

/**
 * `mlops-<name>-<8 hex of its run directory>`: the name of a container of a deployment or job,
 * unique per user and state directory on a shared daemon.
 *
 * @category constructors
 */
export const containerName = (name: string, runDir: string): string =>
  `mlops-${name}-${createHash("sha256").update(runDir).digest("hex").slice(0, 8)}`

/** What the client's calls fail with besides their own refusals. @category models */
export type Failure =
  | ContainerToolUnavailable
  | ContainerCommandFailed
  | ContainerOutputUnreadable
  | CommandError

/** How long one `wait` is held before it is asked again. */
const WAIT_BOUND: Duration.DurationInput = "10 seconds"

/** Queries answer in seconds. */
const QUERY_TIMEOUT: Duration.DurationInput = "30 seconds"
/** Creating a container copies nothing on overlay storage, but a GPU hook or a slow disk can take a while. */
const RUN_TIMEOUT: Duration.DurationInput = "2 minutes"
/** A model server image is 10–30 GB. */
const PULL_TIMEOUT: Duration.DurationInput = "90 minutes"

/** @category models */
export interface ContainerClient {
  readonly tool: ContainerTool
  /** The daemon's version (docker) or the tool's (podman): it answers and this user may use it. */
  readonly version: Effect.Effect<string, Failure>
  /** The image a reference names on the host; undefined when it is not there. */
  readonly image: (ref: string) => Effect.Effect<commands.ImageInfo | undefined, Failure>
  /** Pull it, each line of the tool's progress to `onLine`; the image as pulled. */
  readonly pull: (
    ref: string,
    onLine: (line: string) => Effect.Effect<void>
  ) => Effect.Effect<commands.ImageInfo, ImageNotFound | ImagePullFailed | Failure>
  /** The tool's `run` as a command (for a program run once in the foreground, `--rm`); values of `env` travel outside its argv. */
  readonly runCommand: (
    options: commands.RunOptions,
    env?: Readonly<Record<string, string>>
  ) => RemoteCommand.RemoteCommand
  /**
   * Start a container detached; its id. A refusal the tool explains (no GPU toolkit, a name in
   * use) is `ContainerRunRefused`; a container it created but could not start stays behind
   * (its record says why) and is reported the same way.
   */
  readonly start: (
    options: Omit<commands.RunOptions, "detach">,
    env?: Readonly<Record<string, string>>
  ) => Effect.Effect<string, ContainerRunRefused | Failure>
  /** A container's record; undefined when there is no such container. */
  readonly inspect: (nameOrId: string) => Effect.Effect<commands.ContainerInfo | undefined, Failure>
  /** Every container (running or not) carrying the label `key`, every user's. */
  readonly list: (key: string) => Effect.Effect<ReadonlyArray<commands.ContainerInfo>, Failure>
  /** TERM, then KILL after `grace`; done when it no longer runs. */
  readonly stop: (
    nameOrId: string,
    grace: Duration.DurationInput
  ) => Effect.Effect<void, ContainerStillRunning | Failure>
  readonly kill: (nameOrId: string) => Effect.Effect<void, Failure>
  /** Remove it (running or not); done when it is gone or was not there. */
  readonly remove: (nameOrId: string) => Effect.Effect<void, Failure>
  /** Its processes' pids on the host (what `nvidia-smi` there names); empty when it does not run. */
  readonly processes: (nameOrId: string) => Effect.Effect<ReadonlyArray<number>, Failure>
}

/** The client for `tool` on the connection's host. @category constructors */
export const clientOf = (conn: Connection, tool: ContainerTool): ContainerClient => {
  const host = conn.host.alias
  const exec = (
    argv: ReadonlyArray<string>,
    timeout: Duration.DurationInput = QUERY_TIMEOUT,
    env: Readonly<Record<string, string>> = {}
  ): Effect.Effect<ExecResult, ContainerToolUnavailable | CommandError> =>
    Effect.flatMap(conn.exec(RemoteCommand.make([tool, ...argv], { env }), { timeout }), (result) => {
      const down = commands.unavailable(host, tool, result)
      return down === undefined ? Effect.succeed(result) : Effect.fail(down)
    })
  const unreadable = (argv: ReadonlyArray<string>, reason: string) =>
    new ContainerOutputUnreadable({ host, command: `${tool} ${argv.slice(0, 2).join(" ")}`, reason })
  const failed = (argv: ReadonlyArray<string>, result: ExecResult) =>
    commands.failed(host, [tool, ...argv], result)

  const image = (ref: string) =>
    Effect.gen(function* () {
      const argv = ["image", "inspect", "--format", commands.IMAGE_FORMAT, ref]
      const result = yield* exec(argv)
      if (commands.isNoSuch(result)) return undefined
      if (result.exitCode !== 0) return yield* failed(argv, result)
      return yield* Either.match(commands.parseImage(result.stdout), {
        onLeft: (reason) => Effect.fail(unreadable(argv, reason)),
        onRight: Effect.succeed
      })
    })

  const inspectMany = (ids: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      if (ids.length === 0) return []
      const argv = ["container", "inspect", "--format", commands.CONTAINER_FORMAT, ...ids]
      const result = yield* exec(argv)
      // one that vanished meanwhile: the others are still printed
      if (result.exitCode !== 0 && !commands.isNoSuch(result)) return yield* failed(argv, result)
      return yield* Either.match(commands.parseContainers(result.stdout), {
        onLeft: (reason) => Effect.fail(unreadable(argv, reason)),
        onRight: Effect.succeed
      })
    })

  const inspect = (nameOrId: string) => Effect.map(inspectMany([nameOrId]), (found) => found[0])

  const runOptions = (options: commands.RunOptions) => runArgv(tool, options)

  return {
    tool,
    version: Effect.gen(function* () {
      const format = tool === "docker" ? "{{.Server.Version}}" : "{{.Client.Version}}"
      const argv = ["version", "--format", format]
      const result = yield* exec(argv)
      if (result.exitCode !== 0) return yield* failed(argv, result)
      return result.stdout.trim()
    }),
    image,
    pull: (ref, onLine) =>
      Effect.gen(function* () {
        const argv = ["pull", ref]
        const stderr: Array<string> = []
        let exit: number | null = null
        yield* conn.stream(RemoteCommand.make([tool, ...argv]), { timeout: PULL_TIMEOUT }).pipe(
          Stream.runForEach((element) => {
            if (element._tag === "Exited") {
              exit = element.exitCode
              return Effect.void
            }
            if (element.stream === "stderr") stderr.push(element.line)
            return element.line.trim() === "" ? Effect.void : onLine(element.line)
          })
        )
        const result: ExecResult = { exitCode: exit, signal: null, stdout: "", stderr: stderr.join("\n") }
        const down = commands.unavailable(host, tool, result)
        if (down !== undefined) return yield* down
        if (exit !== 0) return yield* commands.pullFailure(host, tool, ref, result.stderr)
        const pulled = yield* image(ref)
        if (pulled === undefined) return yield* unreadable(argv, `${ref} is not there after the pull`)
        return pulled
      }),
    runCommand: (options, env = {}) => RemoteCommand.make([tool, ...runOptions(options)], { env }),
    start: (options, env = {}) =>
      Effect.gen(function* () {
        const argv = runOptions({ ...options, detach: true })
        const result = yield* exec(argv, RUN_TIMEOUT, env)
        if (result.exitCode === 0) {
          const id = result.stdout.trim().split("\n").at(-1)?.trim() ?? ""
          if (!/^[0-9a-f]{12,64}$/.test(id)) return yield* unreadable(argv, `no container id in "${id}"`)
          return id
        }
        const refused = commands.runRefusal(host, tool, options.image, result.stderr)
        return yield* refused ?? failed(argv, result)
      }),
    inspect,
    list: (key) =>
      Effect.gen(function* () {
        const argv = ["ps", "-a", "-q", "--no-trunc", "--filter", `label=${key}`]
        const result = yield* exec(argv)
        if (result.exitCode !== 0) return yield* failed(argv, result)
        const ids = result.stdout
          .split("\n")
          .map((line) => line.trim())
          .filter((line) => line !== "")
        return yield* inspectMany(ids)
      }),
    stop: (nameOrId, grace) =>
      Effect.gen(function* () {
        const seconds = Math.max(0, Math.ceil(Duration.toSeconds(Duration.decode(grace))))
        const argv = ["stop", "-t", String(seconds), nameOrId]
        const result = yield* exec(argv, Duration.sum(Duration.seconds(seconds), QUERY_TIMEOUT))
        if (result.exitCode !== 0 && !commands.isNoSuch(result)) return yield* failed(argv, result)
        const after = yield* inspect(nameOrId)
        if (after?.running === true)
          return yield* new ContainerStillRunning({
            host,
            tool,
            container: nameOrId,
            fix: `look at it (\`${tool} inspect ${nameOrId}\`) and remove it by hand (\`${tool} rm -f ${nameOrId}\`)`
          })
      }),
    kill: (nameOrId) =>
      Effect.gen(function* () {
        const argv = ["kill", nameOrId]
        const result = yield* exec(argv)
        // not running or gone: nothing to kill
        if (
          result.exitCode !== 0 &&
          !commands.isNoSuch(result) &&
          // podman 4.3: "can only kill running containers ... container state improper"
          !/is not running|not running|container state improper/i.test(result.stderr)
        )
          return yield* failed(argv, result)
      }),
    remove: (nameOrId) =>
      Effect.gen(function* () {
        const argv = ["rm", "-f", nameOrId]
        const result = yield* exec(argv)
        if (result.exitCode !== 0 && !commands.isNoSuch(result)) return yield* failed(argv, result)
      }),
    processes: (nameOrId) =>
      Effect.gen(function* () {
        const argv = tool === "podman" ? ["top", nameOrId, "hpid"] : ["top", nameOrId, "-o", "pid"]
        const result = yield* exec(argv)
        // a container that is not running has no processes
        if (result.exitCode !== 0) return []
        return commands.parsePids(result.stdout)
      })
  }
}

const SIGNALS: Readonly<Record<number, string>> = {
  1: "HUP",
  2: "INT",
  3: "QUIT",
  6: "ABRT",
  7: "BUS",
  9: "KILL",
  11: "SEGV",
  15: "TERM"
}

/**
 * How a container that no longer runs ended: its exit code, or the signal its init reports as
 * 128 + n (`137`: KILL); undefined while it runs or when it never started.
 *
 * @category inspecting
 */
export const exitStatusOf = (container: commands.ContainerInfo): ExitStatus | undefined => {
  if (container.running || container.status === "created") return undefined
  const code = container.exitCode
  if (code > 128 && code <= 128 + 64)
    return { exitCode: null, signal: SIGNALS[code - 128] ?? String(code - 128) }
  return { exitCode: code, signal: null }
}

/** @category models */
export type WatchEvent =
  | { readonly _tag: "Disconnected"; readonly reason: string }
  | { readonly _tag: "Reconnected" }
  | { readonly _tag: "Exited"; readonly status: ExitStatus | undefined }

/**
 * Follow a container until it no longer runs (the last element is `Exited`, with how it ended),
 * with the tool's `wait` (held at most `poll`, default 10 s, then again) and its record once it
 * returns, on the pool's connection to `alias`, across dropped connections (re-acquired by
 * `reconnect`).
 *
 * @category following
 */
export const watch = (
  alias: string,
  tool: ContainerTool,
  container: string,
  options: {
    readonly poll?: Duration.DurationInput
    readonly reconnect?: Schedule.Schedule<unknown, unknown>
  } = {}
): Stream.Stream<WatchEvent, Failure | GetError, ConnectionPool> => {
  const record = (conn: Connection) => clientOf(conn, tool).inspect(container)
  // the tool's own `wait` answers the moment the container ends: one command held open, bounded
  // so that a dropped connection is noticed, instead of an `inspect` per poll
  const ended = (conn: Connection) =>
    conn.exec({ argv: [tool, "wait", container], env: {} }, { timeout: options.poll ?? WAIT_BOUND }).pipe(
      Effect.as(true),
      Effect.catchTag("CommandTimeout", () => Effect.succeed(false))
    )
  return Watch.watch(
    alias,
    container,
    {
      exitPoll: "100 millis",
      alivePoll: "30 seconds",
      ...(options.reconnect === undefined ? {} : { reconnect: options.reconnect })
    },
    {
      // a container that vanished (removed) ended without a word on how
      exitStatus: (conn) =>
        Effect.gen(function* () {
          if (!(yield* ended(conn))) return undefined
          const info = yield* record(conn)
          return info === undefined
            ? { exitCode: null, signal: null }
            : info.running
              ? undefined
              : (exitStatusOf(info) ?? { exitCode: null, signal: null })
        }),
      isAlive: (conn) => Effect.map(record(conn), (info) => info?.running === true),
      // the tool's `wait` is the sign already
      mayHaveEnded: () => Effect.never
    }
  )
}
