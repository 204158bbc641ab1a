/**
 * A server in a container of an image on the SSH host (docker or podman): the placement for
 * what an image runtime makes (`Runtime.InImage`).
 *
 * The container, as users would set it up by hand (the engines' own `docker run` lines), and
 * why:
 * - host networking (`--network host`): the server listens on the host's port, as it would
 *   without a container, so the port check, the tunnel and readiness are unchanged;
 * - the GPUs by id (`--gpus '"device=0,1"'`, podman's CDI `--device nvidia.com/gpu=0`): the
 *   visible GPUs up to the last one the launch uses (the engine inside picks among them as it
 *   would on the host; `CUDA_VISIBLE_DEVICES` in the launch's environment chooses them);
 * - a private `/dev/shm` of `32g` by default (`"shm"` in hosts.json, `--shm-size`): docker's
 *   64 MB default breaks NCCL and PyTorch's shared memory, and `--ipc host` (`"shm": "host"`)
 *   shares the host's `/dev/shm`, which the size cannot bound and which long-running servers
 *   have filled;
 * - the run directory mounted at its own path (the engine's output appended to the
 *   deployment's log there, so following, the classifier, `logs -f` and resuming after a cut
 *   work as on a plain host), the model directory read-only at its own path, the engine's
 *   caches (Hugging Face, Triton, vLLM's compile cache) read-write at their host paths with the
 *   variables that name them set;
 * - `--init`: a Python server as pid 1 would ignore the stop's TERM;
 * - labels naming the deployment, its run directory, this start's token and the image, and a
 *   name derived from the deployment and its run directory (`mlops-<name>-<hash>`), unique per
 *   user and state directory on a shared daemon.
 *
 * Its status is the tool's record of the container (running, exit code, `OOMKilled`, start
 * time); a stop is the tool's stop with a grace period, then the container is removed, then the
 * GPU-memory check as for a process group. The run directory holds `container` (the tool, the
 * container's name and id, the image), `token`, and while a start is under way `starting`.
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import { ConnectionPool, defaultReconnect, type GetError, isTransient } from "@mlops/core/ConnectionPool"
import type { ContainerError } from "@mlops/core/ContainerErrors"
import * as ContainerSettings from "@mlops/core/ContainerSettings"
import * as Containers from "@mlops/core/Containers"
import type { CommandError, ConnectError, ProbeFailed, RemoteFileError } from "@mlops/core/Errors"
import { ProcessError } from "@mlops/core/Errors"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import { Effect, Either, Option, Schema, Stream } from "effect"
import * as Deployment from "./Deployment.js"
import { Fix, LaunchFailure, renderFix } from "./Failures.js"
import * as GpuRelease from "./internal/gpuRelease.js"
import { absolute } from "./internal/hostPaths.js"
import { startRefusals } from "./internal/logs/signatures/containers.js"
import {
  InvalidPlacement,
  type Kind,
  type Placed,
  type Placement,
  type Reporter,
  type SpawnRequest,
  type Spec,
  type WatchEvent
} from "./Placement.js"
import type { InImage } from "./Runtime.js"
import * as ServerCommand from "./ServerCommand.js"

/** The kind's name, in specs and records. @category constants */
export const name = "container"

/** The label every container mlops starts carries: the deployment's name. @category constants */
export const deploymentLabel = "mlops.deployment"

/** The container ended in a way its log does not tell: the kernel's OOM killer, or it never started. @category errors */
export class ContainerEnded extends Schema.TaggedError<ContainerEnded>()("ContainerEnded", {
  host: Schema.String,
  container: Schema.String,
  /** The tool's words: `exited 137 (OOMKilled)`, `could not start: …`. */
  state: Schema.String,
  /** What the log says went wrong, when it says. */
  failure: Schema.optional(LaunchFailure),
  fix: Fix
}) {
  override get message() {
    const log = this.failure === undefined ? "" : `${this.failure.message}; `
    return `${log}container ${this.container} on ${this.host}: ${this.state} (fix: ${renderFix(this.fix)})`
  }
}

/** What it fails with: the tool's errors, its record's, the connection's. @category models */
export type Error =
  | ContainerError
  | ContainerEnded
  | ProcessError
  | RemoteFileError
  | ConnectError
  | CommandError
  | ProbeFailed

/** A container spec: its shared memory, over the host entry's. @category models */
export const ContainerSpec = Schema.Struct({
  kind: Schema.Literal(name),
  shm: Schema.optional(ContainerSettings.ShmSetting)
})

/** The spec (the CLI's `--shm-size`: over the host entry's `"shm"`). @category constructors */
export const spec = (o: { readonly shm?: string } = {}): Spec => ({
  kind: name,
  ...(o.shm === undefined ? {} : { shm: o.shm })
})

/** What the run directory records of the container. */
const ContainerRecord = Schema.Struct({
  tool: ContainerSettings.ContainerTool,
  name: Schema.String,
  id: Schema.String,
  image: Schema.String,
  imageId: Schema.String
})
type ContainerRecord = typeof ContainerRecord.Type
const decodeRecord = Schema.decodeUnknownOption(Schema.parseJson(ContainerRecord))

const files = (runDir: string) => ({
  record: `${runDir}/container`,
  starting: `${runDir}/starting`,
  token: `${runDir}/token`,
  secrets: `${runDir}/secrets`
})

/** The address its servers are reached at from the host (host networking). */
const LOOPBACK = "127.0.0.1"

/** `mlops-<name>-<8 hex of the run directory>`: the deployment's, unique per user and state directory. */
export const containerName: (deployment: string, runDir: string) => string = Containers.containerName

/** `exited 1`, `exited 137 (OOMKilled)`, `running since 2026-12-02T10:00:00Z`, `could not start: …`. */
const describe = (info: Containers.ContainerInfo): string => {
  if (info.running) return `running since ${info.startedAt ?? "?"}`
  if (info.error !== "") return `could not start: ${info.error}`
  return `${info.status} ${info.exitCode}${info.oomKilled ? " (OOMKilled)" : ""}`
}

/** How an ended container is reported: the log's failure, or the container's word when the log cannot have it. */
const reporter =
  (host: string, record: ContainerRecord, info: Containers.ContainerInfo | undefined): Reporter<Error> =>
  (failure) => {
    if (info === undefined || (!info.oomKilled && info.error === "")) return failure
    // refused at its start for a reason the log names (no GPU toolkit, a CUDA requirement): that is the failure
    if (!info.oomKilled && failure !== undefined && startRefusals.has(failure._tag)) return failure
    const fix: Fix = info.oomKilled
      ? {
          action: `the kernel's OOM killer ended it: the host (or the container's memory limit) ran out of RAM; free host memory or load less at once (smaller --max-running-requests, no CPU offload)`
        }
      : {
          action:
            Containers.runRefusal(host, record.tool, record.image, info.error)?.fix ??
            `see \`${record.tool} inspect ${record.name}\``
        }
    return new ContainerEnded({
      host,
      container: record.name,
      state: describe(info),
      ...(failure === undefined ? {} : { failure }),
      fix
    })
  }

const placedOf = (
  host: string,
  paths: { readonly runDir: string; readonly logPath: string },
  record: ContainerRecord,
  /** Its record when attached, and its processes then (what "is this process ours" compares). */
  seen: { readonly info: Containers.ContainerInfo | undefined; readonly pids: ReadonlyArray<number> }
): Placed<Error> => {
  const client = (conn: Connection) => Containers.clientOf(conn, record.tool)
  const isAlive = (conn: Connection) =>
    Effect.map(client(conn).inspect(record.id), (info) => info?.running === true)
  return {
    host,
    runDir: paths.runDir,
    logPath: paths.logPath,
    server: {
      placement: name,
      label: `container ${record.name}`,
      started: `started container ${record.name} (${Containers.shortId(record.id)}) of ${record.image}`,
      ids: { container: record.name, id: Containers.shortId(record.id) }
    },
    isAlive,
    watch: (alias, options) =>
      Containers.watch(alias, record.tool, record.id, {
        ...(options?.reconnect === undefined ? {} : { reconnect: options.reconnect })
      }).pipe(
        Stream.mapEffect(
          (event): Effect.Effect<WatchEvent<Error>, Error | ConnectError, ConnectionPool> =>
            event._tag !== "Exited"
              ? Effect.succeed(event)
              : // its final record says what the log cannot (the OOM killer, a start refused)
                Effect.map(
                  Effect.option(
                    Effect.flatMap(ConnectionPool, (pool) =>
                      Effect.flatMap(pool.get(alias), (conn) => client(conn).inspect(record.id))
                    )
                  ),
                  (info) => ({
                    _tag: "Exited" as const,
                    status: event.status,
                    report: reporter(host, record, Option.getOrUndefined(info))
                  })
                )
        )
      ),
    kill: (conn) =>
      Effect.gen(function* () {
        yield* client(conn).kill(record.id)
        return (yield* isAlive(conn)) ? ("still-running" as const) : ("gone" as const)
      }),
    stop: (conn, grace) =>
      Effect.gen(function* () {
        const before = yield* client(conn).inspect(record.id)
        // a secrets file the server never read (it did not start) goes with it
        const forgetSecrets = conn.exec({ argv: ["rm", "-f", files(paths.runDir).secrets], env: {} })
        if (before === undefined || !before.running) {
          yield* client(conn).remove(record.id)
          yield* forgetSecrets
          yield* Deployment.recordStop(conn, paths.runDir, "exited-before")
          return "exited-before" as const
        }
        yield* client(conn).stop(record.id, grace ?? "30 seconds")
        const after = yield* client(conn).inspect(record.id)
        const status = after === undefined ? undefined : Containers.exitStatusOf(after)
        const outcome = status?.signal === "KILL" ? ("killed" as const) : ("terminated" as const)
        yield* client(conn).remove(record.id)
        yield* forgetSecrets
        yield* Deployment.recordStop(conn, paths.runDir, outcome)
        return outcome
      }),
    address: () => Effect.succeed(LOOPBACK),
    inspect: (conn) =>
      Effect.gen(function* () {
        const info = yield* client(conn).inspect(record.id)
        const alive = info?.running === true
        const gpuMemoryMiB = alive
          ? yield* client(conn)
              .processes(record.id)
              .pipe(
                Effect.flatMap((pids) => GpuRelease.gpuMemoryOf(conn, pids)),
                Effect.map((held) => held.usedMiB),
                Effect.orElseSucceed(() => undefined)
              )
          : undefined
        return {
          alive,
          exit: info === undefined ? undefined : Containers.exitStatusOf(info),
          state: info === undefined ? `container ${record.name} is gone` : `container ${describe(info)}`,
          address: alive ? LOOPBACK : undefined,
          gpuMemoryMiB,
          runningMs: undefined,
          details: {
            tool: record.tool,
            container: record.name,
            id: record.id,
            image: record.image,
            imageId: record.imageId,
            ...(info === undefined
              ? { status: "removed" }
              : {
                  status: info.status,
                  exitCode: info.running ? null : info.exitCode,
                  oomKilled: info.oomKilled,
                  startedAt: info.startedAt ?? null,
                  finishedAt: info.finishedAt ?? null,
                  ...(info.error === "" ? {} : { error: info.error })
                })
          },
          report: reporter(host, record, info)
        }
      }),
    // its processes are taken now, while the container runs: once it is gone the tool lists none
    gpuRelease: (conn) =>
      Effect.map(
        Effect.flatMap(isAlive(conn), (alive) =>
          alive ? client(conn).processes(record.id) : Effect.succeed([])
        ),
        (pids) => GpuRelease.confirmation(conn, pids)
      ),
    // an exited container stays in the tool's list until removed
    discard: (conn) => client(conn).remove(record.id),
    holds: (process) =>
      seen.info?.running === true && (seen.pids.includes(process.pid) || process.pid === seen.info.pid)
  }
}

/** The ids of the GPUs the container gets: the visible ones (its `CUDA_VISIBLE_DEVICES`, else the host's in order) up to the last the launch uses. */
const devicesOf = (request: SpawnRequest, env: Readonly<Record<string, string>>): ReadonlyArray<string> => {
  const last = request.gpus.first + (Math.max(1, request.gpus.perNode) - 1) * Math.max(1, request.gpus.step)
  const visible = env.CUDA_VISIBLE_DEVICES?.split(",")
    .map((id) => id.trim())
    .filter((id) => id !== "")
  return Array.from({ length: last + 1 }, (_, i) => visible?.[i] ?? String(i)).slice(
    0,
    visible === undefined ? last + 1 : Math.min(last + 1, visible.length)
  )
}

/** Append stdout and stderr to the log (its first argument), keeping the program's pid (`exec`). */
const LOGGED = 'exec "$@" >>"$0" 2>&1'

const spawnContainer = (
  alias: string,
  shm: string,
  runnable: InImage,
  request: SpawnRequest
): Effect.Effect<Placed<Error>, Error | GetError, ConnectionPool> =>
  Effect.gen(function* () {
    const pool = yield* ConnectionPool
    const conn = yield* pool.get(alias)
    const tool = runnable.tool
    const client = Containers.clientOf(conn, tool)
    const runDir = yield* conn.files.resolvePath(request.runDir)
    const logPath = yield* conn.files.resolvePath(request.logPath)
    const home = yield* conn.files.resolvePath("~")
    const paths = files(runDir)
    const cname = containerName(request.name, runDir)
    const failed = (reason: string) => new ProcessError({ host: alias, runDir, reason })

    // an earlier start of this run directory: one that ended is removed, one that runs is another launch's
    const previous = yield* client.inspect(cname)
    if (previous?.running === true) {
      if (previous.labels["mlops.token"] === request.token) {
        const record: ContainerRecord = {
          tool,
          name: cname,
          id: previous.id,
          image: runnable.image,
          imageId: runnable.imageId
        }
        yield* conn.files.write(paths.record, JSON.stringify(record), { mode: 0o600 })
        return placedOf(alias, { runDir, logPath }, record, { info: previous, pids: [] })
      }
      return yield* failed(
        `container ${cname} of an earlier start still runs: stop it first (mlops stop --name ${request.name})`
      )
    }
    if (previous !== undefined) yield* client.remove(cname)

    yield* conn.files.mkdir(runDir)
    // a fresh 0600 log per start, the previous one kept as <log>.1, created here so the host user
    // owns it whoever the container runs as
    if ((yield* conn.files.stat(logPath)) !== undefined) {
      const moved = yield* conn.exec({ argv: ["mv", "-f", logPath, `${logPath}.1`], env: {} })
      if (moved.exitCode !== 0)
        return yield* failed(`could not keep the previous log: ${moved.stderr.trim()}`)
    }
    yield* conn.files.write(logPath, "", { mode: 0o600 })
    yield* conn.files.write(paths.token, request.token, { mode: 0o600 })
    yield* conn.files.write(paths.starting, request.token, { mode: 0o600 })
    // secret values in a file only the server reads (its prelude removes it): never in `ps` nor `inspect`
    if (runnable.secrets !== undefined)
      yield* conn.files.write(paths.secrets, runnable.secrets, { mode: 0o600 })

    const { CUDA_VISIBLE_DEVICES: _renumbered, ...programEnv } = runnable.env
    const caches = request.paths.caches.map((cache) => ({
      env: cache.env,
      path: absolute(home, runnable.env[cache.env] ?? cache.path)
    }))
    // a bind mount's missing source would be made by the daemon, as root
    yield* Effect.forEach(caches, (cache) => conn.files.mkdir(cache.path), { discard: true })
    const model = request.paths.model === undefined ? undefined : absolute(home, request.paths.model)
    const env: Record<string, string> = {
      ...programEnv,
      ...Object.fromEntries(caches.map((cache) => [cache.env, cache.path])),
      ...(runnable.secrets === undefined ? {} : { [ServerCommand.secretsFileEnv]: paths.secrets })
    }
    const options = {
      image: runnable.imageId,
      name: cname,
      remove: false,
      labels: {
        [deploymentLabel]: request.name,
        "mlops.run-dir": runDir,
        "mlops.token": request.token,
        "mlops.image": runnable.image,
        "mlops.user": conn.host.user
      },
      init: true,
      gpus: devicesOf(request, runnable.env),
      shm,
      mounts: [
        { source: runDir, target: runDir, readOnly: false },
        ...(model === undefined ? [] : [{ source: model, target: model, readOnly: true }]),
        ...caches.map((cache) => ({ source: cache.path, target: cache.path, readOnly: false }))
      ],
      envNames: Object.keys(env),
      workdir: home,
      entrypoint: "sh",
      argv: ["-c", LOGGED, logPath, ...runnable.argv]
    }
    const recordOf = (id: string): ContainerRecord => ({
      tool,
      name: cname,
      id,
      image: runnable.image,
      imageId: runnable.imageId
    })
    const keep = (on: Connection, id: string) =>
      Effect.gen(function* () {
        const record = recordOf(id)
        yield* on.files.write(paths.record, JSON.stringify(record), { mode: 0o600 })
        yield* on.exec({ argv: ["rm", "-f", paths.starting], env: {} })
        return record
      })
    // a start whose answer was lost: the container carrying this start's token is it; none: start again
    const ours = (found: Containers.ContainerInfo | undefined) =>
      found !== undefined && found.labels["mlops.token"] === request.token
    const settle = Effect.gen(function* () {
      const again = yield* pool.get(alias)
      const client = Containers.clientOf(again, tool)
      const found = yield* client.inspect(cname)
      // created but never started (the client was cut between the two): start it afresh
      if (ours(found) && found?.status === "created" && found.error === "") yield* client.remove(cname)
      else if (ours(found) && found !== undefined) return yield* keep(again, found.id)
      return yield* keep(again, yield* client.start(options, env))
    }).pipe(Effect.retry({ schedule: request.reconnect ?? defaultReconnect, while: isTransient }))
    const started = yield* Effect.either(
      Effect.flatMap(client.start(options, env), (id) => keep(conn, id)).pipe(
        Effect.catchIf(isTransient, () => settle)
      )
    )
    if (Either.isRight(started)) {
      return placedOf(alias, { runDir, logPath }, started.right, { info: undefined, pids: [] })
    }
    // created but refused at its start (no GPU toolkit, a CUDA requirement): the container and its
    // record stay, the refusal goes into the log, and the launch reports it as an ended server
    const refused = started.left
    const on = yield* pool.get(alias)
    const created = yield* Containers.clientOf(on, tool).inspect(cname)
    if (refused._tag !== "ContainerRunRefused" || created === undefined || !ours(created))
      return yield* refused
    // the daemon's own words where it kept them (diagnose reads them later), else the refusal's
    const words = created.error === "" ? refused.reason : created.error
    yield* on.exec({
      argv: ["sh", "-c", 'printf "%s\\n" "$1" >>"$2"', "mlops-log", `${tool}: ${words}`, logPath],
      env: {}
    })
    // nothing will read the secrets: the server never started
    yield* on.exec({ argv: ["rm", "-f", paths.secrets], env: {} })
    const record = yield* keep(on, created.id)
    return placedOf(alias, { runDir, logPath }, record, { info: created, pids: [] })
  }).pipe(
    // a start that failed or was interrupted leaves nothing of its own behind: no container of this
    // start's token (created before the failure), no `starting` marker, no secrets file
    Effect.onError(() => undoStart(alias, runnable.tool, request))
  )

/** What a failed start made: its container (by this start's token), the `starting` marker, the secrets. */
const undoStart = (alias: string, tool: ContainerSettings.ContainerTool, request: SpawnRequest) =>
  Effect.gen(function* () {
    const conn = yield* (yield* ConnectionPool).get(alias)
    const runDir = yield* conn.files.resolvePath(request.runDir)
    const cname = containerName(request.name, runDir)
    const client = Containers.clientOf(conn, tool)
    const found = yield* client.inspect(cname)
    if (found !== undefined && found.labels["mlops.token"] === request.token) yield* client.remove(cname)
    const paths = files(runDir)
    // only this start's (its token in the marker): another start of the run directory keeps its own
    yield* conn.exec(
      {
        argv: [
          "sh",
          "-c",
          '[ "$(cat "$1" 2>/dev/null)" = "$2" ] && rm -f "$1" "$3"; exit 0',
          "mlops-undo",
          paths.starting,
          request.token,
          paths.secrets
        ],
        env: {}
      },
      { timeout: "30 seconds" }
    )
  }).pipe(Effect.timeout("1 minute"), Effect.ignore)

const placement = (alias: string, shm: string): Placement<Error> => ({
  spec: spec({ shm }),
  description: `a container on ${alias} (host network, ${shm === "host" ? "the host's /dev/shm" : `${shm} /dev/shm`})`,
  onHost: true,
  nodes: 1,
  preflight: () => Effect.succeed({ summary: undefined }),
  spawn: (host, [runnable], request) =>
    runnable._tag === "InImage"
      ? spawnContainer(host, shm, runnable, request)
      : Effect.fail(
          new InvalidPlacement({
            kind: name,
            reason: "a container runs an image, not a command on the host",
            fix: "name an image (--image IMAGE)"
          })
        ),
  attach: (conn, given) =>
    Effect.gen(function* () {
      const runDir = yield* conn.files.resolvePath(given.runDir)
      const text = yield* RemoteFiles.readTextIfExists(conn, files(runDir).record)
      // no record: nothing was started (refused, or a start still under way)
      if (text === undefined) return undefined
      const record = Option.getOrUndefined(decodeRecord(text))
      if (record === undefined)
        return yield* new ProcessError({
          host: conn.host.alias,
          runDir,
          reason: `no container record in ${files(runDir).record}`
        })
      const client = Containers.clientOf(conn, record.tool)
      const info = yield* client.inspect(record.id)
      const pids = info?.running === true ? yield* client.processes(record.id) : []
      return placedOf(conn.host.alias, { runDir, logPath: given.logPath }, record, { info, pids })
    }),
  starting: (conn, runDir) =>
    Effect.gen(function* () {
      const resolved = yield* conn.files.resolvePath(runDir)
      if ((yield* conn.files.stat(files(resolved).record)) !== undefined) return false
      return (yield* conn.files.stat(files(resolved).starting)) !== undefined
    }),
  neighbours: (conn) =>
    Effect.gen(function* () {
      const tool = conn.host.container?.runtime ?? ContainerSettings.defaultTool
      const containers = yield* Containers.clientOf(conn, tool).list(deploymentLabel)
      const label = (c: Containers.ContainerInfo, key: string) => c.labels[key] ?? "-"
      return {
        title: `${tool} containers mlops started on ${alias} (every user's)`,
        columns: ["NAME", "USER", "CONTAINER", "STATE", "IMAGE"],
        rows: containers.map((c) => [
          label(c, deploymentLabel),
          label(c, "mlops.user"),
          c.name,
          describe(c),
          label(c, "mlops.image")
        ]),
        records: containers.map((c) => ({
          name: c.labels[deploymentLabel],
          user: c.labels["mlops.user"],
          container: c.name,
          id: Containers.shortId(c.id),
          status: c.status,
          exitCode: c.running ? null : c.exitCode,
          oomKilled: c.oomKilled,
          image: c.labels["mlops.image"],
          startedAt: c.startedAt ?? null
        }))
      }
    })
})

// a setting it does not know is an error, not dropped
const decodeSpec = Schema.decodeUnknownEither(ContainerSpec, { onExcessProperty: "error" })

const decode = (given: Spec) =>
  Either.mapLeft(
    decodeSpec(given),
    (error) =>
      new InvalidPlacement({
        kind: name,
        reason: `bad container settings: ${error.message}`,
        fix: 'give the shared memory as a size or host (--shm-size 32g, "shm" in hosts.json)'
      })
  )

/**
 * A container on the SSH host, for what an image runtime makes: applies whenever the runtime is
 * an image (the host's entry names one, or the launch does).
 *
 * @category kinds
 */
export const kind: Kind<Error> = {
  kind: name,
  resolve: (host, asked, form) => {
    if (form !== "InImage")
      return asked === undefined
        ? Either.right(undefined)
        : Either.left(
            new InvalidPlacement({
              kind: name,
              reason: "a container runs an image",
              fix: "name one (--image lmsysorg/sglang:v0.5.11)"
            })
          )
    const given = asked === undefined ? Either.right(undefined) : decode(asked)
    return Either.map(given, (s) =>
      spec({ shm: s?.shm ?? host.container?.shm ?? ContainerSettings.defaultShm })
    )
  },
  make: (given, host) =>
    Either.map(decode(given), (s) => placement(host.alias, s.shm ?? ContainerSettings.defaultShm))
}
