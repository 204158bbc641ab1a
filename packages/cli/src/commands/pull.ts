/** `mlops pull --host H --name N [--to DIR] PATH`: what a job wrote, copied to this machine. */
import { Args, Command, Options } from "@effect/cli"
import { host, json, lazily } from "./shared.js"

const options = {
  host,
  name: Options.text("name").pipe(Options.withDescription("Job name")),
  to: Options.text("to").pipe(
    Options.withDefault("."),
    Options.withDescription("The local directory it goes into, under its own name (default: here)")
  ),
  json
}

const args = {
  path: Args.text({ name: "path" }).pipe(
    Args.withDescription(
      "A file or directory the job wrote, relative to its working directory (its synced code, or its run directory in an image) or absolute"
    )
  )
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options & typeof args>

export const pull = Command.make("pull", { ...options, ...args }, (parsed) =>
  lazily(
    () => import("../programs/pull.js"),
    (program) => program.pull(parsed)
  )
).pipe(
  Command.withDescription(
    "Copy a job's files (checkpoints, metrics) from its host: only what is not here already with the same size and time"
  )
)
