/** `mlops diagnose FILE|- [--host H]`: classify a server log, local, on a host, or from standard input. */
import { Args, Command, Options } from "@effect/cli"
import { json, lazily } from "./shared.js"

const options = {
  host: Options.text("host").pipe(Options.optional, Options.withDescription("Read FILE on this host")),
  json,
  file: Args.text({ name: "file" }).pipe(Args.withDescription("The log file, or - for standard input"))
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const diagnose = Command.make("diagnose", options, (parsed) =>
  lazily(
    () => import("../programs/diagnose.js"),
    (program) => program.diagnose(parsed)
  )
).pipe(
  Command.withDescription(
    "Classify a server log (SGLang or vLLM): the failure with evidence and fix, or the phase reached; - reads standard input"
  )
)
