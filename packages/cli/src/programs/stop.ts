/** `mlops stop --host H --name N`: stop the process group (every rank, across several hosts; or a job's) and confirm no GPU memory is held. */
import * as Job from "@mlops/serve/Job"
import * as Stop from "@mlops/serve/Stop"
import { Console, Effect } from "effect"
import type { CommandExit } from "../commands/shared.js"
import type { Parsed } from "../commands/stop.js"
import { bold, green, TerminalStyle } from "../render/style.js"
import { handle, orJob, type ProgramEnv, printJson } from "./shared.js"

export const stop = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const result = yield* handle(
      parsed.json,
      { host: parsed.host },
      orJob(Stop.stop(parsed.host, parsed.name), Job.stop(parsed.host, parsed.name))
    )
    if ("gpus" in result) {
      // a job: its group stopped (or taken out of the queue), its GPUs confirmed free
      if (parsed.json) return yield* printJson({ _tag: "JobStopped", ...result })
      return yield* Console.log(
        `${green(style, "✓")} ${bold(style, `job ${result.name} stopped`)} on ${result.host} (${result.outcome}); ${result.gpus.length === 0 ? "it held no GPU" : `GPU ${result.gpus.join(",")} free`}`
      )
    }
    if (parsed.json) return yield* printJson({ _tag: "Stopped", ...result })
    if (result.ranks.length > 1) {
      // across several hosts: which rank held what, each confirmed
      return yield* Console.log(
        [
          `${green(style, "✓")} ${bold(style, `${result.name} stopped`)} on ${result.ranks.length} hosts; no GPU memory held on any`,
          ...result.ranks.map((r) => `    rank ${r.rank} on ${r.host}: ${r.server.label}, ${r.outcome}`)
        ].join("\n")
      )
    }
    yield* Console.log(
      `${green(style, "✓")} ${bold(style, `${result.name} stopped`)} on ${result.host} (${result.server.label}, ${result.outcome}); no GPU memory held`
    )
  })
