/**
 * The `mlops` command tree. `run` parses and runs; `main` also renders unexpected failures and
 * returns the process exit code (see ExitCodes), so tests and `bin.ts` share one path.
 *
 * Everything after `--` is handed to the command untouched (@effect/cli treats the words after
 * the first `--` as positional arguments, even ones that look like options, `--help` included),
 * which is how `launch` and `check` take SGLang's flags exactly as SGLang takes them.
 *
 * @since 0.1.0
 */
import { type CliApp, Command, ValidationError } from "@effect/cli"
import { Cause, Console, Effect } from "effect"
import { check } from "./commands/check.js"
import { diagnose } from "./commands/diagnose.js"
import { hosts } from "./commands/hosts.js"
import { launch } from "./commands/launch.js"
import { logs } from "./commands/logs.js"
import { CommandExit } from "./commands/shared.js"
import { status } from "./commands/status.js"
import { stop } from "./commands/stop.js"
import { ExitCode } from "./ExitCodes.js"
import * as Layers from "./Layers.js"

/** @since 0.1.0 */
export const version = "0.1.0"

/** The root command with every subcommand. @category commands */
export const command = Command.make("mlops").pipe(
  Command.withDescription("Run SGLang servers on your own GPU hosts over SSH"),
  Command.withSubcommands([launch, check, diagnose, status, logs, stop, hosts])
)

/**
 * Parse `argv` (a full `process.argv`: the first two entries are skipped) and run.
 *
 * @category running
 */
export const run = Command.run(command.pipe(Command.provide(Layers.layer)), { name: "mlops", version })

/**
 * Run and return the exit code: 0, the code of the failure's class, 2 for a command line
 * @effect/cli rejected (it printed why), 1 for a defect (printed here).
 *
 * @category running
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<number, never, CliApp.CliApp.Environment> =>
  run(argv).pipe(
    Effect.as(ExitCode.Ok as number),
    Effect.catchAll((failure) => {
      if (failure instanceof CommandExit) return Effect.succeed(failure.code)
      if (ValidationError.isValidationError(failure)) return Effect.succeed(ExitCode.Usage as number)
      return Console.error(`mlops: ${String(failure)}`).pipe(Effect.as(ExitCode.Unexpected as number))
    }),
    Effect.catchAllDefect((defect) =>
      Console.error(`mlops: unexpected error\n${Cause.pretty(Cause.die(defect))}`).pipe(
        Effect.as(ExitCode.Unexpected as number)
      )
    )
  )
