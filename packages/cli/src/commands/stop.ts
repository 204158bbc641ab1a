/** `mlops stop --host H --name N`: stop the process group and confirm no GPU memory is held. */
import { Command, Options } from "@effect/cli"
import { host, json, lazily } from "./shared.js"

const options = {
  host,
  name: Options.text("name").pipe(Options.withDescription("Deployment name")),
  json
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const stop = Command.make("stop", options, (parsed) =>
  lazily(
    () => import("../programs/stop.js"),
    (program) => program.stop(parsed)
  )
).pipe(Command.withDescription("Stop a deployment (TERM, then KILL) and confirm its GPU memory is free"))
