/**
 * The `mlops` command tree. `run` parses and runs; `main` also renders unexpected failures and
 * returns the process exit code (see ExitCodes), so tests and `bin.ts` share one path.
 *
 * Everything after the first `--` is SGLang's, untouched: `main` splits the command line there
 * and hands the tail to `launch`/`check` through `SglangFlags`, so @effect/cli never sees it.
 * (@effect/cli alone would pass the words after `--` through, but it also takes unknown
 * `--options` before `--` as positional words, which would silently mix mlops typos into
 * SGLang's flags; with the split, anything before `--` that is not an mlops option is a usage
 * error.)
 *
 * @since 0.1.0
 */
import { type CliApp, Command, ValidationError } from "@effect/cli"
import { Cause, Console, Effect, Layer } from "effect"
import { bench } from "./commands/bench.js"
import { check } from "./commands/check.js"
import * as Completion from "./commands/completion.js"
import { diagnose } from "./commands/diagnose.js"
import { flags } from "./commands/flags.js"
import { hosts } from "./commands/hosts.js"
import { launch } from "./commands/launch.js"
import { logs } from "./commands/logs.js"
import { pull } from "./commands/pull.js"
import { rm } from "./commands/rm.js"
import { run as runJob } from "./commands/run.js"
import { CommandExit, MlopsWords, SglangFlags } from "./commands/shared.js"
import { status } from "./commands/status.js"
import { stop } from "./commands/stop.js"
import { sweep } from "./commands/sweep.js"
import { ExitCode } from "./ExitCodes.js"
import type * as Layers from "./Layers.js"
import * as Help from "./render/help.js"
import * as Scrub from "./render/scrub.js"
import { TerminalStyle } from "./render/style.js"

/** @since 0.1.0 */
export const version = "0.1.0"

const DESCRIPTION = "Run SGLang and vLLM servers on your own GPU hosts over SSH"

/** A layer of `Layers`, its module (hosts, SSH, the simulator) loaded once a command runs, not at start. */
const fromLayers = <A>(pick: (layers: typeof Layers) => Layer.Layer<A>): Layer.Layer<A> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => import("./Layers.js")),
      pick
    )
  )

/**
 * A command that may read a host's engine (its own SGLang parser, an image's contents), with the
 * caches of what they gave. (The caches are optional to HostFlags and the image runtime: a
 * command without them still works, only uncached.)
 */
const readingHostFlags = <Name extends string, R, E, A>(command: Command.Command<Name, R, E, A>) =>
  Command.provide(
    command,
    fromLayers((layers) => layers.engineCaches)
  )

/** The root command with every subcommand. @category commands */
export const command = Command.make("mlops").pipe(
  Command.withDescription(DESCRIPTION),
  Command.withSubcommands([
    readingHostFlags(launch),
    readingHostFlags(check),
    readingHostFlags(flags),
    diagnose,
    status,
    logs,
    bench,
    readingHostFlags(sweep),
    runJob,
    pull,
    stop,
    rm,
    hosts
  ])
)

/** `[...mlops words, "--", ...sglang words]` split at the first `--` (after the program name). @category running */
export const splitAtDashDash = (
  argv: ReadonlyArray<string>
): { readonly mlops: ReadonlyArray<string>; readonly sglang: ReadonlyArray<string> } => {
  const at = argv.indexOf("--", 2)
  return at === -1 ? { mlops: argv, sglang: [] } : { mlops: argv.slice(0, at), sglang: argv.slice(at + 1) }
}

/** Subcommands whose `--version V` is an engine's version, not a request for mlops' own version. */
const versionCommands: ReadonlySet<string> = new Set(["check", "flags"])

/**
 * @effect/cli treats `--version` anywhere as its built-in "print the program's version"; for
 * `check` it names the engine's version (`--engine-version`), for `flags` SGLang's
 * (`--sglang-version`).
 *
 * @category running
 */
export const renameVersionOption = (mlopsWords: ReadonlyArray<string>): ReadonlyArray<string> => {
  const subcommand = mlopsWords[2] ?? ""
  if (!versionCommands.has(subcommand)) return mlopsWords
  const prefix = subcommand === "check" ? "--engine-" : "--sglang-"
  return mlopsWords.map((word) =>
    word === "--version"
      ? `${prefix}version`
      : word.startsWith("--version=")
        ? `${prefix}${word.slice(2)}`
        : word
  )
}

/**
 * Parse `argv` (a full `process.argv`: the first two entries are skipped) and run. SGLang's
 * flags come from `SglangFlags` (see `main`).
 *
 * @category running
 */
export const run = Command.run(command.pipe(Command.provide(fromLayers((layers) => layers.layer))), {
  name: "mlops",
  version
})

/**
 * Run and return the exit code: 0, the code of the failure's class, 2 for a command line
 * @effect/cli rejected (it printed why), 1 for a defect (printed here).
 *
 * @category running
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<number, never, CliApp.CliApp.Environment> =>
  Effect.suspend(() => {
    const split = splitAtDashDash(argv)
    const own = split.mlops.slice(2)
    const special = helpOrCompletion(own)
    if (special !== undefined) return special
    return run(renameVersionOption(split.mlops)).pipe(
      Effect.provideService(SglangFlags, split.sglang),
      Effect.provideService(MlopsWords, split.mlops.slice(2))
    )
  }).pipe(
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
    ),
    Scrub.scrubbing(secretsOfCommandLine(argv))
  )

/** `--help` (rendered by render/help.ts) and `mlops completion SHELL`, before @effect/cli parses anything. */
const helpOrCompletion = (words: ReadonlyArray<string>): Effect.Effect<void, CommandExit> | undefined => {
  if (words[0] === "completion") return Completion.print(command, words.slice(1))
  if (!Help.asksForHelp(words)) return undefined
  return Effect.flatMap(TerminalStyle, (style) =>
    Console.log(Help.helpFor(command, { version, description: DESCRIPTION }, words, style))
  )
}

const secretsOfCommandLine = (argv: ReadonlyArray<string>) => {
  const split = splitAtDashDash(argv)
  return Scrub.secretsOf(split.mlops.slice(2), split.sglang)
}
