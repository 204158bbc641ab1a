/** `mlops sweep`: variants checked, then launched, benchmarked and stopped in turn; a table, JSON and an HTML chart. */
import { FileSystem, Path } from "@effect/platform"
import * as Launch from "@mlops/serve/Launch"
import * as Secrets from "@mlops/serve/Secrets"
import * as Sweep from "@mlops/serve/Sweep"
import { Console, Effect, Option } from "effect"
import { CommandExit, SglangFlags, UsageError } from "../commands/shared.js"
import type { Parsed } from "../commands/sweep.js"
import * as Engines from "../Engines.js"
import { ExitCode } from "../ExitCodes.js"
import { bold, dim, green, red, type Style, TerminalStyle } from "../render/style.js"
import * as SweepChart from "../render/sweepChart.js"
import { concurrencies, positive } from "./bench.js"
import { parseEnv } from "./launch.js"
import * as RuntimeSpec from "./runtimeSpec.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

/**
 * `LABEL=FLAGS` (or just FLAGS, labelled by themselves, secrets as ***): the flags split on
 * spaces, quotes kept as written (`--speculative-config {"num_speculative_tokens":3}` is one
 * value, as JSON without spaces).
 */
export const parseVariant = (text: string): Effect.Effect<Sweep.Variant, UsageError> => {
  const at = text.indexOf("=")
  // a label is a plain word; `--flag=value` alone is flags, not a label
  const labelled = at > 0 && /^[A-Za-z0-9._-]+$/.test(text.slice(0, at)) && !text.startsWith("-")
  const flags = (labelled ? text.slice(at + 1) : text).split(/\s+/).filter((w) => w !== "")
  const label = labelled
    ? text.slice(0, at)
    : flags.length === 0
      ? "base"
      : Secrets.redactArgv(flags).join(" ")
  // no shell quoting happens here: a quoted word would reach the engine with its quotes
  const quoted = flags.find((w) => /^['"]|['"]$/.test(w) && !/^[[{]/.test(w))
  if (quoted !== undefined)
    return Effect.fail(
      new UsageError({
        message: `--variant ${label}: ${quoted} is quoted, but a variant's flags are split on spaces with no shell quoting; write the value without quotes (JSON without spaces is one word)`
      })
    )
  return Effect.succeed({ label, flags })
}

const outcomeLine = (style: Style, outcome: Sweep.VariantOutcome): string => {
  const label = bold(style, outcome.variant.label)
  switch (outcome._tag) {
    case "Refused":
      return `${red(style, "✗")} ${label} refused before launch [${outcome.error}]: ${outcome.reason.split("\n")[0]}`
    case "Failed":
      return `${red(style, "✗")} ${label} (${outcome.name}) failed during its ${outcome.stage} [${outcome.error}]: ${outcome.reason.split("\n")[0]}\n    its log: mlops logs --host <host> --name ${outcome.name}`
    case "Measured":
      return `${green(style, "✓")} ${label} (${outcome.name}) measured`
  }
}

/** One row per variant and concurrency. */
export const table = (style: Style, result: Sweep.SweepResult): string => {
  const header = [
    "variant",
    "conc",
    "tok/s",
    "req/s",
    "TTFT p50 ms",
    "ITL p50 ms",
    "E2E p50 ms",
    "accept",
    "err"
  ]
  const rows: Array<Array<string>> = []
  const f = (v: number | undefined, digits = 1) => (v === undefined ? "-" : v.toFixed(digits))
  for (const outcome of result.outcomes) {
    if (outcome._tag !== "Measured") {
      rows.push([
        outcome.variant.label,
        "-",
        outcome._tag === "Refused" ? "refused" : "failed",
        "",
        "",
        "",
        "",
        "",
        ""
      ])
      continue
    }
    for (const l of outcome.result.levels)
      rows.push([
        outcome.variant.label,
        String(l.concurrency),
        f(l.outputTokensPerS),
        f(l.requestsPerS, 2),
        f(l.ttftMs.p50),
        f(l.itlMs.p50),
        f(l.e2eMs.p50, 0),
        f(l.acceptLength, 2),
        String(l.errors)
      ])
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ")
      .trimEnd()
  return [dim(style, line(header)), ...rows.map(line)].join("\n")
}

export const sweep = (options: Parsed): Effect.Effect<void, CommandExit, ProgramEnv | SglangFlags> =>
  Effect.gen(function* () {
    const flags = yield* SglangFlags
    const style = yield* TerminalStyle
    let refusedAny = false
    yield* handle(
      options.json,
      { host: options.host },
      Effect.gen(function* () {
        if (flags.length === 0)
          return yield* new UsageError({
            message:
              "no engine flags: put the flags every variant shares after `--`, e.g. mlops sweep --host sim --variant off= -- --model-path /m"
          })
        if (options.variant.length === 0)
          return yield* new UsageError({
            message:
              "no variants: give at least one --variant LABEL=FLAGS (e.g. --variant off= --variant 'mtp=--speculative-algorithm NEXTN ...')"
          })
        const variants = yield* Effect.forEach(options.variant, parseVariant)
        const labels = variants.map((v) => v.label)
        const twice = labels.find((l, i) => labels.indexOf(l) !== i)
        if (twice !== undefined)
          return yield* new UsageError({
            message: `two variants are labelled ${twice}: give each its own LABEL=`
          })
        const levels = yield* concurrencies(options.concurrency)
        yield* positive("input-len", options.inputLen)
        yield* positive("output-len", options.outputLen)
        if (Option.isSome(options.requests)) yield* positive("requests", options.requests.value)
        const env = yield* parseEnv(options.env)
        const chosen = yield* Engines.engineOf(options.engine)
        const engines = Array.isArray(chosen) ? chosen : [chosen]
        const runtime = yield* RuntimeSpec.specOf(options)
        const name = Option.getOrElse(options.name, () => Launch.defaultName(engines[0]!, flags))
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const chartPath = path.resolve(Option.getOrElse(options.chart, () => `sweep-${name}.html`))
        const result = yield* Sweep.collect(
          {
            host: options.host,
            engines,
            argv: flags,
            variants,
            name,
            ...(Object.keys(env).length > 0 ? { env } : {}),
            ...(runtime === undefined ? {} : { runtime }),
            bench: {
              concurrency: levels,
              inputTokens: options.inputLen,
              outputTokens: options.outputLen,
              ...(Option.isSome(options.requests) ? { requests: options.requests.value } : {})
            }
          },
          (event) => {
            if (options.json) return Effect.void
            switch (event._tag) {
              case "Checked":
                // a refused variant is said at once, before any GPU time is spent on the others
                return Console.error(
                  event.refused === undefined
                    ? `${green(style, "✓")} ${event.variant.label}: the checks pass`
                    : `${red(style, "✗")} ${bold(style, event.variant.label)} refused before launch: ${event.refused.split("\n")[0]}`
                )
              case "Launching":
                return Console.error(`… ${event.variant.label}: launching ${event.name}`)
              case "Benchmarking":
                return Console.error(`… ${event.variant.label}: ready, benchmarking at ${levels.join(", ")}`)
              case "Done":
                return event.outcome._tag === "Refused"
                  ? Effect.void
                  : Console.error(outcomeLine(style, event.outcome).replace("<host>", options.host))
              case "Aborted":
                return Console.error(
                  `${red(style, "✗")} ${event.name} could not be stopped [${event.error}]: ${event.reason.split("\n")[0]}; the sweep ends here (the next variant would meet its GPUs). Stop it: mlops stop --host ${options.host} --name ${event.name}`
                )
            }
          }
        )
        // a point not measured: refused, failed, every request of a level failed, or the sweep cut short
        refusedAny =
          result.aborted !== undefined ||
          result.outcomes.some(
            (o) => o._tag !== "Measured" || o.result.levels.some((level) => level.completed === 0)
          )
        yield* fs.writeFileString(chartPath, SweepChart.html(result), { mode: 0o600 })
        if (options.json) return yield* printJson({ ...result, chart: chartPath })
        yield* Console.log(table(style, result))
        yield* Console.log(`chart: ${chartPath}`)
      })
    )
    // a sweep with a point it could not measure says so in its exit code (the others are above)
    if (refusedAny) return yield* new CommandExit({ code: ExitCode.LaunchFailed })
  })
