/**
 * The mlops hosts file (`$MLOPS_HOME/hosts.json`): schema and loading. Problems are reported
 * the way a person fixes them: the file, the host entry and the field, what was expected and
 * what was found (not a dump of the schema).
 *
 * @internal
 */

import { Effect, Either, ParseResult, Schema } from "effect"
import * as ContainerSettings from "../ContainerSettings.js"
import { ConfigFileError } from "../Errors.js"
import { readTextIfExists } from "../LocalFiles.js"
import { SlurmSettings } from "../SlurmSettings.js"
import { slurmFieldProblem } from "./slurmHostEntry.js"

/** A directory on the host: absolute or `~/`-relative (a relative path would depend on the login directory). @internal */
export const StateDir = Schema.String.pipe(
  Schema.filter((dir) => /^(?:\/|~\/|~$)/.test(dir) || "an absolute path or one starting with ~/", {
    identifier: "StateDir"
  })
)

/** Each field: its schema and, in words, what it must be. */
const FIELDS = {
  python: { schema: Schema.String, expected: "a path (a venv/conda prefix or an interpreter)" },
  stateDir: { schema: StateDir, expected: "an absolute path or one starting with ~/" },
  tags: { schema: Schema.Array(Schema.String), expected: "a list of strings" },
  hostname: { schema: Schema.NonEmptyTrimmedString, expected: "a host name or address" },
  user: { schema: Schema.NonEmptyTrimmedString, expected: "a user name" },
  port: { schema: Schema.Int.pipe(Schema.between(1, 65535)), expected: "an integer from 1 to 65535" },
  identityFile: {
    schema: Schema.Union(Schema.String, Schema.Array(Schema.String)),
    expected: "a key file path, or a list of them"
  },
  /** Makes the host a Slurm cluster's login node; checked field by field (slurmHostEntry). */
  slurm: { schema: SlurmSettings, expected: "an object of Slurm settings" },
  /** The container fields: the image every launch runs from, the tool, the pull policy, shared memory. */
  image: { schema: ContainerSettings.ImageRef, expected: ContainerSettings.expected.image },
  runtime: { schema: ContainerSettings.ContainerTool, expected: ContainerSettings.expected.runtime },
  pull: { schema: ContainerSettings.PullPolicy, expected: ContainerSettings.expected.pull },
  shm: { schema: ContainerSettings.ShmSetting, expected: ContainerSettings.expected.shm }
} as const

/** @internal */
export const HostEntry = Schema.Struct({
  python: Schema.optional(FIELDS.python.schema),
  stateDir: Schema.optional(FIELDS.stateDir.schema),
  tags: Schema.optional(FIELDS.tags.schema),
  hostname: Schema.optional(FIELDS.hostname.schema),
  user: Schema.optional(FIELDS.user.schema),
  port: Schema.optional(FIELDS.port.schema),
  identityFile: Schema.optional(FIELDS.identityFile.schema),
  slurm: Schema.optional(FIELDS.slurm.schema),
  image: Schema.optional(FIELDS.image.schema),
  runtime: Schema.optional(FIELDS.runtime.schema),
  pull: Schema.optional(FIELDS.pull.schema),
  shm: Schema.optional(FIELDS.shm.schema)
})

/** @internal */
export const HostsFile = Schema.Struct({
  hosts: Schema.Record({ key: Schema.String, value: HostEntry })
})

/** @internal */
export type HostEntry = typeof HostEntry.Type

const EXAMPLE = `{"hosts": {"<alias>": {"python": "/path/to/venv", "stateDir": "~/.mlops", "tags": ["..."]}}}`

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const shown = (value: unknown): string => {
  const text = JSON.stringify(value)
  return text === undefined ? String(value) : text.length > 60 ? `${text.slice(0, 57)}...` : text
}

/** Levenshtein distance, for "did you mean". */
const distance = (a: string, b: string): number => {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1))
      previous = current
    }
  }
  return row[b.length]!
}

const suggestion = (name: string, known: ReadonlyArray<string> = Object.keys(FIELDS)): string | undefined =>
  known
    .map((known) => [known, distance(name.toLowerCase(), known.toLowerCase())] as const)
    .filter(([, d]) => d <= 2)
    .sort((x, y) => x[1] - y[1])[0]?.[0]

/** The first problem of one host entry, or its decoded value. */
const decodeEntry = (
  path: string,
  alias: string,
  value: unknown
): Either.Either<HostEntry, ConfigFileError> => {
  const error = (field: string | undefined, reason: string, fix: string) =>
    Either.left(
      new ConfigFileError({ path, host: alias, ...(field === undefined ? {} : { field }), reason, fix })
    )
  if (!isObject(value))
    return error(
      undefined,
      `host "${alias}" must be an object of settings, got ${shown(value)}`,
      `e.g. ${EXAMPLE}`
    )
  for (const [field, fieldValue] of Object.entries(value)) {
    const known = FIELDS[field as keyof typeof FIELDS]
    if (known === undefined) {
      const near = suggestion(field)
      return error(
        field,
        `host "${alias}": unknown field "${field}"`,
        near === undefined
          ? `the fields are ${Object.keys(FIELDS).join(", ")}`
          : `did you mean "${near}"? (the fields are ${Object.keys(FIELDS).join(", ")})`
      )
    }
    if (field === "slurm") {
      const problem = slurmFieldProblem(alias, fieldValue, suggestion)
      if (problem !== undefined) return error(problem.field, problem.reason, problem.fix)
      continue
    }
    const decoded = Schema.decodeUnknownEither(known.schema as Schema.Schema<unknown>)(fieldValue)
    if (Either.isLeft(decoded)) {
      return error(
        field,
        `host "${alias}", field "${field}": expected ${known.expected}, got ${shown(fieldValue)}`,
        `set "${field}" of "${alias}" to ${known.expected}`
      )
    }
  }
  return Either.mapLeft(
    Schema.decodeUnknownEither(HostEntry)(value),
    (issue) =>
      new ConfigFileError({
        path,
        host: alias,
        reason: `host "${alias}": ${ParseResult.TreeFormatter.formatErrorSync(issue)}`
      })
  )
}

/** The entries of a hosts file's text, or the first problem (file, host, field). @internal */
export const decode = (
  path: string,
  text: string
): Either.Either<ReadonlyMap<string, HostEntry>, ConfigFileError> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause)
    const position = /position (\d+)/.exec(message)
    const line = position === null ? undefined : text.slice(0, Number(position[1])).split("\n").length
    return Either.left(
      new ConfigFileError({
        path,
        reason: `not valid JSON: ${message}`,
        fix: `the file holds ${EXAMPLE}`,
        ...(line === undefined ? {} : { line })
      })
    )
  }
  const top = (reason: string, field?: string) =>
    Either.left(
      new ConfigFileError({
        path,
        reason,
        fix: `the file holds ${EXAMPLE}`,
        ...(field === undefined ? {} : { field })
      })
    )
  if (!isObject(json)) return top(`expected a JSON object with "hosts", got ${shown(json)}`)
  const extra = Object.keys(json).find((key) => key !== "hosts" && key !== "groups")
  if (extra !== undefined)
    return top(`unknown top-level field "${extra}" (only "hosts" and "groups" are read)`, extra)
  if (!("hosts" in json)) return top(`no "hosts" field`, "hosts")
  if (!isObject(json.hosts))
    return top(`"hosts" must be an object of host entries, got ${shown(json.hosts)}`, "hosts")
  const entries = new Map<string, HostEntry>()
  for (const [alias, value] of Object.entries(json.hosts)) {
    const entry = decodeEntry(path, alias, value)
    if (Either.isLeft(entry)) return Either.left(entry.left)
    entries.set(alias, entry.right)
  }
  return Either.right(entries)
}

/**
 * The named groups of a hosts file's text (`"groups": { "pair": ["node-a", "node-b"] }`: the
 * hosts of one deployment across several, rank 0's first), or the first problem. A group needs
 * two hosts or more, each once, and a name no host has (a name means one thing). @internal
 */
export const decodeGroups = (
  path: string,
  text: string
): Either.Either<ReadonlyMap<string, ReadonlyArray<string>>, ConfigFileError> => {
  const problem = (reason: string) =>
    Either.left(
      new ConfigFileError({
        path,
        reason,
        field: "groups",
        fix: `"groups" holds {"<name>": ["<rank 0's host>", "<another host>", ...]}`
      })
    )
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return Either.right(new Map())
  }
  if (!isObject(json) || json.groups === undefined) return Either.right(new Map())
  if (!isObject(json.groups))
    return problem(`"groups" must be an object of named host lists, got ${shown(json.groups)}`)
  const hosts = isObject(json.hosts) ? json.hosts : {}
  const groups = new Map<string, ReadonlyArray<string>>()
  for (const [name, members] of Object.entries(json.groups)) {
    if (!Array.isArray(members) || !members.every((m) => typeof m === "string" && m.trim() !== ""))
      return problem(`group "${name}" must be a list of host aliases, got ${shown(members)}`)
    const list = members as ReadonlyArray<string>
    if (list.length < 2)
      return problem(`group "${name}" has ${list.length} host(s): a group is two hosts or more`)
    const twice = list.find((m, i) => list.indexOf(m) !== i)
    if (twice !== undefined)
      return problem(`group "${name}" names ${twice} twice: one rank runs on each host`)
    if (name in hosts) return problem(`group "${name}" has the name of a host: give it another name`)
    groups.set(name, list)
  }
  return Either.right(groups)
}

/** The named groups of the hosts file (none when there is no file). @internal */
export const loadGroups = (
  path: string
): Effect.Effect<ReadonlyMap<string, ReadonlyArray<string>>, ConfigFileError> =>
  Effect.flatMap(
    readTextIfExists(path),
    (text): Effect.Effect<ReadonlyMap<string, ReadonlyArray<string>>, ConfigFileError> =>
      text === undefined
        ? Effect.succeed(new Map())
        : Either.match(decodeGroups(path, text), { onLeft: Effect.fail, onRight: Effect.succeed })
  )

/** Missing file = no entries; unreadable, invalid JSON or a bad entry = ConfigFileError. @internal */
export const load = (path: string): Effect.Effect<ReadonlyMap<string, HostEntry>, ConfigFileError> =>
  Effect.flatMap(
    readTextIfExists(path),
    (text): Effect.Effect<ReadonlyMap<string, HostEntry>, ConfigFileError> =>
      text === undefined
        ? Effect.succeed(new Map())
        : Either.match(decode(path, text), { onLeft: Effect.fail, onRight: Effect.succeed })
  )
