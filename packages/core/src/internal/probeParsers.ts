/**
 * Pure parsers for probe outputs (nvidia-smi CSV, ss). Each returns
 * the value or a reason string; the caller turns a reason into ProbeFailed.
 *
 * @internal
 */
import { Either } from "effect"
import type { Gpu, GpuProcess, PortHolder } from "../Probes.js"

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
