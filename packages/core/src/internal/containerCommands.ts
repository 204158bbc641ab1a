/**
 * The container tools' command lines and what they print: `run` options as argv (the same for
 * docker and podman but for GPUs), the inspect templates mlops reads (its own JSON, so docker
 * and podman answer alike), and the tool's refusals as typed errors with their fixes.
 *
 * @internal
 */
import { Either, Schema } from "effect"
import type { ExecResult } from "../Connection.js"
import {
  ContainerCommandFailed,
  ContainerRunRefused,
  ContainerToolUnavailable,
  ImageNotFound,
  ImagePullFailed
} from "../ContainerErrors.js"
import type { ContainerTool } from "../ContainerSettings.js"

/** One bind mount: a host path at a path inside the container. */
export interface Mount {
  readonly source: string
  readonly target: string
  readonly readOnly: boolean
}

/** What a container is started with (`run`), for docker and podman alike. */
export interface RunOptions {
  /** The image: a reference or an id. */
  readonly image: string
  readonly name?: string
  /** `-d`: start it and print its id (else run in the foreground). */
  readonly detach: boolean
  /** `--rm`: removed when it ends. */
  readonly remove: boolean
  readonly labels?: Readonly<Record<string, string>>
  /** The host GPUs it gets (indices or UUIDs), `all`, or none. */
  readonly gpus?: "all" | ReadonlyArray<string>
  /** A private `/dev/shm` of this size, or `host` for the host's IPC namespace. */
  readonly shm?: string
  readonly mounts?: ReadonlyArray<Mount>
  /**
   * Environment variables passed by NAME only (`-e NAME`): the tool copies each value from its
   * own environment, so no value is on its command line (`ps`).
   */
  readonly envNames?: ReadonlyArray<string>
  readonly workdir?: string
  readonly entrypoint?: string
  /** `--init`: a small init as pid 1 forwards signals and reaps (a Python server as pid 1 ignores TERM). */
  readonly init?: boolean
  /** `--user uid:gid`: whom the program runs as (what it writes into mounts is theirs). */
  readonly user?: string
  /** The command after the image. */
  readonly argv: ReadonlyArray<string>
}

const quoteCsv = (text: string) => `"${text}"`

/** The GPU options: docker's `--gpus` (device list quoted for its CSV parser), podman's CDI devices. */
export const gpuArgs = (tool: ContainerTool, gpus: "all" | ReadonlyArray<string>): Array<string> => {
  if (tool === "podman") {
    const ids = gpus === "all" ? ["all"] : gpus
    return ids.flatMap((id) => ["--device", `nvidia.com/gpu=${id}`])
  }
  return ["--gpus", gpus === "all" ? "all" : quoteCsv(`device=${gpus.join(",")}`)]
}

/** `run` and its options, without the tool. */
export const runArgs = (tool: ContainerTool, o: RunOptions): Array<string> => [
  "run",
  ...(o.detach ? ["-d"] : []),
  ...(o.remove ? ["--rm"] : []),
  ...(o.name === undefined ? [] : ["--name", o.name]),
  ...Object.entries(o.labels ?? {}).flatMap(([key, value]) => ["--label", `${key}=${value}`]),
  // the server listens on the host's own interfaces, as it would without a container
  "--network",
  "host",
  ...(o.init === true ? ["--init"] : []),
  ...(o.gpus === undefined || (o.gpus !== "all" && o.gpus.length === 0) ? [] : gpuArgs(tool, o.gpus)),
  ...(o.shm === undefined ? [] : o.shm === "host" ? ["--ipc", "host"] : ["--shm-size", o.shm]),
  ...(o.mounts ?? []).flatMap((m) => ["-v", `${m.source}:${m.target}${m.readOnly ? ":ro" : ""}`]),
  ...(o.envNames ?? []).flatMap((name) => ["-e", name]),
  ...(o.workdir === undefined ? [] : ["-w", o.workdir]),
  ...(o.user === undefined ? [] : ["--user", o.user]),
  ...(o.entrypoint === undefined ? [] : ["--entrypoint", o.entrypoint]),
  o.image,
  ...o.argv
]

/** An id as a person reads it: its first 12 hex digits (docker's and podman's short form). */
export const shortId = (id: string): string => id.replace(/^sha256:/, "").slice(0, 12)

/** docker's ids are `sha256:<hex>`, podman's the bare hex: one form. */
export const normalizeId = (id: string): string => (id.startsWith("sha256:") ? id : `sha256:${id}`)

// ---- inspect --------------------------------------------------------------------------------

/**
 * Our own JSON from `image inspect` (the same fields in docker and podman). Plain strings are
 * quoted by the template, not `json`'d: podman 4.3's `{{json .Id}}` fails ("can't evaluate
 * field Id in type interface {}"); an id, a name or a size holds no quote.
 */
export const IMAGE_FORMAT =
  '{"id":"{{.Id}}","tags":{{json .RepoTags}},"digests":{{json .RepoDigests}},"env":{{json .Config.Env}},"labels":{{json .Config.Labels}},"size":{{.Size}}}'

const ImageLine = Schema.parseJson(
  Schema.Struct({
    id: Schema.String,
    tags: Schema.NullOr(Schema.Array(Schema.String)),
    digests: Schema.NullOr(Schema.Array(Schema.String)),
    env: Schema.NullOr(Schema.Array(Schema.String)),
    labels: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })),
    size: Schema.Number
  })
)

/** An image as the tool knows it. */
export interface ImageInfo {
  /** `sha256:<hex>`: what identifies it (a tag may move). */
  readonly id: string
  readonly tags: ReadonlyArray<string>
  readonly digests: ReadonlyArray<string>
  /** Its `ENV` (`NVIDIA_REQUIRE_CUDA=cuda>=12.4 …`, `CUDA_VERSION=12.4.1`). */
  readonly env: Readonly<Record<string, string>>
  readonly labels: Readonly<Record<string, string>>
  readonly sizeBytes: number
}

const envRecord = (lines: ReadonlyArray<string> | null): Record<string, string> =>
  Object.fromEntries(
    (lines ?? []).flatMap((line) => {
      const at = line.indexOf("=")
      return at <= 0 ? [] : [[line.slice(0, at), line.slice(at + 1)] as const]
    })
  )

export const parseImage = (stdout: string): Either.Either<ImageInfo, string> => {
  const line = stdout.split("\n").find((l) => l.trim().startsWith("{"))
  if (line === undefined) return Either.left("no image record in the output")
  return Either.mapBoth(Schema.decodeUnknownEither(ImageLine)(line.trim()), {
    onLeft: (error) => error.message.split("\n")[0] ?? "unreadable",
    onRight: (image) => ({
      id: normalizeId(image.id),
      tags: image.tags ?? [],
      digests: image.digests ?? [],
      env: envRecord(image.env),
      labels: image.labels ?? {},
      sizeBytes: image.size
    })
  })
}

/** Our own JSON from `inspect` of a container: its id, name, labels, image id and state (strings quoted as in IMAGE_FORMAT). */
export const CONTAINER_FORMAT =
  '{"id":"{{.Id}}","name":"{{.Name}}","image":"{{.Image}}","labels":{{json .Config.Labels}},"state":{{json .State}}}'

const StateJson = Schema.Struct({
  Status: Schema.String,
  Running: Schema.Boolean,
  OOMKilled: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  Pid: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  ExitCode: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  Error: Schema.optionalWith(Schema.String, { default: () => "" }),
  StartedAt: Schema.optionalWith(Schema.String, { default: () => "" }),
  FinishedAt: Schema.optionalWith(Schema.String, { default: () => "" })
})

const ContainerLine = Schema.parseJson(
  Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    image: Schema.String,
    labels: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })),
    state: StateJson
  })
)

/** A container as the tool records it. */
export interface ContainerInfo {
  readonly id: string
  /** Without docker's leading `/`. */
  readonly name: string
  /** The id of the image it runs. */
  readonly imageId: string
  readonly labels: Readonly<Record<string, string>>
  /** `created`, `running`, `exited`, `paused`, … */
  readonly status: string
  readonly running: boolean
  /** The kernel's OOM killer ended it (its memory limit, or the host's). */
  readonly oomKilled: boolean
  /** Its first process on the host (0 when it does not run). */
  readonly pid: number
  readonly exitCode: number
  /** Why it could not start (`could not select device driver …`), when it could not. */
  readonly error: string
  /** ISO times; undefined when it never started / has not finished. */
  readonly startedAt: string | undefined
  readonly finishedAt: string | undefined
}

/** The tools' "never" time. */
const timeOf = (text: string) => (text === "" || text.startsWith("0001-01-01") ? undefined : text)

/** One record per line (a container that vanished between listing and inspecting has none). */
export const parseContainers = (stdout: string): Either.Either<Array<ContainerInfo>, string> => {
  const out: Array<ContainerInfo> = []
  for (const line of stdout.split("\n")) {
    if (!line.trim().startsWith("{")) continue
    const decoded = Schema.decodeUnknownEither(ContainerLine)(line.trim())
    if (Either.isLeft(decoded)) return Either.left(decoded.left.message.split("\n")[0] ?? "unreadable")
    const c = decoded.right
    out.push({
      id: c.id,
      name: c.name.replace(/^\//, ""),
      imageId: normalizeId(c.image),
      labels: c.labels ?? {},
      status: c.state.Status.toLowerCase(),
      running: c.state.Running,
      oomKilled: c.state.OOMKilled,
      pid: c.state.Pid,
      exitCode: c.state.ExitCode,
      error: c.state.Error,
      startedAt: timeOf(c.state.StartedAt),
      finishedAt: timeOf(c.state.FinishedAt)
    })
  }
  return Either.right(out)
}

/** The host pids of `top`'s one column (docker `-o pid`, podman `hpid`), past its header. */
export const parsePids = (stdout: string): Array<number> =>
  stdout
    .split("\n")
    .slice(1)
    .map((line) => Number(line.trim()))
    .filter((n) => Number.isInteger(n) && n > 0)

// ---- the tools' refusals ----------------------------------------------------------------------

const NO_SUCH =
  /No such (?:object|image|container)|no such (?:object|image|container)|image not known|no container with name or ID/i
/** The answer of an inspect of something that is not there. */
export const isNoSuch = (result: ExecResult): boolean => result.exitCode !== 0 && NO_SUCH.test(result.stderr)

const ACCESS_DENIED = /permission denied while trying to connect to the Docker daemon socket[^\n]*/i
const DAEMON_DOWN =
  /Cannot connect to the Docker daemon[^\n]*|Is the docker daemon running\?[^\n]*|Cannot connect to Podman[^\n]*/i

/** The line that says it, without the tool's `docker: ` / `Error: ` prefix. */
const lineOf = (text: string, pattern: RegExp) =>
  (
    text
      .split("\n")
      .map((line) => line.trim())
      .find((line) => pattern.test(line)) ?? "no output"
  )
    .replace(/^(?:docker: |Error: |Got )/, "")
    .trim()

/** The failure when `result` says the tool itself is unusable on `host`; undefined otherwise. */
export const unavailable = (
  host: string,
  tool: ContainerTool,
  result: ExecResult
): ContainerToolUnavailable | undefined => {
  const make = (problem: ContainerToolUnavailable["problem"], reason: string, fix: string) =>
    new ContainerToolUnavailable({ host, tool, problem, reason, fix })
  if (result.exitCode === 127)
    return make(
      "missing",
      `${tool} not found`,
      tool === "docker"
        ? `install Docker Engine on ${host} (or use podman: --runtime podman), and put it on PATH for non-interactive shells`
        : `install podman on ${host} (or use Docker: --runtime docker)`
    )
  if (ACCESS_DENIED.test(result.stderr))
    return make(
      "access-denied",
      lineOf(result.stderr, ACCESS_DENIED),
      `add the user to the docker group on ${host} (\`sudo usermod -aG docker $USER\`, then log in again), or use rootless podman (--runtime podman)`
    )
  if (DAEMON_DOWN.test(result.stderr))
    return make(
      "daemon-down",
      lineOf(result.stderr, DAEMON_DOWN),
      `start the daemon on ${host} (\`sudo systemctl start ${tool}\`) or point DOCKER_HOST at a running one`
    )
  return undefined
}

/** The command's failure for an exit status the caller does not handle. */
export const failed = (
  host: string,
  argv: ReadonlyArray<string>,
  result: ExecResult
): ContainerCommandFailed =>
  new ContainerCommandFailed({
    host,
    // the whole command (it holds no secret: values travel in the environment or a file), cut short
    command: shortened(argv.join(" ")),
    exitCode: result.exitCode,
    stderr: result.stderr.trim().split("\n").slice(-5).join("\n"),
    fix: `the tool's own words are above; run the command by hand on ${host} to see more (\`${argv[0] ?? "docker"} info\` shows the daemon's state)`
  })

const shortened = (text: string) => (text.length <= 240 ? text : `${text.slice(0, 239)}…`)

const NOT_FOUND =
  /manifest unknown|manifest for \S+ not found|repository does not exist|pull access denied|requested access to the resource is denied|name unknown|not found: manifest/i
const LOGIN = /unauthorized|authentication required|no basic auth credentials/i
const NETWORK =
  /dial tcp|no such host|i\/o timeout|connection refused|TLS handshake timeout|server misbehaving|network is unreachable|Client\.Timeout/i
const DISK = /no space left on device/i

/** A pull's failure: not there (not found, no access), or another reason, each with its fix. */
export const pullFailure = (
  host: string,
  tool: ContainerTool,
  image: string,
  stderr: string
): ImageNotFound | ImagePullFailed => {
  const words = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
  const reasonOf = (pattern: RegExp) =>
    (words.find((l) => pattern.test(l)) ?? words.at(-1) ?? "no output").replace(
      /^(?:Error: |Error response from daemon: )/,
      ""
    )
  if (NOT_FOUND.test(stderr))
    return new ImageNotFound({
      host,
      tool,
      image,
      reason: reasonOf(NOT_FOUND),
      fix: `check the name and tag (the registry has no ${image} this user may read; \`${tool} login\` for a private one)`
    })
  if (LOGIN.test(stderr))
    return new ImagePullFailed({
      host,
      tool,
      image,
      reason: reasonOf(LOGIN),
      fix: `log in to the registry on ${host} (\`${tool} login <registry>\`)`
    })
  if (DISK.test(stderr))
    return new ImagePullFailed({
      host,
      tool,
      image,
      reason: reasonOf(DISK),
      fix: `free disk space where ${tool} keeps images on ${host} (\`${tool} system df\`, \`${tool} image prune\`)`
    })
  if (NETWORK.test(stderr))
    return new ImagePullFailed({
      host,
      tool,
      image,
      reason: reasonOf(NETWORK),
      fix: `${host} cannot reach the registry: pull the image there another way (\`${tool} load\` from a saved tarball) and launch with --pull never`
    })
  return new ImagePullFailed({
    host,
    tool,
    image,
    reason: reasonOf(/./),
    fix: `run \`${tool} pull ${image}\` on ${host} to see why`
  })
}

const NO_GPU_DRIVER = /could not select device driver "[^"]*" with capabilities: \[\[gpu\]\]/
const CUDA_REQUIREMENT = /requirement error: unsatisfied condition: (cuda\s*>=\s*[\d.]+)/
const CDI = /unresolvable CDI devices[^\n]*/
const NAME_TAKEN =
  /Conflict\. The container name "?\/?([^" ]+)"? is already in use|the container name "?([^" ]+)"? is already in use/i

/** Why a `run` was refused, with its fix; undefined when the words are not known. */
export const runRefusal = (
  host: string,
  tool: ContainerTool,
  image: string,
  stderr: string
): ContainerRunRefused | undefined => {
  const make = (reason: string, fix: string) => new ContainerRunRefused({ host, tool, image, reason, fix })
  if (NO_GPU_DRIVER.test(stderr))
    return make(
      lineOf(stderr, NO_GPU_DRIVER),
      `the NVIDIA container toolkit is not set up for docker on ${host}: install nvidia-container-toolkit, run \`sudo nvidia-ctk runtime configure --runtime=docker\` and restart docker`
    )
  const cuda = CUDA_REQUIREMENT.exec(stderr)
  if (cuda !== null)
    return make(
      `the image needs ${cuda[1]?.replace(/\s+/g, "")} but the host's driver supports less (nvidia-container-cli)`,
      `upgrade the NVIDIA driver on ${host}, or use an image built for an older CUDA`
    )
  if (CDI.test(stderr))
    return make(
      lineOf(stderr, CDI),
      `podman finds no CDI spec for the GPUs on ${host}: \`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml\``
    )
  const taken = NAME_TAKEN.exec(stderr)
  if (taken !== null)
    return make(
      lineOf(stderr, NAME_TAKEN),
      `another container holds the name ${taken[1] ?? taken[2]}: remove it (\`${tool} rm -f ${taken[1] ?? taken[2]}\`) if it is not in use`
    )
  return undefined
}
