/** `mlops hosts`: the hosts mlops knows (sim, ssh_config aliases, hosts.json entries). */
import { Hosts } from "@mlops/core/Hosts"
import { Console, Effect } from "effect"
import type { Parsed } from "../commands/hosts.js"
import type { CommandExit } from "../commands/shared.js"
import { table } from "../render/style.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

export const hosts = ({ json: asJson }: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  handle(
    asJson,
    {},
    Effect.gen(function* () {
      const list = yield* Effect.flatMap(Hosts, (h) => h.list)
      if (asJson) {
        return yield* printJson({
          hosts: list.map((h) => ({
            alias: h.alias,
            hostname: h.hostname,
            port: h.port,
            user: h.user,
            python: h.python ?? null,
            stateDir: h.stateDir,
            proxyJump: h.proxyJump.map((hop) => hop.alias),
            hostKeyPolicy: h.hostKeyPolicy,
            tags: h.tags,
            source: h.source
          }))
        })
      }
      const rows = list.map((h) => [
        h.alias,
        `${h.user}@${h.hostname}:${h.port}`,
        h.python ?? "~/ml-env",
        h.source
      ])
      yield* Console.log(table(["ALIAS", "ADDRESS", "PYTHON", "SOURCE"], rows))
    })
  )
