/**
 * Values → `vllm serve` words: the model first, then each given flag in its canonical
 * spelling, in catalogue order.
 *
 * @internal
 */
import { type Catalogue, negationOf } from "../../Catalogue.js"
import type { FlagRecord } from "../catalogue/snapshot.js"
import { wordOf } from "./convert.js"

export const wordsOf = (flag: FlagRecord, value: unknown): ReadonlyArray<string> => {
  switch (flag.arity) {
    case "switch":
      return value === true ? [flag.flag] : []
    case "toggle":
      return [value === true ? flag.flag : negationOf(flag)]
    case "maybe":
      return value === true ? [flag.flag] : [flag.flag, wordOf(flag, value)]
    case "many":
      return Array.isArray(value) && value.length > 0
        ? [flag.flag, ...value.map((v) => wordOf(flag, v))]
        : [flag.flag, "None"]
    case "append":
      return (Array.isArray(value) ? value : [value]).flatMap((v) => [flag.flag, wordOf(flag, v)])
    case "single":
      return [flag.flag, wordOf(flag, value)]
  }
}

export const encode = (
  catalogue: Catalogue,
  model: string,
  values: Readonly<Record<string, unknown>>
): ReadonlyArray<string> => [
  model,
  ...catalogue.flags.flatMap((flag) =>
    flag.dest === "model" || !(flag.dest in values) ? [] : wordsOf(flag, values[flag.dest])
  )
]

/** Every spelling argparse would take for this flag, including unique prefixes given. */
const namesFlag = (catalogue: Catalogue, flag: FlagRecord, word: string): boolean => {
  const spelling = word.split("=", 1)[0]!.replace(/^(--[^.]*)/, (name) => name.replaceAll("_", "-"))
  const bare = spelling.split(".", 1)[0]!
  if (catalogue.bySpelling.get(bare) === flag) return true
  if (!bare.startsWith("--") || bare.length <= 2) return false
  const owners = new Set([...catalogue.bySpelling].filter(([s]) => s.startsWith(bare)).map(([, f]) => f))
  return owners.size === 1 && owners.has(flag)
}

/**
 * The user's words with some flags set anew: every occurrence of those flags (any spelling,
 * with its values) removed, then each written canonically at the end. The rest stays as typed.
 */
export const withValues = (
  catalogue: Catalogue,
  argv: ReadonlyArray<string>,
  patch: Readonly<Record<string, unknown>>
): ReadonlyArray<string> => {
  const flags = Object.keys(patch).flatMap((dest) => {
    const flag = catalogue.byDest.get(dest)
    return flag === undefined ? [] : [flag]
  })
  const kept: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    const flag = flags.find((f) => word.startsWith("-") && namesFlag(catalogue, f, word))
    if (flag === undefined) {
      kept.push(word)
      continue
    }
    if (word.includes("=") || flag.arity === "switch" || flag.arity === "toggle") continue
    const takesMany = flag.arity === "many"
    while (i + 1 < argv.length && !argv[i + 1]!.startsWith("-")) {
      i++
      if (!takesMany) break
    }
  }
  // back to a None default: the flag is left out
  const unset = (flag: FlagRecord) => patch[flag.dest] === null && flag.default === null
  return [...kept, ...flags.flatMap((flag) => (unset(flag) ? [] : wordsOf(flag, patch[flag.dest])))]
}
