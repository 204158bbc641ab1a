/** `mlops logs --host H --name N [-f] [-n 100]`: a deployment's log, the tail or followed. */
import { Command, Options } from "@effect/cli"
import * as Logs from "@mlops/serve/Logs"
import { Console, Effect, Stream } from "effect"
import * as Engines from "../Engines.js"
import { handle, host, json, printJson } from "./shared.js"

const options = {
  host,
  name: Options.text("name").pipe(Options.withDescription("Deployment name")),
  follow: Options.boolean("follow").pipe(
    Options.withAlias("f"),
    Options.withDescription("Keep printing new lines")
  ),
  lines: Options.integer("lines").pipe(
    Options.withAlias("n"),
    Options.withDefault(100),
    Options.withDescription("How many of the last lines (default 100)")
  ),
  json
}

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

export const logs = Command.make("logs", options, (parsed) =>
  handle(
    parsed.json,
    { host: parsed.host },
    parsed.follow
      ? Logs.follow(parsed.host, parsed.name, Engines.registry, { lines: parsed.lines }).pipe(
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
).pipe(
  Command.withDescription(
    "Print the last lines of a deployment's log, or follow it (-f) until it exits (then how it ended)"
  )
)
