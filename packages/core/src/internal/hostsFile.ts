/**
 * The mlops hosts file (`$MLOPS_HOME/hosts.json`): schema and loading.
 *
 * @internal
 */

import { Effect, Either, ParseResult, Schema } from "effect"
import { ConfigFileError } from "../Errors.js"
import { readTextIfExists } from "../LocalFiles.js"

/** A directory on the host: absolute or `~/`-relative (a relative path would depend on the login directory). @internal */
export const StateDir = Schema.String.pipe(
  Schema.filter((dir) => /^(?:\/|~\/|~$)/.test(dir) || "an absolute path or one starting with ~/", {
    identifier: "StateDir"
  })
)

/** @internal */
export const HostEntry = Schema.Struct({
  python: Schema.optional(Schema.String),
  stateDir: Schema.optional(StateDir),
  tags: Schema.optional(Schema.Array(Schema.String)),
  hostname: Schema.optional(Schema.NonEmptyTrimmedString),
  user: Schema.optional(Schema.NonEmptyTrimmedString),
  port: Schema.optional(Schema.Int.pipe(Schema.between(1, 65535))),
  identityFile: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String)))
})

/** @internal */
export const HostsFile = Schema.Struct({
  hosts: Schema.Record({ key: Schema.String, value: HostEntry })
})

/** @internal */
export type HostEntry = typeof HostEntry.Type

const decode = Schema.decodeUnknownEither(Schema.parseJson(HostsFile), { onExcessProperty: "error" })

/** Missing file = no entries; unreadable, invalid JSON or a schema violation = ConfigFileError. @internal */
export const load = (path: string): Effect.Effect<ReadonlyMap<string, HostEntry>, ConfigFileError> =>
  Effect.gen(function* () {
    const text = yield* readTextIfExists(path)
    if (text === undefined) return new Map()
    const decoded = decode(text)
    if (Either.isLeft(decoded)) {
      return yield* new ConfigFileError({
        path,
        reason: `not a valid mlops hosts file: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`,
        fix: `expected {"hosts": {"<alias>": {"python": "/path/to/venv", "tags": ["..."]}}}`
      })
    }
    return new Map(Object.entries(decoded.right.hosts))
  })
