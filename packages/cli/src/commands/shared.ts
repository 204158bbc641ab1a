/**
 * What every command definition shares: the `--json`, `--host`, `--python` and `--engine`
 * options, the command line's two halves, the failures a command ends with, and loading a
 * command's program on first use. Light on purpose: every `mlops` start evaluates it.
 */
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Context, Data, Effect, Schema } from "effect"
import { engineNames } from "./facts.js"

export const json = Options.boolean("json").pipe(
  Options.withDescription("Print JSON (one object; `launch`: NDJSON events, then the result)")
)

export const host = Options.text("host").pipe(
  Options.withDescription("Host alias (ssh_config, hosts.json, or `sim`)")
)

export const python = Options.text("python").pipe(
  Options.optional,
  Options.withDescription(
    "Python environment on the host: a venv/conda prefix or an interpreter (default: hosts.json `python`, else discovered)"
  )
)

/** `--engine NAME`: which engine (default: the one the host's Python environment has, the first registered when several). */
export const engine = Options.choice("engine", engineNames).pipe(
  Options.optional,
  Options.withDescription(
    `The inference engine (${engineNames.join(", ")}); default: the one found in the host's Python environment (${engineNames[0]} when several are)`
  )
)

/**
 * `--NAME VALUE` with VALUE one of `choices`; anything else is refused naming the option and its
 * choices (@effect/cli's own choice error names neither the option nor the value given).
 */
export const namedChoice = <const A extends string>(name: string, choices: ReadonlyArray<A>) =>
  Options.text(name).pipe(
    Options.mapEffect((value) =>
      (choices as ReadonlyArray<string>).includes(value)
        ? Effect.succeed(value as A)
        : Effect.fail(
            ValidationError.invalidValue(
              HelpDoc.p(`--${name} must be one of ${choices.join(", ")}, not "${value}"`)
            )
          )
    )
  )

/** The words after the first `--` of the command line: SGLang's flags, exactly as given. */
export class SglangFlags extends Context.Reference<SglangFlags>()("@mlops/cli/SglangFlags", {
  defaultValue: (): ReadonlyArray<string> => []
}) {}

/** The mlops words of the command line before `--` (without the program): fixed commands repeat them. */
export class MlopsWords extends Context.Reference<MlopsWords>()("@mlops/cli/MlopsWords", {
  defaultValue: (): ReadonlyArray<string> => []
}) {}

/** A command line mlops cannot act on (a malformed option value, no engine flags); the message says how to fix it. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

/** The command is over; exit with `code` (its output is already printed). */
export class CommandExit extends Data.TaggedError("CommandExit")<{ readonly code: number }> {}

/**
 * A command's program, from its module (`src/programs/`) loaded when the command runs: a start
 * then evaluates only the code of the command it runs, not every engine's rules, catalogues and
 * error schemas (the bundle turns each such `import()` into a module initialised on first use).
 */
export const lazily = <M, E, R>(
  load: () => Promise<M>,
  run: (program: M) => Effect.Effect<void, E, R>
): Effect.Effect<void, E, R> => Effect.flatMap(Effect.promise(load), run)
