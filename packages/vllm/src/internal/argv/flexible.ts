/**
 * What vLLM's `FlexibleArgumentParser.parse_args` does to the words before argparse sees them:
 * `--model X` becomes the positional, underscores in a flag's name become dashes (up to the
 * first `.`), `-O3` becomes `-O.mode=3` where `-O` is a spelling, and dotted keys into JSON
 * flags (`--compilation-config.level 3`, `--x.list+ a,b`) are merged into one JSON value per
 * flag, appended after the other words.
 *
 * @internal
 */

/** The words argparse parses, and what the rewriting itself found. */
export interface Rewritten {
  readonly words: ReadonlyArray<string>
  /** The model given as `--model X` / `--model=X` (moved to the front as the positional). */
  readonly modelFlag: string | undefined
  /** The file named by `--config` (null: none named), when given: mlops does not read config files. */
  readonly configFile: string | null | undefined
  /** Dotted keys given more than once (vLLM warns "Found duplicate keys"). */
  readonly duplicateKeys: ReadonlyArray<string>
}

const dashesInName = (word: string): string => {
  const eq = word.indexOf("=")
  const key = eq === -1 ? word : word.slice(0, eq)
  const dot = key.indexOf(".")
  const name = dot === -1 ? key : key.slice(0, dot)
  return name.replaceAll("_", "-") + word.slice(name.length)
}

type Json = null | boolean | number | string | ReadonlyArray<Json> | { [key: string]: Json }

const jsonOrText = (text: string): Json => {
  try {
    return JSON.parse(text) as Json
  } catch {
    return text
  }
}

const isRecord = (v: unknown): v is Record<string, Json> =>
  typeof v === "object" && v !== null && !Array.isArray(v)

/** Merge `update` into `into` as vLLM does (lists concatenate, dicts recurse); returns overwritten keys. */
const merge = (into: Record<string, Json>, update: Record<string, Json>, path = ""): Array<string> => {
  const overwritten: Array<string> = []
  for (const [key, value] of Object.entries(update)) {
    const old = into[key]
    if (isRecord(value) && isRecord(old)) overwritten.push(...merge(old, value, `${path}${key}.`))
    else if (Array.isArray(value) && Array.isArray(old)) into[key] = [...old, ...value]
    else {
      if (key in into) overwritten.push(`${path}${key}`)
      into[key] = value
    }
  }
  return overwritten
}

export const rewrite = (argv: ReadonlyArray<string>, hasDashO: boolean): Rewritten => {
  let modelFlag: string | undefined
  let configFile: string | null | undefined
  const words: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    if (word === "--") {
      words.push(...argv.slice(i))
      break
    }
    if (modelFlag === undefined && (word === "--model" || word.startsWith("--model="))) {
      modelFlag = word === "--model" ? (argv[++i] ?? "") : word.slice("--model=".length)
      continue
    }
    if (word === "--config" || word.startsWith("--config=")) {
      configFile = word === "--config" ? (argv[++i] ?? null) : word.slice("--config=".length)
      continue
    }
    if (word.startsWith("--")) words.push(dashesInName(word))
    else if (hasDashO && word.startsWith("-O") && word !== "-O" && word[2] !== ".")
      words.push(`-O.mode=${word[2] === "=" ? word.slice(3) : word.slice(2)}`)
    else if (hasDashO && word === "-O" && /^[0-3]$/.test(argv[i + 1] ?? "")) words.push("-O.mode")
    else words.push(word)
  }
  const kept: Array<string> = []
  const dicts = new Map<string, Record<string, Json>>()
  const duplicateKeys: Array<string> = []
  const end = words.indexOf("--")
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    const key = word.split("=", 1)[0]!
    const numeric = /^-\d*\.?\d+$/.test(word)
    if ((end !== -1 && i >= end) || numeric || !word.startsWith("-") || !key.includes(".")) {
      kept.push(word)
      continue
    }
    let valueText = word.includes("=") ? word.slice(key.length + 1) : words[++i]
    if (valueText === undefined) {
      kept.push(word)
      continue
    }
    let path = key
    if (path.endsWith("+")) {
      path = path.slice(0, -1)
      valueText = JSON.stringify(valueText.split(","))
    }
    const [flag, ...keys] = path.split(".")
    let nested: Json = jsonOrText(valueText)
    for (const k of keys.reverse()) nested = { [k]: nested }
    const dict = dicts.get(flag!) ?? {}
    dicts.set(flag!, dict)
    duplicateKeys.push(...merge(dict, nested as Record<string, Json>).map((k) => `${flag}.${k}`))
  }
  const tail = end === -1 ? [] : kept.splice(kept.indexOf("--"))
  for (const [flag, dict] of dicts) kept.push(flag, JSON.stringify(dict))
  return { words: [...kept, ...tail], modelFlag, configFile, duplicateKeys }
}
