/**
 * A job's directory on its host, `<stateDir>/jobs/<name>/`: `job.json` (what was asked), the
 * queue's files (`ticket`, `queued`, `gpus`, `refused`, see `scripts.ts`), the placement's own
 * record (a process group's `pid`, `pgid`, `start`, `exit`), `stopped` for a deliberate stop,
 * `log`, and `code/` when a working directory was synced. Kept apart from deployments: a job's
 * record has no port, engine or readiness, and `status` lists both.
 *
 * @internal
 */
import { createHash } from "node:crypto"
import type { Connection } from "@mlops/core/Connection"
import { RemoteFileError } from "@mlops/core/Errors"
import { defaultStateDir } from "@mlops/core/HostConfig"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import * as Sync from "@mlops/core/Sync"
import { Effect, Option, Schema } from "effect"
import { SecretsDigest } from "../deploymentFiles.js"
import { RecordedSpec } from "../seams.js"

/** `job.json`. */
export const JobFile = Schema.Struct({
  name: Schema.String,
  /** The command as shown (it never holds a secret: those travel in the environment). */
  argv: Schema.Array(Schema.String),
  envNames: Schema.Array(Schema.String),
  secrets: SecretsDigest,
  /** GPUs asked for: a count, or these ids; `wait`: queued until free rather than refused. */
  gpus: Schema.Struct({
    count: Schema.Number,
    ids: Schema.NullOr(Schema.Array(Schema.Number)),
    wait: Schema.Boolean
  }),
  placement: RecordedSpec,
  runtime: RecordedSpec,
  /** Where the command ran: the synced code, or the home directory. */
  cwd: Schema.String,
  /** What `--sync` sent, when it was asked. */
  sync: Schema.NullOr(Schema.Struct({ local: Schema.String, files: Schema.Number, bytes: Schema.Number })),
  createdAt: Schema.Number,
  mlopsVersion: Schema.String
})
export type JobFile = typeof JobFile.Type

export const jobFile = "job.json"

/** Where jobs live under a host's state directory. */
export const rootOf = (stateDir: string = defaultStateDir): string => `${stateDir.replace(/\/+$/, "")}/jobs`

/** The jobs root on the host `conn` reaches, as an absolute path. */
export const hostRootOf = (conn: Connection) => conn.files.resolvePath(rootOf(conn.host.stateDir))

/** A job's name: as a deployment's, a directory name that any shell word can hold. */
export const isValidName = (name: string): boolean => /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)

/** The default name of a job running `argv`: its script's (or program's) base name. */
export const defaultName = (argv: ReadonlyArray<string>): string => {
  // `python -m pkg.mod`, `torchrun [opts] train.py`, `accelerate launch train.py`, `./run.sh`
  const module = argv.indexOf("-m")
  const script =
    module >= 0 && argv[module + 1] !== undefined
      ? argv[module + 1]!.split(".").pop()!
      : (argv.find((word, i) => i > 0 && /\.(py|sh)$/.test(word)) ?? argv[0] ?? "job")
  const base = (script.split("/").pop() ?? "job")
    .replace(/\.(py|sh)$/, "")
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
  return base === "" ? "job" : base.slice(0, 56)
}

/** Every name under the jobs root (one `ls`; none when there is no root yet). */
export const names = Effect.fn("Job.names")(function* (conn: Connection) {
  const root = yield* hostRootOf(conn)
  const result = yield* conn.exec(RemoteCommand.make(["ls", "-1", "--", root]), { timeout: "15 seconds" })
  if (result.exitCode !== 0) return [] as ReadonlyArray<string>
  return result.stdout
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && isValidName(line))
    .sort()
})

const decodeJob = Schema.decodeUnknownOption(Schema.parseJson(JobFile))

/** What a job's directory says: its request, and the queue's and the stop's files. */
export interface Recorded {
  readonly runDir: string
  readonly logPath: string
  readonly job: JobFile
  /** Its GPUs once it picked them (`0,1`; empty: none asked). */
  readonly gpus: string | undefined
  /** The ticket it waits behind while queued. */
  readonly queuedBehind: string | undefined
  readonly refused: ReadonlyArray<string> | undefined
  readonly stopped: string | undefined
}

const text = (conn: Connection, path: string) => RemoteFiles.readTextIfExists(conn, path)

/** The record of `name` on the host; undefined when there is none (or it is not a job's). */
export const read = Effect.fn("Job.read")(function* (conn: Connection, name: string) {
  const runDir = `${yield* hostRootOf(conn)}/${name}`
  const [job, gpus, queued, refused, stopped] = yield* Effect.all(
    [
      text(conn, `${runDir}/${jobFile}`),
      text(conn, `${runDir}/gpus`),
      text(conn, `${runDir}/queued`),
      text(conn, `${runDir}/refused`),
      text(conn, `${runDir}/stopped`)
    ],
    { concurrency: "unbounded" }
  )
  const decoded = job === undefined ? Option.none() : decodeJob(job)
  if (Option.isNone(decoded)) return undefined
  const recorded: Recorded = {
    runDir,
    logPath: `${runDir}/log`,
    job: decoded.value,
    gpus: gpus?.trim(),
    queuedBehind: queued?.trim() || undefined,
    refused: refused?.split("\n").filter((line) => line !== ""),
    stopped: stopped?.trim() || undefined
  }
  return recorded
})

/** Write `job.json` in a fresh directory (0700; the file 0600), clearing a previous run's queue files. */
export const write = Effect.fn("Job.write")(function* (conn: Connection, runDir: string, job: JobFile) {
  yield* conn.files.mkdir(runDir)
  yield* conn.files.write(`${runDir}/${jobFile}`, `${JSON.stringify(job, null, 2)}\n`)
})

/**
 * The host's mirror of a local working directory (`<stateDir>/sync/<its name>-<hash of its
 * path>`): what `--sync` keeps up to date, shared by every job synced from that directory.
 */
export const mirrorOf = Effect.fn("Job.mirrorOf")(function* (conn: Connection, local: string) {
  const base = (
    local
      .split("/")
      .filter((part) => part !== "")
      .pop() ?? "code"
  ).replace(/[^A-Za-z0-9._-]+/g, "-")
  const hash = createHash("sha256").update(local).digest("hex").slice(0, 10)
  const root = yield* conn.files.resolvePath(conn.host.stateDir.replace(/\/+$/, ""))
  return `${root}/sync/${base.slice(0, 40)}-${hash}`
})

/** The job's own copy of the mirror (modes kept; the mirror's manifest left out), in one command. */
export const snapshot = Effect.fn("Job.snapshot")(function* (conn: Connection, mirror: string, code: string) {
  // its run directory is made here, private, when the snapshot is the first thing in it
  yield* conn.files.mkdir(code.slice(0, code.lastIndexOf("/")))
  const result = yield* conn.exec(
    RemoteCommand.make([
      "sh",
      "-c",
      'rm -rf -- "$2" && cp -a -- "$1" "$2" && rm -f -- "$2/$3"',
      "mlops-snapshot",
      mirror,
      code,
      Sync.MANIFEST_FILE
    ]),
    { timeout: "5 minutes" }
  )
  if (result.exitCode !== 0)
    return yield* new RemoteFileError({
      host: conn.host.alias,
      path: code,
      operation: "write",
      notFound: false,
      reason: `copying the synced code from ${mirror} failed: ${result.stderr.trim() || `exit ${result.exitCode}`}`
    })
})
