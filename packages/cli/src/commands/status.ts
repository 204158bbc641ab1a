/**
 * `mlops status [--host H]`: the deployments on one host, or on every known host. A host that
 * cannot be reached is an error on stderr with its exit code (6 for SSH trouble), never an
 * empty list: with `--host` the command fails; across every host the reachable ones are still
 * shown and the exit code says that some were not.
 */
import { Command, Options } from "@effect/cli"
import { json, lazily } from "./shared.js"

const options = {
  host: Options.text("host").pipe(
    Options.optional,
    Options.withDescription("Only this host (default: every known host)")
  ),
  json
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const status = Command.make("status", options, (parsed) =>
  lazily(
    () => import("../programs/status.js"),
    (program) => program.status(parsed)
  )
).pipe(
  Command.withDescription(
    "Show the deployments on a host (or every known host), read from the hosts themselves; an unreachable host is an error"
  )
)
