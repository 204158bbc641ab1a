/**
 * Facts about a host read with one command each: GPUs, processes on GPUs, a Python
 * environment and its package, who holds a port. A missing tool or unreadable output is a
 * `ProbeFailed` with a fix.
 *
 * @since 0.1.0
 */
import { Effect, Either } from "effect"
import type { Connection, ExecResult } from "./Connection.js"
import { type CommandError, ProbeFailed } from "./Errors.js"
import * as parsers from "./internal/probeParsers.js"
import * as RemoteCommand from "./RemoteCommand.js"
import * as RemotePath from "./RemotePath.js"

/** @category models */
export interface Gpu {
  readonly index: number
  readonly name: string
  readonly memoryTotalMiB: number
  readonly memoryUsedMiB: number
  readonly uuid: string
  /** `"8.6"`; absent when the driver is too old to report it. */
  readonly computeCapability?: string
}

/** @category models */
export interface GpuProcess {
  readonly pid: number
  readonly gpuUuid: string
  /** Absent when the driver does not report it (`[N/A]`). */
  readonly usedMemoryMiB?: number
}

/** @category models */
export interface PythonEnv {
  readonly executable: string
  /** `"3.11.9"` */
  readonly version: string
  readonly package: string
  /** Absent when the package is not installed. */
  readonly packageVersion?: string
  /** The package's directory (or module file). */
  readonly packageLocation?: string
  /** sha256 (hex) of the files asked for, by their path inside the package; absent when none was readable. */
  readonly fileHashes?: Readonly<Record<string, string>>
}

/** @category models */
export interface PortHolder {
  readonly port: number
  /** Absent when the socket belongs to another user and the probe is not root. */
  readonly pid?: number
  readonly command?: string
}

const PROBE_TIMEOUT = "20 seconds"

const failed = (conn: Connection, probe: string, reason: string, fix?: string) =>
  new ProbeFailed({ host: conn.host.alias, probe, reason, ...(fix === undefined ? {} : { fix }) })

const tail = (text: string) => text.trim().split("\n").slice(-5).join("\n")

const run = (conn: Connection, argv: readonly [RemoteCommand.Word, ...Array<RemoteCommand.Word>]) =>
  conn.exec(RemoteCommand.make(argv), { timeout: PROBE_TIMEOUT })

const requireTool = (conn: Connection, probe: string, result: ExecResult, fix: string) =>
  result.exitCode === 127
    ? Effect.fail(failed(conn, probe, `${probe} not found on the host`, fix))
    : Effect.void

const NVIDIA_FIX =
  "install the NVIDIA driver (it provides nvidia-smi) or add it to PATH for non-interactive shells"

const fromEither = <A>(conn: Connection, probe: string, either: Either.Either<A, string>) =>
  Either.match(either, {
    onLeft: (reason) => Effect.fail(failed(conn, probe, reason)),
    onRight: Effect.succeed
  })

/**
 * GPUs as `nvidia-smi --query-gpu=...` reports them. Drivers that reject `compute_cap`
 * are asked again without it.
 *
 * @category probes
 */
export const gpus = Effect.fn("Probes.gpus")(function* (
  conn: Connection
): Effect.fn.Return<ReadonlyArray<Gpu>, CommandError | ProbeFailed> {
  const query = (fields: string) =>
    run(conn, ["nvidia-smi", `--query-gpu=${fields}`, "--format=csv,noheader,nounits"])
  const base = "index,name,memory.total,memory.used,uuid"
  let withCap = true
  let result = yield* query(`${base},compute_cap`)
  yield* requireTool(conn, "nvidia-smi", result, NVIDIA_FIX)
  if (result.exitCode !== 0 && parsers.isUnknownField(result.stdout + result.stderr, "compute_cap")) {
    withCap = false
    result = yield* query(base)
  }
  if (result.exitCode !== 0) {
    return yield* failed(
      conn,
      "nvidia-smi",
      `exit ${result.exitCode}: ${tail(result.stdout + result.stderr)}`,
      NVIDIA_FIX
    )
  }
  return yield* fromEither(conn, "nvidia-smi", parsers.parseGpus(result.stdout, withCap))
})

/** Processes using GPUs (`nvidia-smi --query-compute-apps`). @category probes */
export const gpuProcesses = Effect.fn("Probes.gpuProcesses")(function* (
  conn: Connection
): Effect.fn.Return<ReadonlyArray<GpuProcess>, CommandError | ProbeFailed> {
  const result = yield* run(conn, [
    "nvidia-smi",
    "--query-compute-apps=pid,gpu_uuid,used_memory",
    "--format=csv,noheader,nounits"
  ])
  yield* requireTool(conn, "nvidia-smi", result, NVIDIA_FIX)
  if (result.exitCode !== 0) {
    return yield* failed(
      conn,
      "nvidia-smi",
      `exit ${result.exitCode}: ${tail(result.stdout + result.stderr)}`
    )
  }
  return yield* fromEither(conn, "nvidia-smi", parsers.parseGpuProcesses(result.stdout))
})

/** The interpreter of a Python environment: a prefix (`<prefix>/bin/python`) or an interpreter path. */
export const interpreterOf = (pythonPath: string): string => {
  const trimmed = pythonPath.replace(/\/+$/, "")
  const base = trimmed.slice(trimmed.lastIndexOf("/") + 1)
  return /^python[\d.]*$/.test(base) ? trimmed : `${trimmed}/bin/python`
}

/**
 * One exec of the environment's interpreter printing its version and the package's
 * version/location from metadata (the package is not imported), and the sha256 of `hashFiles`
 * (paths inside the package, e.g. `srt/server_args.py`): a fingerprint of the install.
 *
 * @category probes
 */
export const python = Effect.fn("Probes.python")(function* (
  conn: Connection,
  pythonPath: string,
  pkg: string,
  options: { readonly hashFiles?: ReadonlyArray<string> } = {}
): Effect.fn.Return<PythonEnv, CommandError | ProbeFailed> {
  const interpreter = interpreterOf(pythonPath)
  // a path mlops was given: `~/...` is the remote home (rendered for the shell to expand)
  const result = yield* run(conn, [
    RemotePath.make(interpreter),
    "-c",
    parsers.PYTHON_PROBE,
    pkg,
    ...(options.hashFiles ?? [])
  ])
  if (result.exitCode === 127 || result.exitCode === 126) {
    return yield* failed(
      conn,
      "python",
      `no Python interpreter at ${interpreter}`,
      `point the host's python setting at a venv/conda prefix or an interpreter that exists on ${conn.host.alias}`
    )
  }
  if (result.exitCode !== 0) {
    return yield* failed(conn, "python", `${interpreter} exited ${result.exitCode}: ${tail(result.stderr)}`)
  }
  return yield* fromEither(conn, "python", parsers.parsePythonEnv(result.stdout))
})

/** Who listens on TCP `port` (`ss -ltnpH 'sport = :PORT'`); `undefined` when nobody. @category probes */
export const portHolder = Effect.fn("Probes.portHolder")(function* (
  conn: Connection,
  port: number
): Effect.fn.Return<PortHolder | undefined, CommandError | ProbeFailed> {
  const result = yield* run(conn, ["ss", "-ltnpH", `sport = :${port}`])
  yield* requireTool(conn, "ss", result, "install iproute2 (it provides ss)")
  if (result.exitCode !== 0) {
    return yield* failed(conn, "ss", `exit ${result.exitCode}: ${tail(result.stderr)}`)
  }
  return parsers.parsePortHolder(result.stdout, port)
})
