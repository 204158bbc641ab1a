/**
 * `mlops rm --host H --name N [--name M]... | --all`: remove the records of deployments that
 * have ended (their directory on the host, log included), so `status` no longer lists them.
 * A running deployment is never removed (`DeploymentRunning`, exit 7: stop it first); with
 * `--all` the running ones are kept and named. An unreachable host is an error (exit 6).
 */
import { Command, Options } from "@effect/cli"
import { host, json, lazily } from "./shared.js"

const options = {
  host,
  name: Options.text("name").pipe(
    Options.repeated,
    Options.withDescription("A deployment that has ended (repeatable)")
  ),
  all: Options.boolean("all").pipe(
    Options.withDescription("Every deployment on the host that has ended; running ones are kept")
  ),
  json
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const rm = Command.make("rm", options, (parsed) =>
  lazily(
    () => import("../programs/rm.js"),
    (program) => program.rm(parsed)
  )
).pipe(
  Command.withDescription(
    "Remove the records of deployments that have ended (never a running one): --name N, or --all"
  )
)
