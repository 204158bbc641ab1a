/** `mlops logs --host H --name N [-f] [-n 100] [--rank R]`: a deployment's log, the tail or followed. */
import { Command, Options } from "@effect/cli"
import { host, json, lazily } from "./shared.js"

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
  rank: Options.integer("rank").pipe(
    Options.optional,
    Options.withDescription(
      "Across several hosts: the rank whose log to print (default 0, the one that serves HTTP)"
    )
  ),
  json
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const logs = Command.make("logs", options, (parsed) =>
  lazily(
    () => import("../programs/logs.js"),
    (program) => program.logs(parsed)
  )
).pipe(
  Command.withDescription(
    "Print the last lines of a deployment's log, or follow it (-f) until it exits (then how it ended)"
  )
)
