/**
 * Partitions (`scontrol show partition -o`) and nodes (`sinfo -h -N -o SINFO_NODE_FORMAT`), for
 * preflight and status.
 *
 * @internal
 */
import { Either } from "effect"
import { type Gres, parseGres, parseRecords, parseTime } from "./slurmParsers.js"

/** @internal */
export interface SlurmPartition {
  readonly name: string
  readonly isDefault: boolean
  /** `UP`, `DOWN`, `DRAIN`, `INACTIVE`. */
  readonly state: string
  /** Seconds; null: unlimited. */
  readonly maxTimeSeconds: number | null
  /** As Slurm prints it (`00:10:00`, `UNLIMITED`). */
  readonly maxTime: string
  /** `ALL`, or the names. */
  readonly allowAccounts: "ALL" | ReadonlyArray<string>
  readonly denyAccounts: ReadonlyArray<string>
  readonly allowQos: "ALL" | ReadonlyArray<string>
  readonly denyQos: ReadonlyArray<string>
}

/** @internal */
export interface SlurmNode {
  readonly name: string
  readonly partitions: ReadonlyArray<string>
  /** sinfo's long state: `idle`, `mixed`, `allocated`, `down*`, `drained`. */
  readonly state: string
  readonly gres: ReadonlyArray<Gres>
  readonly features: ReadonlyArray<string>
}

const list = (text: string | undefined): ReadonlyArray<string> =>
  text === undefined || text === "" || text === "(null)" ? [] : text.split(",").filter((item) => item !== "")

const allowList = (text: string | undefined): "ALL" | ReadonlyArray<string> =>
  text === undefined || text === "ALL" ? "ALL" : list(text)

/** `scontrol show partition -o` records. */
export const parsePartitions = (output: string): Either.Either<ReadonlyArray<SlurmPartition>, string> => {
  const partitions: Array<SlurmPartition> = []
  for (const record of parseRecords(output)) {
    const name = record.get("PartitionName")
    const maxTime = record.get("MaxTime") ?? "UNLIMITED"
    const maxTimeSeconds = parseTime(maxTime)
    if (name === undefined || maxTimeSeconds === undefined)
      return Either.left(`unreadable partition record: ${JSON.stringify([...record.entries()].slice(0, 3))}`)
    partitions.push({
      name,
      isDefault: record.get("Default") === "YES",
      state: record.get("State") ?? "UP",
      maxTimeSeconds,
      maxTime,
      allowAccounts: allowList(record.get("AllowAccounts")),
      denyAccounts: list(record.get("DenyAccounts")),
      allowQos: allowList(record.get("AllowQos")),
      denyQos: list(record.get("DenyQos"))
    })
  }
  return Either.right(partitions)
}

/** sinfo's per-node fields, `|`-separated: name, partition (`*` marks the default), state, GRES, features. */
export const SINFO_NODE_FORMAT = "%N|%P|%T|%G|%f"

/** `sinfo -h -N -o SINFO_NODE_FORMAT` lines (a node appears once per partition): one node each. */
export const parseNodes = (output: string): Either.Either<ReadonlyArray<SlurmNode>, string> => {
  const byName = new Map<
    string,
    { partitions: Array<string>; state: string; gres: ReadonlyArray<Gres>; features: ReadonlyArray<string> }
  >()
  for (const line of output.split("\n")) {
    if (line.trim() === "") continue
    const cells = line.split("|").map((cell) => cell.trim())
    if (cells.length !== 5 || cells[0] === "")
      return Either.left(`unreadable sinfo line: ${JSON.stringify(line)}`)
    const [name, partition, state, gres, features] = cells
    const partitionName = partition!.replace(/\*$/, "")
    const known = byName.get(name!)
    if (known === undefined)
      byName.set(name!, {
        partitions: [partitionName],
        state: state!,
        gres: parseGres(gres),
        features: list(features)
      })
    else if (!known.partitions.includes(partitionName)) known.partitions.push(partitionName)
  }
  return Either.right([...byName].map(([name, node]) => ({ name, ...node })))
}
