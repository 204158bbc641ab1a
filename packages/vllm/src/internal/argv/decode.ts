/**
 * argparse over the rewritten words of `vllm serve` (see `flexible.ts`): one optional
 * positional (the model), `--flag value` and `--flag=value`, unique prefixes of long flags,
 * `--x/--no-x`, `nargs="+"` lists, repeatable flags, last one wins.
 *
 * @internal
 */
import {
  AmbiguousFlag,
  InvalidChoice,
  InvalidValue,
  MissingValue,
  UnexpectedArgument,
  UnexpectedValue,
  UnknownFlag
} from "@mlops/serve/ArgvErrors"
import { suggest } from "@mlops/serve/Suggest"
import { Either } from "effect"
import { ConfigFileUnsupported, MissingModel, type VllmArgvError } from "../../ArgvErrors.js"
import { type Catalogue, negationOf } from "../../Catalogue.js"
import type { FlagRecord } from "../catalogue/snapshot.js"
import { convert } from "./convert.js"
import { rewrite } from "./flexible.js"

export interface Decoded {
  readonly model: string
  /** Every dest: its default, or the value given. */
  readonly values: Readonly<Record<string, unknown>>
  /** The dests given on the command line, in the order first given. */
  readonly given: ReadonlyArray<string>
  /** Dotted keys given twice (vLLM warns and keeps the last). */
  readonly duplicateKeys: ReadonlyArray<string>
  /** The model came as `--model X` (vLLM warns: positional from 0.13 on). */
  readonly modelFlag: boolean
}

/** A word argparse takes as a value, not an option: not dashed, or a negative number. */
/** What `vllm serve` takes besides its flags. */
const TAKES =
  "vllm serve takes one positional argument, the model (or --model), and every other setting as a --flag"

const isValueWord = (word: string) => !word.startsWith("-") || /^-\d*\.?\d+$/.test(word) || word === "-"

/** The flag a long spelling names: exact, else the one flag it is a prefix of. */
const lookup = (
  catalogue: Catalogue,
  spelling: string,
  version: string
): FlagRecord | AmbiguousFlag | UnknownFlag => {
  const exact = catalogue.bySpelling.get(spelling)
  if (exact !== undefined) return exact
  if (spelling.startsWith("--") && spelling.length > 2) {
    const matches = [...catalogue.bySpelling.keys()].filter(
      (s) => s.startsWith("--") && s.startsWith(spelling)
    )
    const flags = new Set(matches.map((s) => catalogue.bySpelling.get(s)!))
    if (flags.size === 1) return [...flags][0]!
    if (flags.size > 1) return new AmbiguousFlag({ flag: spelling, candidates: matches })
  }
  return new UnknownFlag({
    flag: spelling,
    suggestions: suggest(spelling, catalogue.bySpelling.keys()),
    engine: "vLLM",
    version,
    helpCommand: "vllm serve --help"
  })
}

const checkChoice = (flag: FlagRecord, spelling: string, text: string, value: unknown) =>
  flag.choices === null || flag.choices.includes(value as string | number | null)
    ? undefined
    : new InvalidChoice({ flag: spelling, value: text, choices: flag.choices.map((c) => String(c)) })

/**
 * Pure: the first refusal vLLM's parser would give, or the decoded words. `version`: how a
 * refusal names the release (default the snapshot's name).
 */
export const decode = (
  catalogue: Catalogue,
  argv: ReadonlyArray<string>,
  version: string = catalogue.snapshot.name
): Either.Either<Decoded, VllmArgvError> => {
  const rewritten = rewrite(argv, catalogue.bySpelling.has("-O"))
  if (rewritten.configFile !== undefined)
    return Either.left(new ConfigFileUnsupported({ file: rewritten.configFile }))
  const values: Record<string, unknown> = Object.fromEntries(catalogue.flags.map((f) => [f.dest, f.default]))
  const given: Array<string> = []
  const unknown: Array<UnknownFlag | UnexpectedArgument | UnexpectedValue> = []
  let model = rewritten.modelFlag
  const set = (flag: FlagRecord, value: unknown) => {
    if (!given.includes(flag.dest)) given.push(flag.dest)
    values[flag.dest] =
      flag.arity === "append"
        ? [...(Array.isArray(values[flag.dest]) ? (values[flag.dest] as Array<unknown>) : []), value]
        : value
  }
  const words = rewritten.words
  let positionalOnly = false
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    if (positionalOnly || isValueWord(word) || word === "--") {
      if (word === "--" && !positionalOnly) {
        positionalOnly = true
        continue
      }
      if (model === undefined) model = word
      else
        unknown.push(
          new UnexpectedArgument({ argument: word, after: i > 0 ? words[i - 1]! : null, takes: TAKES })
        )
      continue
    }
    const eq = word.startsWith("--") ? word.indexOf("=") : -1
    const spelling = eq === -1 ? word : word.slice(0, eq)
    const inline = eq === -1 ? undefined : word.slice(eq + 1)
    const found = lookup(catalogue, spelling, version)
    if (found instanceof AmbiguousFlag) return Either.left(found)
    if (found instanceof UnknownFlag) {
      unknown.push(found)
      if (inline === undefined && i + 1 < words.length && isValueWord(words[i + 1]!)) i++
      continue
    }
    const flag = found
    if (flag.arity === "switch" || flag.arity === "toggle") {
      if (inline !== undefined)
        return Either.left(new UnexpectedValue({ flag: spelling, value: inline, inline: true }))
      set(flag, flag.arity === "switch" || spelling !== negationOf(flag))
      continue
    }
    const texts: Array<string> = []
    if (inline !== undefined) texts.push(inline)
    else if (flag.arity === "many")
      while (i + 1 < words.length && isValueWord(words[i + 1]!)) texts.push(words[++i]!)
    else if (i + 1 < words.length && isValueWord(words[i + 1]!)) texts.push(words[++i]!)
    if (texts.length === 0) {
      if (flag.arity === "maybe") {
        set(flag, true)
        continue
      }
      return Either.left(
        new MissingValue({
          flag: spelling,
          expected: flag.arity === "many" ? "one or more values" : "a value"
        })
      )
    }
    const converted: Array<unknown> = []
    for (const text of texts) {
      const c = convert(flag, text)
      if (!c.ok) return Either.left(new InvalidValue({ flag: spelling, value: text, expected: c.expected }))
      const bad = checkChoice(flag, spelling, text, c.value)
      if (bad !== undefined) return Either.left(bad)
      converted.push(c.value)
    }
    set(flag, flag.arity === "many" ? converted : converted[0])
  }
  if (unknown.length > 0) return Either.left(unknown[0]!)
  if (model === undefined || model === "")
    return Either.left(
      new MissingModel({ defaultModel: String(catalogue.byDest.get("model")?.default ?? "") })
    )
  values.model = model
  return Either.right({
    model,
    values,
    given,
    duplicateKeys: rewritten.duplicateKeys,
    modelFlag: rewritten.modelFlag !== undefined
  })
}
