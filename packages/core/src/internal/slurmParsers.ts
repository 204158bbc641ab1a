/**
 * Pure parsers for the Slurm client's output (22.05 and later): times, exit codes, GRES
 * strings, `scontrol -o` records, `sbatch --parsable`, and job states. Each returns the value
 * or a reason string (or `undefined` for an absent field); the caller makes the typed error.
 *
 * @internal
 */
import { Either } from "effect"
import type { ExitCode, JobState } from "../SlurmJob.js"

const TIME =
  /^(?:(?<days>\d+)-(?<dh>\d+)(?::(?<dm>\d+)(?::(?<ds>\d+))?)?|(?<a>\d+)(?::(?<b>\d+)(?::(?<c>\d+))?)?)$/

/**
 * A Slurm time (`--time`, `MaxTime`, squeue's `%M`/`%l`) in seconds; `null` for no limit
 * (`UNLIMITED`, `INFINITE`); `undefined` when unreadable. Slurm's forms: `M`, `M:S`, `H:M:S`,
 * `D-H`, `D-H:M`, `D-H:M:S`.
 */
export const parseTime = (text: string): number | null | undefined => {
  const trimmed = text.trim()
  if (/^(?:UNLIMITED|INFINITE|infinite)$/.test(trimmed)) return null
  const groups = TIME.exec(trimmed)?.groups
  if (groups === undefined) return undefined
  const n = (value: string | undefined) => (value === undefined ? 0 : Number(value))
  if (groups.days !== undefined)
    return ((n(groups.days) * 24 + n(groups.dh)) * 60 + n(groups.dm)) * 60 + n(groups.ds)
  if (groups.c !== undefined) return (n(groups.a) * 60 + n(groups.b)) * 60 + n(groups.c)
  if (groups.b !== undefined) return n(groups.a) * 60 + n(groups.b)
  return n(groups.a) * 60
}

const two = (n: number) => String(n).padStart(2, "0")

/** Seconds as Slurm writes them: `[D-]HH:MM:SS`. */
export const formatTime = (seconds: number): string => {
  const days = Math.floor(seconds / 86_400)
  const rest = seconds % 86_400
  const hms = `${two(Math.floor(rest / 3600))}:${two(Math.floor((rest % 3600) / 60))}:${two(rest % 60)}`
  return days > 0 ? `${days}-${hms}` : hms
}

/** `3:0` → `{ code: 3, signal: 0 }`. */
export const parseExitCode = (text: string | undefined): ExitCode | undefined => {
  const match = /^(\d+):(\d+)$/.exec(text?.trim() ?? "")
  return match === null ? undefined : { code: Number(match[1]), signal: Number(match[2]) }
}

/** One GRES of a node or a request: `gpu:a100:4(S:0-1)` → `{ name: "gpu", type: "a100", count: 4 }`. */
export interface Gres {
  readonly name: string
  readonly type?: string
  readonly count: number
}

/**
 * A GRES list as sinfo `%G`, scontrol `Gres=` or squeue `%b` print it: `gpu:2`,
 * `gpu:a100:4(S:0-1),mps:100`, `gres:gpu:1` (22.05's `%b`), `gres/gpu=2` (TRES); none for
 * `(null)` and `N/A`. A name without a count counts 1.
 */
export const parseGres = (text: string | undefined): ReadonlyArray<Gres> => {
  const trimmed = text?.trim() ?? ""
  if (trimmed === "" || trimmed === "(null)" || trimmed === "N/A") return []
  const out: Array<Gres> = []
  for (const raw of trimmed.split(/,(?![^(]*\))/)) {
    const item = raw
      .replace(/\(.*\)$/, "")
      .replace(/^(?:gres|tres)[:/]/, "")
      .replace("=", ":")
    const parts = item.split(":").filter((part) => part !== "")
    if (parts.length === 0) continue
    const last = parts[parts.length - 1]!
    const counted = /^\d+$/.test(last)
    const count = counted ? Number(last) : 1
    const names = counted ? parts.slice(0, -1) : parts
    if (names.length === 0) continue
    out.push(names.length > 1 ? { name: names[0]!, type: names[1]!, count } : { name: names[0]!, count })
  }
  return out
}

/** GPUs of GRES `name` (any type unless `type` is given) in a GRES list. */
export const gresCount = (list: ReadonlyArray<Gres>, name: string, type?: string): number =>
  list
    .filter((gres) => gres.name === name && (type === undefined || gres.type === type))
    .reduce((sum, gres) => sum + gres.count, 0)

const KEY = /(?:^|\s)([A-Za-z][A-Za-z0-9_:/.]*)=/g

/**
 * One `scontrol show ... -o` record: `Key=Value` pairs on one line. A value may hold spaces
 * (`OS=Linux 6.1 #1 SMP`): it runs to the next ` Key=`.
 */
export const parseKeyValues = (line: string): ReadonlyMap<string, string> => {
  const starts: Array<{ key: string; keyAt: number; valueAt: number }> = []
  for (const match of line.matchAll(KEY)) {
    const keyAt = match.index + match[0].length - match[1]!.length - 1
    starts.push({ key: match[1]!, keyAt, valueAt: match.index + match[0].length })
  }
  const out = new Map<string, string>()
  starts.forEach((start, i) => {
    const end = i + 1 < starts.length ? starts[i + 1]!.keyAt : line.length
    if (!out.has(start.key)) out.set(start.key, line.slice(start.valueAt, end).trim())
  })
  return out
}

/** The records of `scontrol show <entity> -o` output (one per non-empty line). */
export const parseRecords = (output: string): ReadonlyArray<ReadonlyMap<string, string>> =>
  output
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map(parseKeyValues)

/** `sbatch --parsable` prints `ID` or `ID;cluster`. */
export const parseSubmitted = (stdout: string): Either.Either<string, string> => {
  const line = stdout
    .trim()
    .split("\n")
    .filter((l) => l.trim() !== "")
    .pop()
  const match = /^(\d+)(?:;\S+)?$/.exec(line?.trim() ?? "")
  return match === null
    ? Either.left(`expected a job id, got ${JSON.stringify(stdout.trim())}`)
    : Either.right(match[1]!)
}

/** `CANCELLED by 0` (sacct), `COMPLETED+` → `CANCELLED`, `COMPLETED`. */
export const baseState = (text: string): string =>
  (text.trim().split(/\s+/)[0] ?? "").replace(/\+$/, "").toUpperCase()

const none = (value: string | undefined): string | undefined =>
  value === undefined || value === "" || value === "(null)" || value === "None assigned" ? undefined : value

/** A Slurm state with the facts around it, as a typed `JobState`. */
export const jobState = (fields: {
  readonly state: string
  readonly reason?: string | undefined
  readonly exitCode?: string | undefined
  readonly nodes?: string | undefined
}): JobState => {
  const state = baseState(fields.state)
  const node = none(fields.nodes) ?? "(unknown)"
  const exit = parseExitCode(fields.exitCode)
  const exitCode = exit === undefined ? {} : { exitCode: exit }
  switch (state) {
    case "PENDING":
      return { _tag: "Pending", reason: none(fields.reason) ?? "None" }
    case "RUNNING":
      return { _tag: "Running", node }
    case "COMPLETING":
      return { _tag: "Completing", node }
    case "SUSPENDED":
      return { _tag: "Suspended", node }
    case "COMPLETED":
      return { _tag: "Completed", ...exitCode }
    case "FAILED":
      return { _tag: "Failed", ...exitCode, reason: none(fields.reason) ?? "None" }
    case "TIMEOUT":
      return { _tag: "Timeout", ...exitCode }
    case "OUT_OF_MEMORY":
      return { _tag: "OutOfMemory", ...exitCode }
    case "NODE_FAIL":
      return { _tag: "NodeFail", ...exitCode, node }
    case "PREEMPTED":
      return { _tag: "Preempted", ...exitCode }
    case "CANCELLED":
      return { _tag: "Cancelled", ...exitCode }
    case "BOOT_FAIL":
    case "DEADLINE":
    case "REVOKED":
    case "SPECIAL_EXIT":
      return { _tag: "Ended", ...exitCode, slurmState: state }
    default:
      return { _tag: "Other", slurmState: state }
  }
}
