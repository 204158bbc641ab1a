/** `mlops bench`: a load against a running deployment, as a table (or JSON), compared with a baseline. */
import { FileSystem } from "@effect/platform"
import * as Bench from "@mlops/serve/Bench"
import { Console, Effect, Option } from "effect"
import type { Parsed } from "../commands/bench.js"
import { type CommandExit, UsageError } from "../commands/shared.js"
import * as Engines from "../Engines.js"
import { benchTable, changeLines } from "../render/bench.js"
import { TerminalStyle } from "../render/style.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

/** `1,8,32` as numbers, each a positive integer. */
export const concurrencies = (text: string): Effect.Effect<ReadonlyArray<number>, UsageError> => {
  const values = text.split(",").map((part) => part.trim())
  const numbers = values.map(Number)
  const bad = values.find((v, i) => !/^\d+$/.test(v) || numbers[i]! < 1)
  const twice = numbers.find((n, i) => numbers.indexOf(n) !== i)
  if (bad === undefined && twice !== undefined)
    return Effect.fail(
      new UsageError({ message: `--concurrency ${text} gives ${twice} twice: each level once` })
    )
  return bad === undefined
    ? Effect.succeed(numbers)
    : Effect.fail(
        new UsageError({
          message: `--concurrency takes positive whole numbers separated by commas (1,8,32), not "${bad}" in "${text}"`
        })
      )
}

export const positive = (flag: string, value: number) =>
  value >= 1
    ? Effect.void
    : Effect.fail(new UsageError({ message: `--${flag} must be at least 1, not ${value}` }))

/** The prompts of a JSONL file: each line a JSON string or an object with a `prompt` (or `text`) string. */
export const promptsOf = (path: string, text: string): Effect.Effect<ReadonlyArray<string>, UsageError> => {
  const prompts: Array<string> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === "") continue
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch {
      return Effect.fail(
        new UsageError({
          message: `${path} line ${i + 1} is not JSON: one prompt per line, a string or {"prompt": "..."}`
        })
      )
    }
    const prompt =
      typeof value === "string"
        ? value
        : typeof value === "object" && value !== null
          ? ((value as { prompt?: unknown; text?: unknown }).prompt ?? (value as { text?: unknown }).text)
          : undefined
    if (typeof prompt !== "string" || prompt === "")
      return Effect.fail(
        new UsageError({ message: `${path} line ${i + 1} has no prompt: give a string or {"prompt": "..."}` })
      )
    prompts.push(prompt)
  }
  return prompts.length > 0
    ? Effect.succeed(prompts)
    : Effect.fail(
        new UsageError({ message: `${path} holds no prompts: one per line, a string or {"prompt": "..."}` })
      )
}

export const bench = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  handle(
    parsed.json,
    { host: parsed.host },
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const levels = yield* concurrencies(parsed.concurrency)
      yield* positive("input-len", parsed.inputLen)
      yield* positive("output-len", parsed.outputLen)
      if (Option.isSome(parsed.requests)) yield* positive("requests", parsed.requests.value)
      const prompts = Option.isNone(parsed.prompts)
        ? undefined
        : yield* promptsOf(parsed.prompts.value, yield* fs.readFileString(parsed.prompts.value))
      // read before the run, so a bad file costs no GPU time
      const baseline = Option.isNone(parsed.baseline)
        ? undefined
        : yield* Bench.decodeResult(yield* fs.readFileString(parsed.baseline.value)).pipe(
            Effect.mapError(
              (e) =>
                new UsageError({
                  message: `--baseline ${parsed.baseline.pipe(Option.getOrElse(() => ""))} is not a saved \`mlops bench --json\` result: ${e.message.split("\n")[0]}`
                })
            )
          )
      let apiKey: string | undefined
      if (Option.isSome(parsed.apiKeyEnv)) {
        apiKey = process.env[parsed.apiKeyEnv.value]
        if (apiKey === undefined || apiKey === "")
          return yield* new UsageError({
            message: `--api-key-env ${parsed.apiKeyEnv.value}: that variable is not set here (export it, then run again)`
          })
      }
      const engines = yield* Engines.registry
      const result = yield* Bench.run(parsed.host, parsed.name, engines, {
        concurrency: levels,
        inputTokens: parsed.inputLen,
        outputTokens: parsed.outputLen,
        ...(Option.isSome(parsed.requests) ? { requests: parsed.requests.value } : {}),
        ...(prompts === undefined ? {} : { prompts }),
        ...(apiKey === undefined ? {} : { apiKey })
      })
      const changes = baseline === undefined ? undefined : Bench.compare(baseline, result)
      if (parsed.json) return yield* printJson(changes === undefined ? result : { ...result, changes })
      const style = yield* TerminalStyle
      yield* Console.log(benchTable(style, result))
      if (changes !== undefined && baseline !== undefined)
        yield* Console.log(changeLines(style, baseline, changes))
    })
  )
