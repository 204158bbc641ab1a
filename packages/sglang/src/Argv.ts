/**
 * SGLang `launch_server` command lines as typed values, read with argparse's rules: `--flag v`
 * and `--flag=v`, switches, `--no-x`, list flags, unique-prefix abbreviations (`--tp` is
 * `--tp-size`), aliases, last-one-wins. Encoding writes canonical spellings in catalogue order,
 * so `decodeArgv(encodeArgv(args))` gives the same args back.
 *
 * @since 0.1.0
 */

import type { ArgvError, UnencodableValue } from "@mlops/serve/ArgvErrors"
import * as ServerCommand from "@mlops/serve/ServerCommand"
import { Effect } from "effect"
import * as Catalogue from "./Catalogue.js"
import * as decoder from "./internal/argv/decode.js"
import * as encoder from "./internal/argv/encode.js"
import type * as ServerArgs from "./ServerArgs.js"

/** A deprecated flag that was used; SGLang prints a warning for it. @category models */
export type DeprecationWarning = decoder.DeprecationWarning

/**
 * The result of reading an argv: the full args (defaults + given), which fields were given, and
 * the deprecated flags used. @category models
 */
export type DecodedArgs = decoder.DecodedArgs

/** @category models */
export type EncodeOptions = encoder.EncodeOptions

/**
 * Read a `launch_server` argv (flags only, without `python -m sglang.launch_server`). Fails with
 * the problem argparse would report first: an ambiguous prefix anywhere, then bad values in argv
 * order, then a missing `--model-path`, and only then unknown flags and stray words.
 *
 * @category decoding
 */
export const decodeArgv: (
  argv: ReadonlyArray<string>,
  catalogue?: Catalogue.Catalogue
) => Effect.Effect<DecodedArgs, ArgvError> = Effect.fn("Argv.decodeArgv")(function* (
  argv: ReadonlyArray<string>,
  catalogue: Catalogue.Catalogue = Catalogue.latest
) {
  return yield* decoder.decode(catalogue, argv)
})

/**
 * Write args as an argv: canonical flag spellings in catalogue order. By default only values that
 * differ from the defaults; with `only` (e.g. a decoded `explicit`) exactly those fields. Fails
 * for values no command line can express (null where the flag has a non-null default, false for
 * a switch that defaults to None, an empty list for a `+` flag).
 *
 * @category encoding
 */
export const encodeArgv = (
  args: Partial<ServerArgs.ServerArgs>,
  options: EncodeOptions & { readonly catalogue?: Catalogue.Catalogue } = {}
): Effect.Effect<ReadonlyArray<string>, UnencodableValue> =>
  encoder.encode(options.catalogue ?? Catalogue.latest, args, options)

/**
 * Apply a fix: the changed fields overwrite `args` and join `explicit`, so
 * `encodeArgv(result.args, { only: result.explicit })` is the user's command plus the fix.
 *
 * @category combinators
 */
export const patch = (
  args: ServerArgs.ServerArgs,
  explicit: ReadonlySet<ServerArgs.Field>,
  changes: Partial<ServerArgs.ServerArgs>
): { readonly args: ServerArgs.ServerArgs; readonly explicit: ReadonlySet<ServerArgs.Field> } => {
  const fields = Object.keys(changes) as Array<ServerArgs.Field>
  return { args: { ...args, ...changes }, explicit: new Set([...explicit, ...fields]) }
}

/** How `launch_server` is usually started. @category formatting */
export const launchProgram: ReadonlyArray<string> = ["python", "-m", "sglang.launch_server"]

/**
 * A command line ready to paste into a POSIX shell: each word quoted when needed. `program` is
 * put in front (default `python -m sglang.launch_server`; `[]` for none). `multiline` puts each
 * flag on its own continued line.
 *
 * @category formatting
 */
export const formatCommandLine = (
  argv: ReadonlyArray<string>,
  options: { readonly program?: ReadonlyArray<string>; readonly multiline?: boolean } = {}
): string => ServerCommand.formatCommandLine(options.program ?? launchProgram, argv, options)
