/** `mlops stop --host H --name N`: stop the process group and confirm no GPU memory is held. */
import { Command, Options } from "@effect/cli"
import * as Stop from "@mlops/serve/Stop"
import { Console, Effect } from "effect"
import { bold, green, TerminalStyle } from "../render/style.js"
import { handle, host, json, printJson } from "./shared.js"

const options = {
  host,
  name: Options.text("name").pipe(Options.withDescription("Deployment name")),
  json
}

export const stop = Command.make("stop", options, (parsed) =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const result = yield* handle(parsed.json, { host: parsed.host }, Stop.stop(parsed.host, parsed.name))
    if (parsed.json) return yield* printJson({ _tag: "Stopped", ...result })
    yield* Console.log(
      `${green(style, "✓")} ${bold(style, `${result.name} stopped`)} on ${result.host} (pid ${result.pid}, ${result.outcome}); no GPU memory held`
    )
  })
).pipe(Command.withDescription("Stop a deployment (TERM, then KILL) and confirm its GPU memory is free"))
