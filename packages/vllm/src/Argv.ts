/**
 * `vllm serve` command lines as values, read with vLLM's parser semantics: the model as the
 * positional (`--model` too), underscores or dashes in flag names, `--x/--no-x`, JSON-valued
 * config flags and dotted keys into them (`--compilation-config.level 3`), unique prefixes,
 * last one wins. `--config file.yaml` is refused by name (mlops does not read it).
 *
 * @since 0.1.0
 */
import type { Effect, Either } from "effect"
import type { VllmArgvError } from "./ArgvErrors.js"
import * as Catalogue from "./Catalogue.js"
import * as decoder from "./internal/argv/decode.js"
import * as encoder from "./internal/argv/encode.js"

/** The model, every flag's value (defaults filled in) and which were given. @category models */
export type Decoded = decoder.Decoded

/**
 * Read the words after `vllm serve`. Fails with the problem vLLM's parser reports first: a
 * config file, an ambiguous prefix or a bad value where it stands, then unknown flags and
 * stray words, then a missing model.
 *
 * @category decoding
 */
export const decode = (
  argv: ReadonlyArray<string>,
  catalogue: Catalogue.Catalogue = Catalogue.latest
): Effect.Effect<Decoded, VllmArgvError> => decoder.decode(catalogue, argv)

/** `decode` as a pure value (for the Engine's offline flags). @category decoding */
export const decodeEither = (
  argv: ReadonlyArray<string>,
  catalogue: Catalogue.Catalogue = Catalogue.latest
): Either.Either<Decoded, VllmArgvError> => decoder.decode(catalogue, argv)

/**
 * The words of a command line for these values: the model, then each value in `values`
 * (canonical spellings, catalogue order). `decode(encode(model, values))` gives them back.
 *
 * @category encoding
 */
export const encode = (
  model: string,
  values: Readonly<Record<string, unknown>>,
  catalogue: Catalogue.Catalogue = Catalogue.latest
): ReadonlyArray<string> => encoder.encode(catalogue, model, values)

/**
 * The user's words with the flags of `patch` (dest → value) replaced: old occurrences dropped
 * whatever their spelling, the new values appended canonically. What a fixed command is made of.
 *
 * @category encoding
 */
export const withValues = (
  argv: ReadonlyArray<string>,
  patch: Readonly<Record<string, unknown>>,
  catalogue: Catalogue.Catalogue = Catalogue.latest
): ReadonlyArray<string> => encoder.withValues(catalogue, argv, patch)
