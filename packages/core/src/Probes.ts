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

/**
 * The newest CUDA each driver branch runs, by the first driver of the branch that runs it
 * (Linux, x86_64: NVIDIA's CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver
 * Versions"). What `nvidia-smi` prints as "CUDA Version" and what nvidia-container-cli compares
 * an image's `cuda>=` requirement against; forward compatibility on data-center GPUs aside.
 */
const CUDA_BY_DRIVER: ReadonlyArray<readonly [string, string]> = [
  ["590.44.01", "13.1"],
  ["580.65.06", "13.0"],
  ["575.51.03", "12.9"],
  ["570.26", "12.8"],
  ["560.28.03", "12.6"],
  ["555.42.02", "12.5"],
  ["550.54.14", "12.4"],
  ["545.23.06", "12.3"],
  ["535.54.03", "12.2"],
  ["530.30.02", "12.1"],
  ["525.60.13", "12.0"],
  ["520.61.05", "11.8"],
  ["515.43.04", "11.7"],
  ["510.39.01", "11.6"],
  ["495.29.05", "11.5"],
  ["470.42.01", "11.4"],
  ["465.19.01", "11.3"],
  ["460.27.03", "11.2"],
  ["455.23.05", "11.1"],
  ["450.36.06", "11.0"]
]

/** Dotted versions compared part by part (`550.54.15` > `550.54.14`). @category probes */
export const compareVersions = (a: string, b: string): number => {
  const pa = a.split(".").map(Number)
  const pb = b.split(".").map(Number)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/** The newest CUDA a driver runs (`550.54.15` → `12.4`); undefined for one older than the table. @category probes */
export const cudaOfDriver = (driver: string): string | undefined =>
  CUDA_BY_DRIVER.find(([first]) => compareVersions(driver, first) >= 0)?.[1]

/** @category models */
export interface Driver {
  /** `550.54.15`. */
  readonly version: string
  /** The newest CUDA it runs (`12.4`), when known. */
  readonly cuda: string | undefined
}

/** The NVIDIA driver's version (`nvidia-smi --query-gpu=driver_version`) and the CUDA it runs. @category probes */
export const driver = Effect.fn("Probes.driver")(function* (
  conn: Connection
): Effect.fn.Return<Driver, CommandError | ProbeFailed> {
  const result = yield* run(conn, ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
  yield* requireTool(conn, "nvidia-smi", result, NVIDIA_FIX)
  const version = result.stdout.split("\n")[0]?.trim() ?? ""
  if (result.exitCode !== 0 || !/^\d+(?:\.\d+)+$/.test(version)) {
    return yield* failed(
      conn,
      "nvidia-smi",
      `exit ${result.exitCode}: ${tail(result.stdout + result.stderr)}`,
      NVIDIA_FIX
    )
  }
  return { version, cuda: cudaOfDriver(version) }
})
