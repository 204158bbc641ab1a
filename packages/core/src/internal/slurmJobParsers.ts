/**
 * Jobs from the three places Slurm keeps them: `squeue` (queued and running jobs, our explicit
 * format), `scontrol show job -o` (any job slurmctld still remembers, for MinJobAge after it
 * ended) and `sacct -P` (the accounting database or, with `-c`, the jobcomp file).
 *
 * @internal
 */
import { Either } from "effect"
import type { SlurmJob } from "../SlurmJob.js"
import { gresCount, jobState, parseGres, parseRecords, parseTime } from "./slurmParsers.js"

/**
 * squeue's fields, `|`-separated, the job name last (it may itself hold `|`). No
 * `--only-job-state`: Slurm 22.05 does not have it.
 */
export const SQUEUE_FORMAT = "%i|%T|%r|%N|%b|%M|%l|%P|%u|%j"

/** sacct's fields (`-P`: `|`-separated), the job name last. */
export const SACCT_FIELDS = "JobID,State,ExitCode,NodeList,Elapsed,Timelimit,Partition,User,JobName"

const optional = <K extends string, V>(key: K, value: V | undefined): { [k in K]?: V } =>
  (value === undefined ? {} : { [key]: value }) as { [k in K]?: V }

const present = (value: string | undefined): string | undefined =>
  value === undefined || value === "" || value === "(null)" || value === "N/A" || value === "None assigned"
    ? undefined
    : value

const gpusOf = (gres: string | undefined): number | undefined => {
  const list = parseGres(gres)
  return list.length === 0 ? undefined : gresCount(list, "gpu")
}

const seconds = (text: string | undefined): number | undefined => {
  const value = text === undefined ? undefined : parseTime(text)
  return value === null ? undefined : value
}

const limit = (text: string | undefined): number | null | undefined =>
  text === undefined ? undefined : parseTime(text)

/** Lines of `squeue -h -o SQUEUE_FORMAT`. */
export const parseSqueue = (output: string): Either.Either<ReadonlyArray<SlurmJob>, string> => {
  const jobs: Array<SlurmJob> = []
  for (const line of output.split("\n")) {
    if (line.trim() === "") continue
    const cells = line.split("|")
    if (cells.length < 10 || !/^\d+(?:_\d+|\+\d+)?$/.test(cells[0]!.trim()))
      return Either.left(`unreadable squeue line: ${JSON.stringify(line)}`)
    const [id, state, reason, nodes, gres, elapsed, timeLimit, partition, user] = cells.map((c) => c.trim())
    jobs.push({
      id: id!,
      name: cells.slice(9).join("|"),
      state: jobState({ state: state!, reason, nodes }),
      slurmState: state!,
      ...optional("partition", present(partition)),
      ...optional("nodes", present(nodes)),
      ...optional("user", present(user)),
      ...optional("gpus", gpusOf(gres)),
      ...optional("elapsedSeconds", seconds(elapsed)),
      ...optional("timeLimitSeconds", limit(timeLimit)),
      source: "squeue"
    })
  }
  return Either.right(jobs)
}

/** `UserId=root(0)` → `root`. */
const userName = (text: string | undefined): string | undefined => present(text?.replace(/\(\d+\)$/, ""))

/** `scontrol show job -o ID` records (an array job prints one per task). */
export const parseScontrolJobs = (output: string): Either.Either<ReadonlyArray<SlurmJob>, string> => {
  const jobs: Array<SlurmJob> = []
  for (const record of parseRecords(output)) {
    const id = record.get("JobId")
    const state = record.get("JobState")
    if (id === undefined || state === undefined)
      return Either.left(`unreadable scontrol record: ${JSON.stringify([...record.keys()].slice(0, 5))}`)
    const nodes = present(record.get("NodeList"))
    jobs.push({
      id,
      name: record.get("JobName") ?? "",
      state: jobState({ state, reason: record.get("Reason"), exitCode: record.get("ExitCode"), nodes }),
      slurmState: state,
      ...optional("partition", present(record.get("Partition"))),
      ...optional("nodes", nodes),
      ...optional("user", userName(record.get("UserId"))),
      ...optional("gpus", gpusOf(record.get("TresPerNode"))),
      ...optional("elapsedSeconds", seconds(record.get("RunTime"))),
      ...optional("timeLimitSeconds", limit(record.get("TimeLimit"))),
      source: "scontrol"
    })
  }
  return Either.right(jobs)
}

/**
 * `sacct -P -n -o SACCT_FIELDS` rows: the job itself (steps `ID.batch`, `ID.0` are skipped).
 * The database writes `CANCELLED by 0`; the jobcomp file has no reason.
 */
export const parseSacct = (output: string): Either.Either<ReadonlyArray<SlurmJob>, string> => {
  const jobs: Array<SlurmJob> = []
  for (const line of output.split("\n")) {
    if (line.trim() === "") continue
    const cells = line.split("|")
    if (cells.length < 9) return Either.left(`unreadable sacct line: ${JSON.stringify(line)}`)
    const [id, state, exitCode, nodes, elapsed, timeLimit, partition, user] = cells.map((c) => c.trim())
    if (id!.includes(".")) continue
    jobs.push({
      id: id!,
      name: cells.slice(8).join("|"),
      state: jobState({ state: state!, exitCode, nodes }),
      slurmState: state!.split(/\s+/)[0]!,
      ...optional("partition", present(partition)),
      ...optional("nodes", present(nodes)),
      ...optional("user", present(user)),
      ...optional("elapsedSeconds", seconds(elapsed)),
      ...optional("timeLimitSeconds", limit(timeLimit)),
      source: "sacct"
    })
  }
  return Either.right(jobs)
}
