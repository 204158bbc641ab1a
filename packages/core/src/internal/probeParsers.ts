/**
 * Pure parsers for probe outputs (nvidia-smi CSV, ss, the Python probe's JSON). Each returns
 * the value or a reason string; the caller turns a reason into ProbeFailed.
 *
 * @internal
 */
import { Either, Schema } from "effect"
import type { Gpu, GpuProcess, PortHolder, PythonEnv } from "../Probes.js"

const rows = (output: string): Array<Array<string>> =>
  output
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line) => line.split(",").map((cell) => cell.trim()))

const NOT_AVAILABLE = /^\[?N\/A\]?$|^\[Not Supported\]$/i

const int = (cell: string | undefined): number | undefined => {
  if (cell === undefined || NOT_AVAILABLE.test(cell) || !/^\d+$/.test(cell)) return undefined
  return Number(cell)
}

/** `index, name, memory.total, memory.used, uuid[, compute_cap]` rows (csv,noheader,nounits). */
export const parseGpus = (
  output: string,
  withComputeCap: boolean
): Either.Either<ReadonlyArray<Gpu>, string> => {
  const gpus: Array<Gpu> = []
  const width = withComputeCap ? 6 : 5
  for (const row of rows(output)) {
    if (row.length !== width) return Either.left(`expected ${width} fields, got: ${row.join(", ")}`)
    const [index, name, total, used, uuid, cap] = row
    const parsedIndex = int(index)
    const memoryTotalMiB = int(total)
    if (parsedIndex === undefined || memoryTotalMiB === undefined) {
      return Either.left(`unreadable GPU row: ${row.join(", ")}`)
    }
    gpus.push({
      index: parsedIndex,
      name: name!,
      memoryTotalMiB,
      memoryUsedMiB: int(used) ?? 0,
      uuid: uuid!,
      ...(cap !== undefined && /^\d+\.\d+$/.test(cap) ? { computeCapability: cap } : {})
    })
  }
  return Either.right(gpus)
}

/** True when nvidia-smi rejected a query field (old drivers do not know `compute_cap`). */
export const isUnknownField = (output: string, field: string): boolean =>
  output.includes(`"${field}" is not a valid field`)

/** `pid, gpu_uuid, used_memory` rows. */
export const parseGpuProcesses = (output: string): Either.Either<ReadonlyArray<GpuProcess>, string> => {
  const processes: Array<GpuProcess> = []
  for (const row of rows(output)) {
    if (/^no running/i.test(row.join(","))) continue
    const [pid, uuid, used] = row
    const parsedPid = int(pid)
    if (row.length !== 3 || parsedPid === undefined)
      return Either.left(`unreadable process row: ${row.join(", ")}`)
    const usedMemoryMiB = int(used)
    processes.push({
      pid: parsedPid,
      gpuUuid: uuid!,
      ...(usedMemoryMiB === undefined ? {} : { usedMemoryMiB })
    })
  }
  return Either.right(processes)
}

/**
 * `ss -ltnpH` lines: `LISTEN 0 4096 127.0.0.1:30000 0.0.0.0:* users:(("python3",pid=1234,fd=3))`.
 * The local address may be `*:PORT`, `[::]:PORT` or `0.0.0.0%lo:PORT`; the users column is
 * absent when the socket belongs to another user and we are not root.
 */
export const parsePortHolder = (output: string, port: number): PortHolder | undefined => {
  for (const line of output.split("\n")) {
    const columns = line.trim().split(/\s+/)
    if (columns.length < 5) continue
    const local = columns[3]!
    if (!local.endsWith(`:${port}`)) continue
    const users = /users:\(\("((?:[^"\\]|\\.)*)",pid=(\d+)/.exec(line)
    if (users === null) return { port }
    return { port, pid: Number(users[2]), command: users[1]! }
  }
  return undefined
}

const PythonProbeOutput = Schema.parseJson(
  Schema.Struct({
    executable: Schema.String,
    version: Schema.String,
    package: Schema.String,
    packageVersion: Schema.NullOr(Schema.String),
    packageLocation: Schema.NullOr(Schema.String),
    fileHashes: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
  })
)

/** The last stdout line of the Python probe (earlier lines may be noise from sitecustomize). */
export const parsePythonEnv = (output: string): Either.Either<PythonEnv, string> => {
  const last = output.trim().split("\n").at(-1) ?? ""
  return Schema.decodeUnknownEither(PythonProbeOutput)(last).pipe(
    Either.mapLeft(() => `unexpected output: ${last.slice(0, 200) || "(empty)"}`),
    Either.map((parsed) => ({
      executable: parsed.executable,
      version: parsed.version,
      package: parsed.package,
      ...(parsed.packageVersion === null ? {} : { packageVersion: parsed.packageVersion }),
      ...(parsed.packageLocation === null ? {} : { packageLocation: parsed.packageLocation }),
      ...(parsed.fileHashes === undefined || Object.keys(parsed.fileHashes).length === 0
        ? {}
        : { fileHashes: parsed.fileHashes })
    }))
  )
}

/**
 * The probe script: metadata only, never imports the package itself (sglang's import takes
 * seconds). Arguments: the package, then files inside it to fingerprint (sha256 of the bytes).
 */
export const PYTHON_PROBE = [
  "import hashlib, importlib.metadata as m, importlib.util as u, json, os, sys",
  "p = sys.argv[1]",
  "try:\n    v = m.version(p)\nexcept Exception:\n    v = None",
  "try:\n    s = u.find_spec(p.replace('-', '_'))\nexcept Exception:\n    s = None",
  "loc = None if s is None else (list(s.submodule_search_locations)[0] if s.submodule_search_locations else s.origin)",
  "h = {}",
  "for r in sys.argv[2:] if s is not None and s.submodule_search_locations else []:\n    try:\n        with open(os.path.join(loc, r), 'rb') as f:\n            h[r] = hashlib.sha256(f.read()).hexdigest()\n    except OSError:\n        pass",
  "print(json.dumps({'executable': sys.executable, 'version': sys.version.split()[0], 'package': p, 'packageVersion': v, 'packageLocation': loc, 'fileHashes': h}))"
].join("\n")
