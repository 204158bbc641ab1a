/**
 * Secrets in a launch: engine flags that carry one (`--api-key`, `--admin-api-key`, and any
 * string flag whose name says key, token, secret or password) and the values of `--env`.
 * Everything mlops prints or stores shows `***` in their place; only the server (and the
 * host's own argument check) ever receives the real values, through the environment of the
 * process, never its command line (see `ServerCommand`).
 *
 * The launch program works on the *shown* argv (`split(argv).shown`) throughout, and
 * `reveal` puts the real values back just before the server is started, so a fixed or
 * auto-fixed argv keeps its secrets without ever holding them in an event or error.
 *
 * @since 0.1.0
 */
import { createHash, randomBytes } from "node:crypto"
import type { Flags } from "./Engine.js"

/** What a secret is shown as. @category constants */
export const REDACTED = "***"

const words = (name: string) =>
  name
    .replace(/^-+/, "")
    .toLowerCase()
    .split(/[-_]/)
    .filter((w) => w !== "")

const ANYWHERE = new Set([
  "secret",
  "secrets",
  "password",
  "passwd",
  "passphrase",
  "credential",
  "credentials"
])
const LAST = new Set(["key", "token", "apikey"])

/** The name rule alone: `--api-key`, `--hf-token`, `--ssl-keyfile-password`; not `--max-total-tokens`. */
const nameSaysSecret = (name: string): boolean => {
  const parts = words(name)
  return parts.some((w) => ANYWHERE.has(w)) || LAST.has(parts.at(-1) ?? "")
}

/** How secrets are told apart: an engine's flags, or (without them) flag names alone. @category models */
export type FlagLookup = Pick<Flags, "spec" | "field">

/** Judges by the name alone (a flag no engine catalogue was given for). @category models */
export const byName: FlagLookup = { spec: () => undefined, field: () => undefined }

/** Whether a flag or variable name says it holds a secret (key, token, secret, password, ...). @category predicates */
export const saysSecret = (name: string): boolean => nameSaysSecret(name)

/**
 * True for a flag that carries a secret (`FlagInfo.secret`, which engines derive from its name
 * and that it takes text). Flags the engine does not know are judged by the name alone.
 *
 * @category predicates
 */
export const isSecretFlag = (flag: string, flags: FlagLookup = byName): boolean => {
  const spec = flags.spec(flag)
  return spec === undefined ? nameSaysSecret(flag.split("=", 1)[0]!) : spec.secret
}

/** An environment variable whose name says it holds a secret (`HF_TOKEN`, `OPENAI_API_KEY`). @category predicates */
export const isSecretEnvName = (name: string): boolean => nameSaysSecret(name)

/** One secret value of an argv: the canonical flag that carries it and where it stood. @category models */
export interface ArgvSecret {
  readonly flag: string
  readonly value: string
}

/** An argv split into what may be shown and the secret values it held. @category models */
export interface SplitArgv {
  /** The argv with every secret value replaced by `***`. */
  readonly shown: ReadonlyArray<string>
  /** The secret values, in argv order. */
  readonly secrets: ReadonlyArray<ArgvSecret>
}

const canonical = (flags: FlagLookup, word: string) => {
  const head = word.includes("=") ? word.slice(0, word.indexOf("=")) : word
  return flags.spec(head)?.flag ?? head
}

/**
 * Split `argv` into the shown argv and its secrets (`--api-key K` and `--api-key=K` alike).
 *
 * @category redacting
 */
export const split = (argv: ReadonlyArray<string>, flags: FlagLookup = byName): SplitArgv => {
  const shown: Array<string> = []
  const secrets: Array<ArgvSecret> = []
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    if (!word.startsWith("--") || !isSecretFlag(word, flags)) {
      shown.push(word)
      continue
    }
    const flag = canonical(flags, word)
    const eq = word.indexOf("=")
    if (eq !== -1) {
      shown.push(`${word.slice(0, eq + 1)}${REDACTED}`)
      if (word.slice(eq + 1) !== REDACTED) secrets.push({ flag, value: word.slice(eq + 1) })
      continue
    }
    shown.push(word)
    const value = argv[i + 1]
    if (value === undefined) continue
    i++
    shown.push(REDACTED)
    if (value !== REDACTED) secrets.push({ flag, value })
  }
  return { shown, secrets }
}

/** The argv with every secret value shown as `***`. @category redacting */
export const redactArgv = (argv: ReadonlyArray<string>, flags: FlagLookup = byName): ReadonlyArray<string> =>
  split(argv, flags).shown

/**
 * Put the secret values back into a shown argv (the same argv, or one a fix changed): each
 * `***` of a secret flag gets the next value recorded for that flag.
 *
 * @category redacting
 */
export const reveal = (
  shown: ReadonlyArray<string>,
  secrets: ReadonlyArray<ArgvSecret>,
  flags: FlagLookup = byName
): ReadonlyArray<string> => {
  if (secrets.length === 0) return shown
  const left = new Map<string, Array<string>>()
  for (const s of secrets) left.set(s.flag, [...(left.get(s.flag) ?? []), s.value])
  const take = (word: string) => left.get(canonical(flags, word))?.shift()
  const out: Array<string> = []
  for (let i = 0; i < shown.length; i++) {
    const word = shown[i]!
    const eq = word.indexOf("=")
    if (word.startsWith("--") && eq !== -1 && word.slice(eq + 1) === REDACTED) {
      const value = take(word)
      out.push(value === undefined ? word : `${word.slice(0, eq + 1)}${value}`)
    } else if (word.startsWith("--") && shown[i + 1] === REDACTED && isSecretFlag(word, flags)) {
      out.push(word, take(word) ?? REDACTED)
      i++
    } else out.push(word)
  }
  return out
}

/**
 * Resolved args with every secret field (`api_key`, `admin_api_key`, ...) that holds a value
 * shown as `***`.
 *
 * @category redacting
 */
export const redactFields = <A extends object>(args: A, flags: FlagLookup = byName): A => {
  const out = Object.fromEntries(
    Object.entries(args).map(([field, value]) => {
      const secret = value !== null && value !== undefined && flags.field(field)?.secret === true
      return [field, secret ? REDACTED : value]
    })
  )
  // same keys; only text fields (secret flags take text) now hold "***"
  return out as A
}

/** Replace every occurrence of the given values in `text` with `***` (values shorter than 4 are left: too common to mean anything). @category redacting */
export const scrub = (text: string, values: Iterable<string>): string => {
  let out = text
  for (const value of values) if (value.length >= 4) out = out.split(value).join(REDACTED)
  return out
}

/** The values worth hiding from output: secret flags' values and secret-named environment values. @category redacting */
export const hiddenValues = (
  secrets: ReadonlyArray<ArgvSecret>,
  env: Readonly<Record<string, string>>
): ReadonlyArray<string> => [
  ...secrets.map((s) => s.value),
  ...Object.entries(env)
    .filter(([name]) => isSecretEnvName(name))
    .map(([, value]) => value)
]

/** `K=***` for every variable: what events, files and fixed commands show of an environment. @category redacting */
export const shownEnv = (env: Readonly<Record<string, string>>): ReadonlyArray<string> =>
  Object.keys(env)
    .sort()
    .map((name) => `${name}=${REDACTED}`)

/** A salted digest of the secret inputs of a launch (every env value, every secret flag value). @category models */
export interface Digest {
  readonly salt: string
  readonly sha256: string
}

const digestWith = (
  salt: string,
  env: Readonly<Record<string, string>>,
  secrets: ReadonlyArray<ArgvSecret>
): string =>
  createHash("sha256")
    .update(salt)
    .update(
      JSON.stringify([
        Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        [...secrets].map((s) => [s.flag, s.value]).sort()
      ])
    )
    .digest("hex")

/**
 * A digest of the environment values and secret flag values under a fresh random salt, so the
 * host can tell "the same secrets" without holding anything a dictionary attack could use.
 *
 * @category digests
 */
export const digest = (env: Readonly<Record<string, string>>, secrets: ReadonlyArray<ArgvSecret>): Digest => {
  const salt = randomBytes(16).toString("hex")
  return { salt, sha256: digestWith(salt, env, secrets) }
}

/** True when `env` and `secrets` are what `recorded` was made from. @category digests */
export const matches = (
  recorded: Digest,
  env: Readonly<Record<string, string>>,
  secrets: ReadonlyArray<ArgvSecret>
): boolean => digestWith(recorded.salt, env, secrets) === recorded.sha256
