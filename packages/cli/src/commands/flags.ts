/**
 * `mlops flags [--engine sglang|vllm] [--host H | --version V] [QUERY] [--json]`: SGLang's launch_server flags (or `vllm serve`'s) with
 * type, default, choices and the shipped releases that have them; `--releases` lists the
 * releases mlops ships catalogues for. With `--host` the host's own SGLang decides (read from
 * its parser when mlops does not ship that version, or with `--flags-from-host`).
 */
import { Args, Command, Options } from "@effect/cli"
import { engines } from "./facts.js"
import { json, lazily, namedChoice } from "./shared.js"

const sglangLatest = engines[0]!.latestVersion

const options = {
  engine: namedChoice("engine", ["sglang", "vllm"]).pipe(
    Options.withDefault("sglang" as const),
    Options.withDescription("Whose flags: sglang (default) or vllm (`vllm serve`)")
  ),
  host: Options.text("host").pipe(
    Options.optional,
    Options.withDescription("The flags of this host's SGLang (its version, or its own parser)")
  ),
  version: Options.text("sglang-version").pipe(
    Options.optional,
    Options.withDescription(
      `The flags of this SGLang release, also written --version (default ${sglangLatest})`
    )
  ),
  flagsFromHost: Options.boolean("flags-from-host").pipe(
    Options.withDescription("With --host: read the host's own parser even for a shipped release")
  ),
  releases: Options.boolean("releases").pipe(
    Options.withDescription("List the SGLang releases mlops ships flag catalogues for")
  ),
  json,
  query: Args.text({ name: "QUERY" }).pipe(
    Args.optional,
    Args.withDescription("Only flags whose name, field or summary contains this")
  )
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const flags = Command.make("flags", options, (parsed) =>
  lazily(
    () => import("../programs/flags.js"),
    (program) => program.flags(parsed)
  )
).pipe(
  Command.withDescription(
    `List SGLang's flags with type, default, choices and the releases that have them: for --version V (default ${sglangLatest}) or --host H`
  )
)
