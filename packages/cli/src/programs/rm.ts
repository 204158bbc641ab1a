/**
 * `mlops rm --host H --name N [--name M]... | --all`: remove the records of deployments (and
 * jobs) that have ended (their directory on the host, log included), so `status` no longer lists them.
 * A running deployment is never removed (`DeploymentRunning`, exit 7: stop it first); with
 * `--all` the running ones are kept and named. An unreachable host is an error (exit 6).
 */
import * as Job from "@mlops/serve/Job"
import * as Remove from "@mlops/serve/Remove"
import { Console, Effect } from "effect"
import type { Parsed } from "../commands/rm.js"
import { type CommandExit, UsageError } from "../commands/shared.js"
import { green, TerminalStyle, yellow } from "../render/style.js"
import { handle, orJob, type ProgramEnv, printJson } from "./shared.js"

/** A removed job, as a removed deployment is shown. */
const jobRemoved = (job: Job.Job): Remove.Removed => ({
  host: job.host,
  name: job.name,
  ended: `job ${job.state}`,
  server: job.server?.label,
  path: job.runDir
})

const removedLine = (r: Remove.Removed) =>
  `removed ${r.name} on ${r.host} (${r.ended}${r.server === undefined ? "" : `, ${r.server}`}): ${r.path}`

export const rm = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const context = { host: parsed.host }
    if (parsed.all === parsed.name.length > 0) {
      return yield* handle(
        parsed.json,
        context,
        Effect.fail(
          new UsageError({ message: "give --name N (repeatable) or --all, not both and not neither" })
        )
      )
    }
    if (!parsed.all) {
      // each name a deployment's or a job's
      const removed = yield* handle(
        parsed.json,
        context,
        Effect.forEach(parsed.name, (name) =>
          orJob(
            Remove.remove(parsed.host, [name]),
            Effect.map(Job.remove(parsed.host, name), (job) => [jobRemoved(job)])
          )
        ).pipe(Effect.map((lists) => lists.flat()))
      )
      if (parsed.json) return yield* printJson({ _tag: "Removed", removed, kept: [] })
      for (const r of removed) yield* Console.log(`${green(style, "✓")} ${removedLine(r)}`)
      return
    }
    const result = yield* handle(
      parsed.json,
      context,
      Effect.zipWith(Remove.removeEnded(parsed.host), Job.removeEnded(parsed.host), (deployments, jobs) => ({
        removed: [...deployments.removed, ...jobs.removed.map(jobRemoved)],
        kept: [...deployments.kept, ...jobs.kept]
      }))
    )
    if (parsed.json) {
      return yield* printJson({
        _tag: "Removed",
        removed: result.removed,
        kept: result.kept.map((k) => ({ _tag: k._tag, name: k.name, message: k.message }))
      })
    }
    for (const r of result.removed) yield* Console.log(`${green(style, "✓")} ${removedLine(r)}`)
    for (const k of result.kept) {
      yield* Console.log(
        `${yellow(style, "!")} kept ${k.name} on ${k.host}: ${k._tag === "DeploymentRunning" ? (k.server === undefined ? "being started" : `running (${k.server})`) : k._tag === "JobStillRunning" ? `job ${k.state}` : k.message}`
      )
    }
    if (result.removed.length === 0 && result.kept.length === 0) {
      yield* Console.log(`no deployments on ${parsed.host}`)
    }
  })
