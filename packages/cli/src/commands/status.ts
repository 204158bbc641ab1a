/** `mlops status [--host H]`: the deployments on one host, or on every known host. */
import { Command, Options } from "@effect/cli"
import * as Status from "@mlops/sglang/Status"
import { Console, Effect, Option } from "effect"
import * as RenderFailure from "../render/failure.js"
import { duration, TerminalStyle, table, yellow } from "../render/style.js"
import { handle, json, printJson } from "./shared.js"

const options = {
  host: Options.text("host").pipe(
    Options.optional,
    Options.withDescription("Only this host (default: every known host)")
  ),
  json
}

const health = (s: Status.DeploymentStatus) =>
  s.healthy === undefined ? "-" : s.healthy ? "healthy" : "unhealthy"

export const status = Command.make("status", options, (parsed) =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const hosts = Option.isSome(parsed.host) ? [parsed.host.value] : undefined
    const result = yield* handle(
      parsed.json,
      { host: Option.getOrUndefined(parsed.host) },
      Status.ofHosts(hosts)
    )
    if (parsed.json) {
      return yield* printJson({
        _tag: "Status",
        deployments: result.deployments.map((d) => ({
          ...d,
          failure:
            d.failure === undefined ? null : RenderFailure.json(d.failure, { host: d.host, argv: d.argv })
        })),
        unreachable: result.unreachable
      })
    }
    if (result.deployments.length === 0) yield* Console.log("no deployments")
    else {
      const rows = result.deployments.map((d) => [
        d.host,
        d.name,
        d.alive ? "running" : d.stopped !== undefined ? `stopped (${d.stopped})` : (d.exit ?? "not running"),
        d.phase,
        health(d),
        d.pid === undefined ? "-" : String(d.pid),
        d.port === undefined ? "-" : String(d.port),
        d.uptimeMs === undefined ? "-" : duration(d.uptimeMs),
        d.gpuMemoryMiB === undefined ? "-" : `${d.gpuMemoryMiB} MiB`,
        d.failure === undefined ? "" : d.failure._tag
      ])
      yield* Console.log(
        table(
          ["HOST", "NAME", "STATE", "PHASE", "HEALTH", "PID", "PORT", "UPTIME", "GPU MEM", "FAILURE"],
          rows
        )
      )
    }
    for (const u of result.unreachable) yield* Console.log(yellow(style, `! ${u.host}: ${u.error}`))
  })
).pipe(
  Command.withDescription(
    "Show the deployments on a host (or every known host), read from the hosts themselves"
  )
)
