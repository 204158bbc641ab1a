/**
 * Host flag dumps kept on this machine, one JSON file per install:
 * `<dir>/<host>/<version>-<sha256 of server_args.py, first 16>.json` (directories 0700, files
 * 0600, written atomically). A file that does not decode is a miss, so a bad entry is replaced by
 * the next dump instead of failing a launch.
 *
 * @internal
 */
import { mkdir, rename, writeFile } from "node:fs/promises"
import { join } from "node:path"
import * as LocalFiles from "@mlops/core/LocalFiles"
import { Effect, Option, Schema } from "effect"
import { ParserAction } from "../catalogue/fromParser.js"

/** What the dump script prints. */
export const Dump = Schema.Struct({
  sha256: Schema.String,
  fields: Schema.Array(Schema.String),
  actions: Schema.Array(ParserAction)
})
export type Dump = typeof Dump.Type

/** A cached dump with where it came from. */
export const Entry = Schema.Struct({
  format: Schema.Literal(1),
  host: Schema.String,
  version: Schema.String,
  python: Schema.String,
  createdAt: Schema.Number,
  dump: Dump
})
export type Entry = typeof Entry.Type

export interface Key {
  readonly host: string
  readonly version: string
  readonly sha256: string
}

const safe = (name: string) => name.replace(/[^A-Za-z0-9._-]/g, "_")

export const pathOf = (dir: string, key: Key): string =>
  join(dir, safe(key.host), `${safe(key.version)}-${key.sha256.slice(0, 16)}.json`)

const decodeEntry = Schema.decodeUnknownOption(Schema.parseJson(Entry))

/** The entry for this key, or undefined (missing, unreadable, corrupt, or for another hash). */
export const read = (dir: string, key: Key): Effect.Effect<Entry | undefined> =>
  LocalFiles.readTextIfExists(pathOf(dir, key)).pipe(
    Effect.map((text) => (text === undefined ? undefined : Option.getOrUndefined(decodeEntry(text)))),
    Effect.map((entry) => (entry !== undefined && entry.dump.sha256 === key.sha256 ? entry : undefined)),
    Effect.orElseSucceed(() => undefined)
  )

/** Store an entry; a failure to write only means the next run dumps again. */
export const write = (dir: string, entry: Entry): Effect.Effect<void> => {
  const path = pathOf(dir, { host: entry.host, version: entry.version, sha256: entry.dump.sha256 })
  const temp = `${path}.${process.pid}.tmp`
  return Effect.tryPromise(async () => {
    await mkdir(join(dir, safe(entry.host)), { recursive: true, mode: 0o700 })
    await writeFile(temp, JSON.stringify(entry), { mode: 0o600 })
    await rename(temp, path)
  }).pipe(Effect.ignore)
}
