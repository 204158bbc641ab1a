/**
 * Facts about a host read with one command each: GPUs, processes on GPUs, who holds a port
 * (a Python environment is found by serve's runtime). A missing tool or unreadable output is a
 * `ProbeFailed` with a fix.
 *
 * @since 0.1.0
 */
import { Effect, Either } from "effect"
import type { Connection, ExecResult } from "./Connection.js"
import { type CommandError, ProbeFailed } from "./Errors.js"
import * as parsers from "./internal/probeParsers.js"
import * as RemoteCommand from "./RemoteCommand.js"

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
