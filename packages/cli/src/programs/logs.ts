/** `mlops logs --host H --name N [-f] [-n 100] [--rank R]`: a deployment's log, the tail or followed. */
import type * as LogTail from "@mlops/core/LogTail"
import * as Job from "@mlops/serve/Job"
import * as Logs from "@mlops/serve/Logs"
import * as Status from "@mlops/serve/Status"
import { Console, Effect, Option, Stream } from "effect"
import type { Parsed } from "../commands/logs.js"
import type { CommandExit } from "../commands/shared.js"
import * as Engines from "../Engines.js"
import { handle, orJob, type ProgramEnv, printJson } from "./shared.js"

/** How a followed deployment ended, in one line. */
const endedLine = (ended: Logs.Ended): string => {
  const how =
    ended.stopped !== undefined
      ? `was stopped (${ended.stopped})`
      : ended.exit !== undefined
        ? `exited: ${ended.exit}`
        : "is no longer running (no exit status recorded)"
  const why = ended.failure === undefined ? "" : ` — ${ended.failure._tag}: ${ended.failure.message}`
  return `${ended.name} on ${ended.host} ${how}${why}`
}

/** A hung server, said between its lines. */
const stalledLine = (stalled: Logs.Stalled): string =>
  `⚠ ${stalled.name} on ${stalled.host}: no new log line for ${Math.round(stalled.quietMs / 1000)} s and a streamed request got no token within 10 s: it no longer generates (its /health may still answer 200). mlops stop --host ${stalled.host} --name ${stalled.name}, then launch it again`

export const logs = (given: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  Effect.gen(function* () {
    // a rank of a deployment across several hosts: its log is on its own host
    const host = Option.isNone(given.rank)
      ? given.host
      : yield* handle(
          given.json,
          { host: given.host },
          Logs.hostOfRank(given.host, given.name, given.rank.value)
        )
    yield* logsOn({ ...given, host })
  })

/** A followed line: as it is, or `LogLine` JSON. */
const printLine = (parsed: Parsed, line: LogTail.LogLine) =>
  parsed.json ? printJson({ _tag: "LogLine", text: line.text, offset: line.offset }) : Console.log(line.text)

/** The last lines: as they are, or one `Log` JSON object. */
const printTail = (parsed: Parsed, lines: ReadonlyArray<LogTail.LogLine>) =>
  parsed.json
    ? printJson({ _tag: "Log", host: parsed.host, name: parsed.name, lines: lines.map((l) => l.text) })
    : Effect.forEach(lines, (line) => Console.log(line.text), { discard: true })

/** How a followed job ended, in one line. */
const jobEndedLine = (ended: Job.Ended): string => {
  const job = ended.job
  const exit = job.exit === undefined ? "" : ` (${Status.exitText(job.exit)})`
  const why = ended.failure === undefined ? "" : ` — ${ended.failure._tag}: ${ended.failure.message}`
  return `job ${job.name} on ${job.host} ${job.state}${exit}${why}`
}

/** A job's log: the tail, or followed to its end. */
const jobLogs = (parsed: Parsed) =>
  parsed.follow
    ? Job.follow(parsed.host, parsed.name, { lines: parsed.lines }).pipe(
        Stream.runForEach((item) =>
          item._tag === "Ended"
            ? parsed.json
              ? printJson({ _tag: "JobEnded", job: item.job, failure: item.failure ?? null })
              : Console.error(jobEndedLine(item))
            : printLine(parsed, item)
        )
      )
    : Effect.flatMap(Job.tail(parsed.host, parsed.name, { lines: parsed.lines }), (lines) =>
        printTail(parsed, lines)
      )

const logsOn = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  handle(parsed.json, { host: parsed.host }, orJob(deploymentLogs(parsed), jobLogs(parsed)))

const deploymentLogs = (parsed: Parsed) =>
  parsed.follow
    ? Stream.unwrap(
        Effect.map(Engines.registry, (engines) =>
          Logs.follow(parsed.host, parsed.name, engines, { lines: parsed.lines })
        )
      ).pipe(
        Stream.runForEach((item) => {
          if (item._tag === "Ended") return parsed.json ? printJson(item) : Console.error(endedLine(item))
          if (item._tag === "Stalled") return parsed.json ? printJson(item) : Console.error(stalledLine(item))
          return printLine(parsed, item)
        })
      )
    : Effect.flatMap(Logs.tail(parsed.host, parsed.name, { lines: parsed.lines }), (lines) =>
        printTail(parsed, lines)
      )
