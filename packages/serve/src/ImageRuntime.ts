/**
 * The runtime of a container image: the engine is whatever the image holds, read from inside
 * it, never from its tag. One short `run --rm` of the image's Python (the same probe as on a
 * host: package metadata and file hashes, the engine not imported) gives the engine, its
 * version and the fingerprint of its flag-source files; the flag catalogue is then the shipped
 * one for that version or the image's own parser's (the flag dump run inside the image), both
 * kept on this machine by image id (`ImageCache`, the engines' flag caches keyed by the install
 * id, which is the image id).
 *
 * - prepare: the tool answers and this user may use it; the image is pulled when the policy
 *   says so (`never`, `missing`: default, `always`), its progress reported line by line.
 * - preflight: the host driver runs the image's CUDA (`NVIDIA_REQUIRE_CUDA`, else
 *   `CUDA_VERSION`, against the driver's CUDA, as nvidia-container-cli compares them), and the
 *   GPUs reach a container through the tool (one `run --rm` with every GPU); a tag that names
 *   another version than the image's engine is a warning.
 * - short programs (the argument check, the flag dump) run in a `run --rm` container of the
 *   image on the host network; the server is an `InImage` for the container placement.
 *
 * Secrets: variables whose names say secret, and secret flag values, reach the engine only
 * through the prelude's payload, delivered in a 0600 file of a 0700 directory that the
 * container mounts and the prelude removes once read. Neither the tool's command line (`ps`)
 * nor the container's record (`docker inspect`: it shows `MLOPS_SERVER_SECRETS_FILE` and the
 * mount) holds a value; other variables are passed by name (`-e NAME`), their values in the
 * tool's environment, and `docker inspect` shows them.
 *
 * @since 0.1.0
 */
import * as fs from "node:fs/promises"
import { homedir } from "node:os"
import { join } from "node:path"
import type { Connection } from "@mlops/core/Connection"
import type { ContainerError } from "@mlops/core/ContainerErrors"
import { ContainerRunRefused, ImageNotFound } from "@mlops/core/ContainerErrors"
import * as ContainerSettings from "@mlops/core/ContainerSettings"
import * as Containers from "@mlops/core/Containers"
import { type CommandError, ProbeFailed, type RemoteFileError } from "@mlops/core/Errors"
import * as Probes from "@mlops/core/Probes"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import { Config, Context, Effect, Either, Layer, Option, Schema } from "effect"
import * as Classifier from "./Classifier.js"
import type { Engine } from "./Engine.js"
import { CudaDriverTooOld, type LaunchFailure } from "./Failures.js"
import { absolute } from "./internal/hostPaths.js"
import { exportsOf, IN_FOREGROUND, SECRETS_ENV, UNSEAL } from "./internal/imageJobScripts.js"
import { startRefusals } from "./internal/logs/signatures/containers.js"
import { IMAGE_DISCOVER, PROBE } from "./internal/pythonEnvScripts.js"
import { type Probed, ProbeLine, parse } from "./internal/pythonProbe.js"
import {
  InvalidRuntime,
  type Kind,
  type Located,
  type Program,
  type Runnable,
  type Runtime,
  type Spec
} from "./Runtime.js"
import * as Secrets from "./Secrets.js"
import * as ServerCommand from "./ServerCommand.js"

/** The kind's name, in specs and records. @category constants */
export const name = "image"

/** The image holds none of the engines asked for (or no Python that answers). @category errors */
export class EngineNotInImage extends Schema.TaggedError<EngineNotInImage>()("EngineNotInImage", {
  host: Schema.String,
  image: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `image ${this.image} on ${this.host}: ${this.reason}; ${this.fix}`
  }
}

/**
 * What it fails with: the tool's errors, an image without the engine, the host's; and what a
 * container of the image met, named as `diagnose` names it in a log (a driver older than the
 * image's CUDA, no GPUs for containers).
 *
 * @category models
 */
export type Error =
  | ContainerError
  | EngineNotInImage
  | LaunchFailure
  | ProbeFailed
  | CommandError
  | RemoteFileError

/** The spec as asked: every field may come from the host's entry instead. */
const ImageSpec = Schema.Struct({
  kind: Schema.Literal(name),
  image: Schema.optional(ContainerSettings.ImageRef),
  tool: Schema.optional(ContainerSettings.ContainerTool),
  pull: Schema.optional(ContainerSettings.PullPolicy)
})
type ImageSpec = typeof ImageSpec.Type

/**
 * The spec: the image, and optionally the tool (`docker`, `podman`) and when to pull. What a
 * deployment records of it (its `spec`) is the image and the tool: the pull policy is how this
 * launch gets the image, not which one runs.
 *
 * @category constructors
 */
export const spec = (o: {
  readonly image?: string
  readonly tool?: ContainerSettings.ContainerTool
  readonly pull?: ContainerSettings.PullPolicy
}): Spec => ({
  kind: name,
  ...(o.image === undefined ? {} : { image: o.image }),
  ...(o.tool === undefined ? {} : { tool: o.tool }),
  ...(o.pull === undefined ? {} : { pull: o.pull })
})

const decodeSpec = Schema.decodeUnknownEither(ImageSpec, { onExcessProperty: "error" })

const decode = (given: Spec) =>
  Either.mapLeft(
    decodeSpec(given),
    (error) =>
      new InvalidRuntime({
        kind: name,
        reason: `bad settings: ${error.message}`,
        fix: "give the image as a reference: --image lmsysorg/sglang:v0.5.11"
      })
  )

// ---- the cache of what images hold ----------------------------------------------------------

/** What a probe of an image found, kept by image id and engine. @category models */
export interface CachedProbe {
  readonly format: 1
  readonly imageId: string
  readonly engine: string
  readonly how: string
  readonly interpreter: string
  readonly probe: Probed
}

const CachedProbeSchema = Schema.parseJson(
  Schema.Struct({
    format: Schema.Literal(1),
    imageId: Schema.String,
    engine: Schema.String,
    how: Schema.String,
    interpreter: Schema.String,
    probe: ProbeLine.to
  })
)

/**
 * Where what an image holds is kept between runs (an image id names its content, so an entry
 * never goes stale). Optional: without it every launch probes the image.
 *
 * @category services
 */
export class ImageCache extends Context.Tag("@mlops/serve/ImageCache")<
  ImageCache,
  {
    readonly read: (imageId: string, engine: string) => Effect.Effect<CachedProbe | undefined>
    readonly write: (entry: CachedProbe) => Effect.Effect<void>
  }
>() {}

const fileOf = (dir: string, imageId: string, engine: string) =>
  join(dir, `${imageId.replace(/^sha256:/, "")}.${engine}.json`)

/** Files under `dir`, one per image and engine (0600, in a 0700 directory). @category layers */
export const cacheDirectory = (dir: string): Layer.Layer<ImageCache> =>
  Layer.succeed(ImageCache, {
    read: (imageId, engine) =>
      Effect.promise(() => fs.readFile(fileOf(dir, imageId, engine), "utf8").catch(() => undefined)).pipe(
        Effect.map((text) =>
          text === undefined
            ? undefined
            : Option.getOrUndefined(Schema.decodeUnknownOption(CachedProbeSchema)(text))
        ),
        Effect.map((entry) => (entry?.imageId === imageId && entry.engine === engine ? entry : undefined))
      ),
    // a cache that cannot be written is only slower
    write: (entry) =>
      Effect.promise(async () => {
        await fs.mkdir(dir, { recursive: true, mode: 0o700 })
        const file = fileOf(dir, entry.imageId, entry.engine)
        await fs.writeFile(`${file}.tmp`, JSON.stringify(entry), { mode: 0o600 })
        await fs.rename(`${file}.tmp`, file)
      }).pipe(Effect.catchAllDefect(() => Effect.void))
  })

/** `$MLOPS_HOME/images` (default `~/.mlops/images`). @category layers */
export const cacheConfig: Layer.Layer<ImageCache> = Layer.unwrapEffect(
  Config.string("MLOPS_HOME").pipe(
    Config.withDefault(join(homedir(), ".mlops")),
    Effect.orElseSucceed(() => join(homedir(), ".mlops")),
    Effect.map((home) => cacheDirectory(join(home, "images")))
  )
)

// ---- what the image needs of the host ---------------------------------------------------------

/** The CUDA an image needs: its `NVIDIA_REQUIRE_CUDA` (`cuda>=12.4 brand=…`), else its `CUDA_VERSION`'s major.minor. @category inspecting */
export const requiredCuda = (env: Readonly<Record<string, string>>): string | undefined => {
  const require = /cuda>=\s*(\d+\.\d+)/.exec(env.NVIDIA_REQUIRE_CUDA ?? "")?.[1]
  if (require !== undefined) return require
  return /^(\d+\.\d+)/.exec(env.CUDA_VERSION ?? "")?.[1]
}

/** The version a tag names (`v0.5.14`, `0.5.18-cu130` → `0.5.14`, `0.5.18`), when it names one. @category inspecting */
export const tagVersion = (image: string): string | undefined => {
  const ref = image.split("@")[0] ?? image
  const slash = ref.lastIndexOf("/")
  const colon = ref.lastIndexOf(":")
  if (colon <= slash) return undefined
  return /^v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)(?:$|[-+_])/.exec(ref.slice(colon + 1))?.[1]
}

// ---- the runtime -----------------------------------------------------------------------------

const PROBE_TIMEOUT = "2 minutes"
/** Where a short program's secrets directory is mounted inside its container. */
const SECRETS_MOUNT = "/run/mlops-secrets"
/** The word of a short program's argv replaced by its secrets directory on the host. */
const SECRETS_DIR = "@MLOPS_SECRETS_DIR@"

/**
 * Run the tool's argv (`"$@"`), first writing the payload (in the environment, never on a
 * command line) to a fresh 0700 directory put in place of `SECRETS_DIR`; removed afterwards.
 */
const WITH_SECRETS = `umask 077
d=$(mktemp -d) || exit 125
trap 'rm -rf "$d"' EXIT
trap 'exit 143' HUP INT TERM
printf '%s' "$${ServerCommand.secretsEnv}" >"$d/secrets"
unset ${ServerCommand.secretsEnv}
for a do
  shift
  case $a in *${SECRETS_DIR}*) a="\${a%%${SECRETS_DIR}*}$d\${a#*${SECRETS_DIR}}" ;; esac
  set -- "$@" "$a"
done
"$@"`

/** The label every job container carries: the job's name. */
const jobLabel = "mlops.job"

/** The login user's `uid:gid`, for the container's `--user`. */
const idsOf = (conn: Connection) =>
  Effect.gen(function* () {
    const result = yield* conn.exec(
      RemoteCommand.make(["sh", "-c", 'printf "%s:%s" "$(id -u)" "$(id -g)"']),
      {
        timeout: "30 seconds"
      }
    )
    const ids = result.stdout.trim()
    if (/^\d+:\d+$/.test(ids)) return ids
    // as root the job's files could not be removed by the user: refused rather than guessed
    return yield* new ProbeFailed({
      host: conn.host.alias,
      probe: "id -u / id -g",
      reason: `the login user's ids were not read (${result.stderr.trim() || `exit ${result.exitCode}`})`,
      fix: `check that \`id\` runs on ${conn.host.alias} for its login user`
    })
  })

/** The environment split by name: what may be shown (passed by name to the tool) and what is secret (the payload's). */
const splitEnv = (env: Readonly<Record<string, string>>) => {
  const plain: Record<string, string> = {}
  const secret: Record<string, string> = {}
  for (const [key, value] of Object.entries(env)) {
    if (Secrets.isSecretEnvName(key)) secret[key] = value
    else plain[key] = value
  }
  return { plain, secret }
}

const runtime = (given: ImageSpec & { readonly image: string }): Runtime<Error> => {
  const tool = given.tool ?? ContainerSettings.defaultTool
  const pull = given.pull ?? ContainerSettings.defaultPull
  const image = given.image
  // what this launch saw of the image (prepare, locate): its id and ENV
  let seen: Containers.ImageInfo | undefined
  let home: string | undefined

  const present = (conn: Connection) =>
    Effect.gen(function* () {
      const info = yield* Containers.clientOf(conn, tool).image(image)
      if (info === undefined)
        return yield* new ImageNotFound({
          host: conn.host.alias,
          tool,
          image,
          reason: "it is not on the host",
          fix: `pull it (\`${tool} pull ${image}\` on ${conn.host.alias}, or launch with --pull missing)`
        })
      seen = info
      return info
    })

  const probeIn = (conn: Connection, info: Containers.ImageInfo, engine: Engine) =>
    Effect.gen(function* () {
      const cache = yield* Effect.serviceOption(ImageCache)
      const cached = Option.isSome(cache) ? yield* cache.value.read(info.id, engine.name) : undefined
      if (cached !== undefined)
        return { how: cached.how, interpreter: cached.interpreter, probe: cached.probe }
      const client = Containers.clientOf(conn, tool)
      const command = client.runCommand({
        image: info.id,
        detach: false,
        remove: true,
        // a timeout's TERM reaches the program (a Python as pid 1 ignores it) and the container goes
        init: true,
        entrypoint: "sh",
        argv: [
          "-c",
          IMAGE_DISCOVER,
          "mlops-python",
          PROBE,
          engine.python.package,
          engine.python.entryPoint,
          ...engine.python.fingerprintFiles
        ]
      })
      const result = yield* conn.exec(command, { timeout: PROBE_TIMEOUT })
      if (!result.stdout.includes("home\t")) {
        const refused = result.exitCode === 0 ? undefined : refusal(conn, result.stderr)
        return yield* refused ??
          new EngineNotInImage({
            host: conn.host.alias,
            image,
            reason: `its shell did not run the probe (exit ${result.exitCode ?? result.signal}: ${result.stderr.trim().split("\n").slice(-2).join(" ") || "no output"})`,
            fix: `check the image runs (\`${tool} run --rm --entrypoint sh ${image} -c 'command -v python3'\`)`
          })
      }
      const { tried } = parse(result.stdout)
      const hit = tried.find((t) => t.outcome === "found")
      if (hit?.probed === undefined) {
        const lookedAt = tried.map(
          (t) => `${t.path} (${t.outcome === "missing" ? `no ${engine.displayName}` : t.outcome})`
        )
        return yield* new EngineNotInImage({
          host: conn.host.alias,
          image,
          reason: `${engine.displayName} is not in it; tried ${lookedAt.join(", ") || "no Python on its PATH"}`,
          fix: `use an image with ${engine.displayName} (${engine.python.install} in its Python)`
        })
      }
      const entry: CachedProbe = {
        format: 1,
        imageId: info.id,
        engine: engine.name,
        how: hit.how,
        interpreter: hit.path,
        probe: hit.probed
      }
      if (Option.isSome(cache)) yield* cache.value.write(entry)
      return { how: hit.how, interpreter: hit.path, probe: hit.probed }
    })

  /** The tool's refusal to run the image, when it is one mlops knows. */
  const refusal = (conn: Connection, stderr: string) =>
    Containers.runRefusal(conn.host.alias, tool, image, stderr)

  const located = (
    conn: Connection,
    info: Containers.ImageInfo,
    engine: Engine,
    found: { readonly how: string; readonly interpreter: string; readonly probe: Probed }
  ): Located | undefined =>
    found.probe.packageVersion === null || found.probe.versionSource === null
      ? undefined
      : {
          interpreter: found.interpreter,
          setting: image,
          source: conn.host.container?.image === image ? "hosts.json" : "--image",
          how: `image (${found.how})`,
          where: `in image ${image} (${Containers.shortId(info.id)}) at ${found.interpreter}`,
          pythonVersion: found.probe.version,
          engine: engine.name,
          package: engine.python.package,
          engineVersion: found.probe.packageVersion,
          versionSource: found.probe.versionSource,
          location: found.probe.location ?? "",
          fileHashes: found.probe.fileHashes,
          runtime: name,
          installId: info.id
        }

  const parts = (program: Program) => {
    const { plain, secret } = splitEnv(program.env)
    return {
      plain,
      made: ServerCommand.parts({
        target: program.target,
        shown: program.shown,
        secrets: program.secrets,
        env: plain,
        secretEnv: secret,
        ...(program.flags === undefined ? {} : { flags: program.flags })
      })
    }
  }

  return {
    spec: spec({ image, tool }),
    form: "InImage",
    description: `the image ${image} (${tool})`,
    prepare: (conn, report) =>
      Effect.gen(function* () {
        const client = Containers.clientOf(conn, tool)
        yield* client.version
        const info = pull === "always" ? undefined : yield* client.image(image)
        if (info !== undefined) {
          seen = info
          return
        }
        if (pull === "never") {
          yield* present(conn)
          return
        }
        const step = `pulling ${image}`
        yield* report({ step, detail: `${tool} pull ${image}` })
        seen = yield* client.pull(image, (line) => report({ step, detail: line.trim() }))
      }),
    locate: (conn, o) =>
      Effect.gen(function* () {
        // the image prepare found (or pulled): asked again only when it did not look
        const info = seen ?? (yield* present(conn))
        // where `~/` model paths point, for the short programs' mounts
        home ??= yield* conn.files.resolvePath("~").pipe(Effect.orElseSucceed(() => undefined))
        let refused: EngineNotInImage | undefined
        for (const engine of o.engines) {
          const found = yield* Effect.either(probeIn(conn, info, engine))
          if (Either.isLeft(found)) {
            // only "not in this image" moves on to the next engine
            if (found.left._tag !== "EngineNotInImage") return yield* found.left
            refused ??= found.left
            continue
          }
          const at = located(conn, info, engine, found.right)
          if (at !== undefined) return { engine, located: at }
        }
        return yield* refused ??
          new EngineNotInImage({
            host: conn.host.alias,
            image,
            reason: "no engine given",
            fix: "name an engine (--engine)"
          })
      }),
    preflight: (conn, at) =>
      Effect.gen(function* () {
        const client = Containers.clientOf(conn, tool)
        const info = seen?.id === at.installId ? seen : yield* present(conn)
        const warnings: Array<string> = []
        const tagged = tagVersion(image)
        if (tagged !== undefined && !at.engineVersion.startsWith(tagged))
          warnings.push(
            `the tag of ${image} says ${tagged} but the image holds ${at.engine} ${at.engineVersion}: the checks follow ${at.engineVersion}`
          )
        // a host without nvidia-smi is the GPU probe's problem, reported beside this
        const driver = yield* Effect.option(Probes.driver(conn))
        if (Option.isNone(driver))
          return { summary: `image ${Containers.shortId(info.id)} (${tool})`, warnings }
        const requires = requiredCuda(info.env)
        const runs = driver.value.cuda
        // what nvidia-container-cli would refuse at the start, said before anything starts
        if (requires !== undefined && runs !== undefined && Probes.compareVersions(requires, runs) > 0)
          return yield* new CudaDriverTooOld({
            evidence: [],
            process: "preflight",
            phase: "starting",
            kind: "container-requirement",
            requiredCuda: requires,
            driverCuda: runs,
            reason: `image ${image} needs CUDA ${requires} but the driver on ${conn.host.alias} (${driver.value.version}) runs CUDA ${runs} at most`,
            fix: {
              action: `upgrade the NVIDIA driver on ${conn.host.alias} to one that runs CUDA ${requires}, or use an image built for CUDA ${runs} or older`
            }
          })
        // the GPUs reach a container through the tool (the NVIDIA toolkit or CDI is set up)
        const result = yield* conn.exec(
          client.runCommand({
            image: info.id,
            detach: false,
            remove: true,
            // a timeout's TERM reaches the program (a Python as pid 1 ignores it) and the container goes
            init: true,
            gpus: "all",
            entrypoint: at.interpreter,
            argv: ["-c", ""]
          }),
          { timeout: PROBE_TIMEOUT }
        )
        if (result.exitCode !== 0) {
          // named as diagnose names it (no GPU toolkit, a CUDA requirement), else the tool's words
          const failure = Classifier.classifyText(result.stderr, result).failure
          if (failure !== undefined && startRefusals.has(failure._tag)) return yield* failure
          return yield* refusal(conn, result.stderr) ??
            new ContainerRunRefused({
              host: conn.host.alias,
              tool,
              image,
              reason: `a container with the GPUs did not run (exit ${result.exitCode ?? result.signal}): ${result.stderr.trim().split("\n").slice(-2).join(" ") || "no output"}`,
              fix: `run it by hand to see why: \`${tool} run --rm ${Containers.gpuArgs(tool, "all").join(" ")} ${image} true\``
            })
        }
        return {
          summary: `image ${Containers.shortId(info.id)} (${tool})${requires === undefined ? "" : `: CUDA ${requires}, the driver ${driver.value.version} runs ${runs ?? "?"}`}`,
          warnings
        }
      }),
    // what prepare found is what the name gives now; asked only of a runtime that did not prepare
    current: (conn) =>
      seen !== undefined
        ? Effect.succeed(seen.id)
        : Effect.map(Containers.clientOf(conn, tool).image(image), (info) => info?.id),
    command: (at, program) => {
      const { plain, made } = parts(program)
      const secretsMount =
        made.payload === undefined
          ? {}
          : {
              mounts: [{ source: SECRETS_DIR, target: SECRETS_MOUNT, readOnly: false }],
              envNames: [ServerCommand.secretsFileEnv]
            }
      // the model read-only where the server would see it (the argument check reads its config);
      // no cache: a short program fills none, and a missing mount source would be made as root
      const model = program.paths.model
      const modelMount =
        model === undefined || (home === undefined && !model.startsWith("/"))
          ? []
          : [{ source: absolute(home ?? "/", model), target: absolute(home ?? "/", model), readOnly: true }]
      const argv = Containers.runArgv(tool, {
        image: at.installId,
        detach: false,
        remove: true,
        // a timeout's TERM reaches the program (a Python as pid 1 ignores it) and the container goes
        init: true,
        ...(program.gpus ? { gpus: "all" as const } : {}),
        mounts: [...modelMount, ...(secretsMount.mounts ?? [])],
        envNames: [...Object.keys(plain), ...(secretsMount.envNames ?? [])],
        entrypoint: at.interpreter,
        argv: made.words
      })
      if (made.payload === undefined) return RemoteCommand.make([tool, ...argv], { env: plain })
      return RemoteCommand.make(["sh", "-c", WITH_SECRETS, "mlops-secrets", tool, ...argv], {
        env: {
          ...plain,
          [ServerCommand.secretsEnv]: made.payload,
          [ServerCommand.secretsFileEnv]: `${SECRETS_MOUNT}/secrets`
        }
      })
    },
    job: (conn, job) =>
      Effect.gen(function* () {
        const info = seen ?? (yield* present(conn))
        const { plain, secret } = splitEnv(job.env)
        // docker runs the program as root unless told: what it writes in the run directory would
        // be root's, and the user could not remove it. Rootless podman's root is the user already
        const user = tool === "docker" ? yield* idsOf(conn) : undefined
        const cname = Containers.containerName(job.name, job.runDir)
        const [, ...options] = Containers.runArgv(tool, {
          image: info.id,
          name: cname,
          detach: false,
          remove: true,
          labels: {
            [jobLabel]: job.name,
            "mlops.run-dir": job.runDir,
            "mlops.image": image,
            "mlops.user": conn.host.user
          },
          // TERM reaches the program, and its children are reaped
          init: true,
          shm: conn.host.container?.shm ?? ContainerSettings.defaultShm,
          mounts: [{ source: job.runDir, target: job.runDir, readOnly: false }],
          envNames: Object.keys(plain),
          workdir: job.cwd ?? job.runDir,
          ...(user === undefined || user === "0:0" ? {} : { user }),
          entrypoint: "sh",
          argv: ["-c", UNSEAL, "mlops-job", job.runDir, ...job.argv]
        })
        return {
          command: RemoteCommand.make(
            ["sh", "-c", IN_FOREGROUND, "mlops-job-image", tool, cname, job.runDir, ...options],
            {
              // secret values in the environment only, for the shell to hand to the container in a file
              env: Object.keys(secret).length === 0 ? plain : { ...plain, [SECRETS_ENV]: exportsOf(secret) }
            }
          ),
          cwd: job.cwd ?? job.runDir,
          where: `a container of ${image} (${tool})`
        }
      }),
    runnable: (at, program): Runnable => {
      const { plain, made } = parts(program)
      return {
        _tag: "InImage",
        tool,
        image,
        imageId: at.installId,
        argv: [at.interpreter, ...made.words],
        env: plain,
        secrets: made.payload,
        shown: ServerCommand.formatCommandLine(
          [at.interpreter],
          "module" in program.target
            ? ["-m", program.target.module, ...(program.target.leading ?? []), ...program.shown]
            : ["-c", "…", ...program.shown]
        )
      }
    }
  }
}

/**
 * A container image: applies to hosts whose hosts.json entry names an `image`, or when asked
 * for (`spec({ image })`: its settings over the entry's, field by field).
 *
 * @category kinds
 */
export const kind: Kind<Error> = {
  kind: name,
  resolve: (host, asked) => {
    const entry = host.container
    if (asked === undefined)
      return Either.right(
        entry?.image === undefined
          ? undefined
          : spec({
              image: entry.image,
              tool: entry.runtime ?? ContainerSettings.defaultTool,
              pull: entry.pull ?? ContainerSettings.defaultPull
            })
      )
    return Either.flatMap(decode(asked), (given) => {
      const image = given.image ?? entry?.image
      if (image === undefined)
        return Either.left(
          new InvalidRuntime({
            kind: name,
            reason: "no image named",
            fix: `name one (--image lmsysorg/sglang:v0.5.11) or set "image" for ${host.alias} in hosts.json`
          })
        )
      return Either.right(
        spec({
          image,
          tool: given.tool ?? entry?.runtime ?? ContainerSettings.defaultTool,
          pull: given.pull ?? entry?.pull ?? ContainerSettings.defaultPull
        })
      )
    })
  },
  make: (given) =>
    Either.flatMap(decode(given), (s) =>
      s.image === undefined
        ? Either.left(
            new InvalidRuntime({ kind: name, reason: "no image named", fix: "name one (--image IMAGE)" })
          )
        : Either.right(runtime({ ...s, image: s.image }))
    )
}
