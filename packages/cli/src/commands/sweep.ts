/**
 * `mlops sweep --host H --name N --variant 'LABEL=FLAGS' ... [--concurrency 1,8] [--chart
 * FILE.html] [--json] -- <flags every variant shares>`: each variant checked first, then
 * launched, benchmarked at every concurrency and stopped in turn; one table, and a chart a
 * person opens in a browser.
 */
import { Command, Options } from "@effect/cli"
import { imageOptions } from "./imageOptions.js"
import { loadOptions } from "./loadOptions.js"
import { engine, host, json, lazily, python } from "./shared.js"

const options = {
  engine,
  host,
  name: Options.text("name").pipe(
    Options.optional,
    Options.withDescription(
      "Deployment name prefix: variants run as NAME-1, NAME-2, ... (default: from the model)"
    )
  ),
  variant: Options.text("variant").pipe(
    Options.repeated,
    Options.withDescription(
      "A variant: LABEL=FLAGS added to the shared flags (repeatable), e.g. 'mtp-2=--speculative-num-steps 2 --speculative-eagle-topk 1 --speculative-num-draft-tokens 3' or 'off='"
    )
  ),
  ...loadOptions,
  env: Options.text("env").pipe(
    Options.repeated,
    Options.withDescription(
      "K=V environment for every variant's server (repeatable; values are never printed or stored)"
    )
  ),
  python,
  ...imageOptions,
  chart: Options.file("chart").pipe(
    Options.optional,
    Options.withDescription(
      "Where to write the chart (a self-contained HTML page; default sweep-NAME.html here)"
    )
  ),
  json
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const sweep = Command.make("sweep", options, (parsed) =>
  lazily(
    () => import("../programs/sweep.js"),
    (program) => program.sweep(parsed)
  )
).pipe(
  Command.withDescription(
    "Launch, benchmark and stop each variant of a command in turn (every variant checked before any starts); one table and an HTML chart of throughput and latency"
  )
)
