/** @internal argparse's reading of a `launch_server` argv, against a catalogue. */

import {
  AmbiguousFlag,
  type ArgvError,
  MissingRequired,
  MissingValue,
  UnexpectedArgument,
  UnexpectedValue,
  UnknownFlag
} from "@mlops/serve/ArgvErrors"
import { suggest } from "@mlops/serve/Suggest"
import { Either } from "effect"
import { type Catalogue, type FlagSpec, negation } from "../../Catalogue.js"
import * as ServerArgs from "../../ServerArgs.js"
import { convert, expected } from "./values.js"

/** A deprecated flag that was used; SGLang prints a warning for it. */
export interface DeprecationWarning {
  readonly flag: string
  readonly message: string
}

export interface DecodedArgs {
  /** Defaults plus what the argv set. */
  readonly args: ServerArgs.ServerArgs
  /** The fields the argv set (even to their default value). */
  readonly explicit: ReadonlySet<ServerArgs.Field>
  readonly deprecated: ReadonlyArray<DeprecationWarning>
  /** `--config FILE`: SGLang merges that YAML into argv before parsing; it is not read here. */
  readonly configFile: string | null
  readonly version: string
}

// argparse treats these as values, not options, because no option looks like a negative number.
/** What `python -m sglang.launch_server` takes besides its flags. */
const TAKES = "SGLang's launch_server takes only --flags; put the model behind --model-path"

const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/

interface OptionMatch {
  readonly spec: FlagSpec
  readonly spelled: string
  readonly negated: boolean
  readonly inline: string | null
}

type Token = { readonly kind: "value" } | { readonly kind: "option"; readonly match: OptionMatch }

/** argparse `_parse_optional`: is this word an option (and which), or a value? */
const classify = (catalogue: Catalogue, word: string): Either.Either<Token, ArgvError> => {
  if (!word.startsWith("-") || word === "-") return Either.right({ kind: "value" })
  const found = (spelled: string, inline: string | null): Token => {
    const spec = catalogue.byFlag.get(spelled)!
    return {
      kind: "option",
      match: { spec, spelled, negated: spec.negatable && spelled === negation(spec), inline }
    }
  }
  if (catalogue.byFlag.has(word)) return Either.right(found(word, null))
  const eq = word.indexOf("=")
  const head = eq === -1 ? word : word.slice(0, eq)
  const inline = eq === -1 ? null : word.slice(eq + 1)
  if (catalogue.byFlag.has(head)) return Either.right(found(head, inline))
  if (head.startsWith("--")) {
    const candidates = [...catalogue.byFlag.keys()].filter((known) => known.startsWith(head))
    if (candidates.length === 1) return Either.right(found(candidates[0]!, inline))
    if (candidates.length > 1) return Either.left(new AmbiguousFlag({ flag: head, candidates }))
  }
  if (NEGATIVE_NUMBER.test(word) || word.includes(" ")) return Either.right({ kind: "value" })
  return Either.left(
    new UnknownFlag({
      flag: head,
      suggestions: suggest(head, catalogue.byFlag.keys()),
      engine: "SGLang",
      version: catalogue.version,
      helpCommand: "python -m sglang.launch_server --help"
    })
  )
}

/**
 * What argparse makes of one `--word` against a catalogue: the flag it names (also through an
 * alias, a `--no-` form, `--flag=value` or a unique prefix), an ambiguous prefix, or unknown.
 */
export const lookupOption = (
  catalogue: Catalogue,
  word: string
): { readonly _tag: "Flag"; readonly spec: FlagSpec } | AmbiguousFlag | UnknownFlag | undefined => {
  const token = classify(catalogue, word)
  if (Either.isLeft(token))
    return token.left._tag === "AmbiguousFlag" || token.left._tag === "UnknownFlag" ? token.left : undefined
  return token.right.kind === "option" ? { _tag: "Flag", spec: token.right.match.spec } : undefined
}

const deprecationMessage = (catalogue: Catalogue, spec: FlagSpec): string => {
  if (spec.field === null) return `${spec.flag} is deprecated and ignored; remove it`
  const canonical = catalogue.byField.get(spec.field)!
  return canonical === spec
    ? `${spec.flag} is deprecated: ${spec.summary}`
    : `${spec.flag} is deprecated; use ${canonical.flag}`
}

/** Parse argv (flags only, no program name) the way `launch_server` would. */
export const decode = (
  catalogue: Catalogue,
  argv: ReadonlyArray<string>
): Either.Either<DecodedArgs, ArgvError> => {
  const values: Record<string, unknown> = { ...ServerArgs.defaults(catalogue) }
  const explicit = new Set<ServerArgs.Field>()
  const deprecated: Array<DeprecationWarning> = []
  let configFile: string | null = null
  let i = 0
  let previous: string | null = null
  // argparse sets aside words it cannot use and reports them ("unrecognized arguments") only
  // after every value was converted and the required flags were checked; the first one is reported.
  const unrecognized: Array<ArgvError> = []

  // argparse classifies every word before consuming any, so an ambiguous prefix anywhere comes first.
  for (const word of argv) {
    if (word === "--") break
    const token = classify(catalogue, word)
    if (Either.isLeft(token) && token.left._tag === "AmbiguousFlag") return Either.left(token.left)
  }

  // The words from position `i` on that argparse would hand to the current option as values.
  const followingValues = (): ReadonlyArray<string> => {
    const words: Array<string> = []
    for (let j = i; j < argv.length && argv[j] !== "--"; j++) {
      const token = classify(catalogue, argv[j]!)
      if (Either.isLeft(token) || token.right.kind === "option") break
      words.push(argv[j]!)
    }
    return words
  }

  while (i < argv.length) {
    const word = argv[i]!
    if (word === "--") {
      const rest = argv[i + 1]
      if (rest !== undefined)
        unrecognized.push(new UnexpectedArgument({ argument: rest, after: previous, takes: TAKES }))
      break
    }
    const token = classify(catalogue, word)
    if (Either.isLeft(token) || token.right.kind === "value") {
      unrecognized.push(
        Either.isLeft(token)
          ? token.left
          : new UnexpectedArgument({ argument: word, after: previous, takes: TAKES })
      )
      i++
      continue
    }
    const { spec, spelled, negated, inline } = token.right.match
    previous = spelled
    i++
    if (spec.deprecated) deprecated.push({ flag: spelled, message: deprecationMessage(catalogue, spec) })

    let value: unknown
    if (spec.type === "bool") {
      if (inline !== null)
        return Either.left(new UnexpectedValue({ flag: spelled, value: inline, inline: true }))
      const next = argv[i]
      if (next !== undefined && next !== "--") {
        const nextToken = classify(catalogue, next)
        // argparse leaves the word for "unrecognized arguments"; naming the switch is clearer.
        if (Either.isRight(nextToken) && nextToken.right.kind === "value") {
          unrecognized.push(new UnexpectedValue({ flag: spelled, value: next, inline: false }))
        }
      }
      // store_const-like switches (SGLang's DeprecatedStoreConstAction) write their constant.
      value = spec.const !== undefined && !spec.negatable ? spec.const : !negated
    } else {
      let words: ReadonlyArray<string>
      if (inline !== null) words = [inline]
      else {
        const following = followingValues()
        words = spec.nargs === "+" || spec.nargs === "*" ? following : following.slice(0, 1)
        i += words.length
      }
      if (words.length === 0 && (spec.nargs === null || spec.nargs === "+")) {
        return Either.left(new MissingValue({ flag: spelled, expected: expected(spec) }))
      }
      const converted: Array<unknown> = []
      for (const w of words) {
        const one = convert(spec, spelled, w)
        if (Either.isLeft(one)) return Either.left(one.left)
        converted.push(one.right)
      }
      if (spec.nargs === "+" || spec.nargs === "*") value = converted
      else if (spec.nargs === "?") value = converted.length === 0 ? spec.const : converted[0]
      else value = converted[0]
    }

    if (spec.field === null) {
      if (spec.flag === "--config") configFile = value as string
      continue
    }
    values[spec.field] = value
    explicit.add(spec.field as ServerArgs.Field)
  }

  for (const spec of catalogue.byField.values()) {
    if (spec.required === true && !explicit.has(spec.field as ServerArgs.Field)) {
      return Either.left(new MissingRequired({ flag: spec.flag }))
    }
  }
  if (unrecognized.length > 0) return Either.left(unrecognized[0]!)
  return Either.right({
    args: values as unknown as ServerArgs.ServerArgs,
    explicit,
    deprecated,
    configFile,
    version: catalogue.version
  })
}
