/** `mlops hosts`: the hosts mlops knows (sim, ssh_config aliases, hosts.json entries). */
import { Command } from "@effect/cli"
import { json, lazily } from "./shared.js"

const options = { json }

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const hosts = Command.make("hosts", options, (parsed) =>
  lazily(
    () => import("../programs/hosts.js"),
    (program) => program.hosts(parsed)
  )
).pipe(Command.withDescription("List the hosts mlops knows: sim, ssh_config aliases and hosts.json entries"))
