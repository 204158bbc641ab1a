/** `mlops diagnose FILE [--host H]`: classify an SGLang log, local or on a host. */
import { Args, Command, Options } from "@effect/cli"
import type { FileSystem } from "@effect/platform"
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Diagnose from "@mlops/sglang/Diagnose"
import { Console, Effect, Option } from "effect"
import * as ExitCodes from "../ExitCodes.js"
import * as RenderFailure from "../render/failure.js"
import { bold, green, TerminalStyle } from "../render/style.js"
import { CommandExit, handle, json, printJson } from "./shared.js"

const options = {
  host: Options.text("host").pipe(Options.optional, Options.withDescription("Read FILE on this host")),
  json,
  file: Args.text({ name: "file" }).pipe(Args.withDescription("The log file"))
}

export const diagnose = Command.make("diagnose", options, (parsed) =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const host = Option.getOrUndefined(parsed.host)
    const diagnosis = yield* handle(
      parsed.json,
      { host },
      Effect.suspend(
        (): Effect.Effect<Diagnose.Diagnosis, unknown, FileSystem.FileSystem | ConnectionPool> =>
          host === undefined ? Diagnose.localFile(parsed.file) : Diagnose.remoteFile(host, parsed.file)
      )
    )
    const failure = diagnosis.failure
    if (parsed.json) {
      yield* printJson({
        _tag: "Diagnosis",
        source: diagnosis.source,
        phase: diagnosis.phase,
        ready: diagnosis.ready,
        lines: diagnosis.lines,
        failure: failure === undefined ? null : RenderFailure.json(failure, { host })
      })
    } else if (failure === undefined) {
      yield* Console.log(
        `${green(style, "✓")} ${bold(style, "no failure found")} in ${diagnosis.source} (${diagnosis.lines} lines); phase reached: ${diagnosis.phase}${diagnosis.ready ? " (ready)" : ""}`
      )
    } else {
      yield* Console.log(`${diagnosis.source}: phase reached ${diagnosis.phase}`)
      yield* Console.log(RenderFailure.human(style, failure, { host }))
    }
    // a log that shows a failure is a finding, not an error of this command; but scripts want to know
    if (failure !== undefined) return yield* new CommandExit({ code: ExitCodes.fromFailure(failure) })
  })
).pipe(
  Command.withDescription("Classify an SGLang log: the failure with evidence and fix, or the phase reached")
)
