/** `mlops logs --host H --name N [-f] [-n 100]`: a deployment's log, the tail or followed. */
import * as Logs from "@mlops/serve/Logs"
import { Console, Effect, Stream } from "effect"
import type { Parsed } from "../commands/logs.js"
import type { CommandExit } from "../commands/shared.js"
import * as Engines from "../Engines.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

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

export const logs = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  handle(
    parsed.json,
    { host: parsed.host },
    parsed.follow
      ? Stream.unwrap(
          Effect.map(Engines.registry, (engines) =>
            Logs.follow(parsed.host, parsed.name, engines, { lines: parsed.lines })
          )
        ).pipe(
          Stream.runForEach((item) => {
            if (item._tag === "Ended") return parsed.json ? printJson(item) : Console.error(endedLine(item))
            return parsed.json
              ? printJson({ _tag: "LogLine", text: item.text, offset: item.offset })
              : Console.log(item.text)
          })
        )
      : Effect.gen(function* () {
          const lines = yield* Logs.tail(parsed.host, parsed.name, { lines: parsed.lines })
          if (parsed.json) {
            return yield* printJson({
              _tag: "Log",
              host: parsed.host,
              name: parsed.name,
              lines: lines.map((l) => l.text)
            })
          }
          for (const line of lines) yield* Console.log(line.text)
        })
  )
