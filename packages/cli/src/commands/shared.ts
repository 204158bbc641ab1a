/**
 * What every command shares: the `--json` and `--host` options, printing, and turning a
 * failure into its rendering plus the exit code of its class.
 */
import { Options } from "@effect/cli"
import * as Engine from "@mlops/serve/Engine"
import { Console, Context, Data, Effect, Option, Schema } from "effect"
import * as Engines from "../Engines.js"
import * as ExitCodes from "../ExitCodes.js"
import * as RenderFailure from "../render/failure.js"
import * as Json from "../render/json.js"
import { TerminalStyle } from "../render/style.js"

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
export const engine = Options.choice("engine", Engines.names).pipe(
  Options.optional,
  Options.withDescription(
    `The inference engine (${Engines.names.join(", ")}); default: the one found in the host's Python environment (${Engines.names[0]} when several are)`
  )
)

/** The engine `--engine` names, or every registered one to look for in order. */
export const engineOf = (named: Option.Option<string>): Engine.Engine | Engine.Registry =>
  Option.match(named, {
    onNone: () => Engines.registry,
    onSome: (name) => Engine.byName(Engines.registry, name) ?? Engines.registry
  })

/** The words after the first `--` of the command line: SGLang's flags, exactly as given. */
export class SglangFlags extends Context.Reference<SglangFlags>()("@mlops/cli/SglangFlags", {
  defaultValue: (): ReadonlyArray<string> => []
}) {}

/** The mlops words of the command line before `--` (without the program): fixed commands repeat them. */
export class MlopsWords extends Context.Reference<MlopsWords>()("@mlops/cli/MlopsWords", {
  defaultValue: (): ReadonlyArray<string> => []
}) {}

/** A command line mlops cannot act on (a malformed option value, no SGLang flags); the message says how to fix it. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

/** The command is over; exit with `code` (its output is already printed). */
export class CommandExit extends Data.TaggedError("CommandExit")<{ readonly code: number }> {}

/** Print one JSON value as a line. */
export const printJson = (value: unknown) => Console.log(Json.line(value))

/**
 * Run a command's program: on failure print it (human or JSON, with the fixed command when the
 * context allows one) and end with the failure's exit code.
 */
export const handle = <A, E, R>(
  asJson: boolean,
  context: RenderFailure.FailureContext,
  program: Effect.Effect<A, E, R>
): Effect.Effect<A, CommandExit, R> =>
  program.pipe(
    Effect.catchAll((failure) =>
      Effect.gen(function* () {
        if (asJson) yield* printJson(RenderFailure.json(failure, context))
        else yield* Console.error(RenderFailure.human(yield* TerminalStyle, failure, context))
        return yield* new CommandExit({ code: ExitCodes.fromFailure(failure) })
      })
    )
  )
