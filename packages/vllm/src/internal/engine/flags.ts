/**
 * A shipped catalogue as the serving layer's `Flags`: spelling lookup with vLLM's rules
 * (underscores, unique prefixes), pure decode, encode of chosen fields.
 *
 * @internal
 */

import { type ArgvError, InvalidValue, MissingRequired } from "@mlops/serve/ArgvErrors"
import type { Decoded, FlagInfo, Flags } from "@mlops/serve/Engine"
import * as Secrets from "@mlops/serve/Secrets"
import { Effect } from "effect"
import type { VllmArgvError } from "../../ArgvErrors.js"
import type { Catalogue, Flag } from "../../Catalogue.js"
import * as decoder from "../argv/decode.js"
import { wordsOf } from "../argv/encode.js"

/** Dests whose values are secrets: never shown, stored or put on a command line. */
export const secretDests: ReadonlySet<string> = new Set(["api_key", "hf_token", "ssl_keyfile"])

const infoOf = (flag: Flag): FlagInfo => ({
  flag: flag.flag,
  field: flag.dest,
  takesValue: flag.arity !== "switch" && flag.arity !== "toggle",
  list: flag.arity === "many",
  secret: secretDests.has(flag.dest) || (flag.conversion === "text" && Secrets.saysSecret(flag.flag))
})

const described = (flag: Flag | undefined): FlagInfo | undefined =>
  flag === undefined ? undefined : infoOf(flag)

/** The flag an argv word names: `--max_model_len=8`, `-tp`, a unique prefix of a long flag. */
export const flagOfWord = (catalogue: Catalogue, word: string): Flag | undefined => {
  const key = word.startsWith("--") ? word.split("=", 1)[0]!.split(".", 1)[0]!.replaceAll("_", "-") : word
  const exact = catalogue.bySpelling.get(key)
  if (exact !== undefined || !key.startsWith("--") || key.length <= 2) return exact
  const owners = new Set([...catalogue.bySpelling].filter(([s]) => s.startsWith(key)).map(([, f]) => f))
  return owners.size === 1 ? [...owners][0] : undefined
}

/** Engine args are plain records of flag values by dest (how this engine builds them). */
export const valuesOf = (args: object): Readonly<Record<string, unknown>> =>
  args as Readonly<Record<string, unknown>>

/** The serving layer knows argparse's refusals; vLLM's own two are said in their terms. */
const asArgvError = (e: VllmArgvError): ArgvError => {
  switch (e._tag) {
    case "ConfigFileUnsupported":
      return new InvalidValue({
        flag: "--config",
        value: e.file ?? "",
        expected:
          "no config file: mlops checks the flags before anything starts and does not read YAML on the host; write its keys as flags after `--` (`port: 8001` is `--port 8001`)"
      })
    case "MissingModel":
      return new MissingRequired({ flag: "MODEL" })
    default:
      return e
  }
}

const warningsOf = (d: decoder.Decoded, catalogue: Catalogue): ReadonlyArray<string> => [
  ...(d.duplicateKeys.length > 0 ? [`Found duplicate keys ${d.duplicateKeys.join(", ")}`] : []),
  ...(d.modelFlag && catalogue.snapshot.near !== "0.11"
    ? [
        "With `vllm serve`, you should provide the model as a positional argument or in a config file instead of via the `--model` option."
      ]
    : [])
]

export const flagsOf = (
  catalogue: Catalogue,
  version: string,
  source: Flags["source"],
  warning: string | null
): Flags => {
  // refusals name the installed version; a snapshot standing in for it is said too
  const named =
    catalogue.snapshot.name === `host-${version}` ||
    version === catalogue.snapshot.near ||
    version.startsWith(`${catalogue.snapshot.near}.`)
      ? version
      : `${version} (as ${catalogue.snapshot.name} has it)`
  return flagsFor(catalogue, version, source, warning, named)
}

const flagsFor = (
  catalogue: Catalogue,
  version: string,
  source: Flags["source"],
  warning: string | null,
  named: string
): Flags => ({
  version,
  source,
  warning,
  spec: (word) => described(flagOfWord(catalogue, word)),
  field: (name) => described(catalogue.byDest.get(name)),
  decode: (argv) =>
    Effect.mapBoth(decoder.decode(catalogue, argv, named), {
      onFailure: asArgvError,
      onSuccess: (d): Decoded => ({
        args: d.values,
        explicit: new Set(["model", ...d.given]),
        warnings: warningsOf(d, catalogue)
      })
    }),
  encode: (encoded, fields) => {
    const args = valuesOf(encoded)
    const chosen =
      fields ??
      catalogue.flags
        .filter((f) => JSON.stringify(args[f.dest]) !== JSON.stringify(f.default))
        .map((f) => f.dest)
    const words = [String(args.model ?? "")]
    for (const flag of catalogue.flags)
      if (flag.dest !== "model" && chosen.includes(flag.dest) && flag.dest in args)
        words.push(...wordsOf(flag, args[flag.dest]))
    return Effect.succeed(words)
  }
})
