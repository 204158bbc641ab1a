/**
 * `mlops bench --host H --name N [--concurrency 1,8,32] [--requests N] [--input-len 128]
 * [--output-len 128] [--prompts FILE.jsonl] [--api-key-env VAR] [--baseline FILE] [--json]`:
 * a short load against a running deployment, its figures per concurrency, and how they moved
 * from a saved run.
 */
import { Command, Options } from "@effect/cli"
import { loadOptions } from "./loadOptions.js"
import { host, json, lazily } from "./shared.js"

const options = {
  host,
  name: Options.text("name").pipe(Options.withDescription("Deployment name")),
  ...loadOptions,
  prompts: Options.file("prompts").pipe(
    Options.optional,
    Options.withDescription('A JSONL file of prompts to send instead (each line a string or {"prompt": ...})')
  ),
  apiKeyEnv: Options.text("api-key-env").pipe(
    Options.optional,
    Options.withDescription("The local environment variable holding the server's API key, if it has one")
  ),
  baseline: Options.file("baseline").pipe(
    Options.optional,
    Options.withDescription(
      "A saved `bench --json` result: print which figures moved from it, and by how much"
    )
  ),
  json
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const bench = Command.make("bench", options, (parsed) =>
  lazily(
    () => import("../programs/bench.js"),
    (program) => program.bench(parsed)
  )
).pipe(
  Command.withDescription(
    "Benchmark a running deployment: tokens/s, TTFT, inter-token and end-to-end latency per concurrency, speculative acceptance from its /metrics"
  )
)
