/**
 * The manifest a synced directory keeps (`.mlops-sync.jsonl`, 0600): JSON Lines, a header
 * then one line per entry, sorted by path.
 *
 * ```
 * {"mlopsSync":1,"digest":"<sha256 of the local walk's listing>"}
 * ["f","src/train.py",1234,1712345678901.25,420,"<sha256 of the content>"]
 * ["l","data","../shared/data"]
 * ["d","src"]
 * ```
 *
 * The digest covers what the local walk sees without opening a file (each entry's path, kind,
 * size, mtime, mode, link target): the client computes it from a fresh walk and the host
 * answers `same` when its header line is the one expected, so an unchanged tree costs one
 * command. File lines keep the local size, mtime and mode of the last sync and the content's
 * SHA-256, so a file whose size and mtime are unchanged is not read, and one whose mtime
 * alone changed is hashed, not sent.
 *
 * @internal
 */
import { createHash } from "node:crypto"
import type { LocalEntry } from "./walk.js"

export const VERSION = 1

export type ManifestEntry =
  | {
      readonly kind: "file"
      readonly path: string
      readonly size: number
      readonly mtimeMs: number
      readonly mode: number
      readonly sha256: string
    }
  | { readonly kind: "link"; readonly path: string; readonly target: string }
  | { readonly kind: "dir"; readonly path: string }

/** The digest of a walk: what must be equal for "nothing changed". */
export const digestOf = (entries: ReadonlyArray<LocalEntry>): string => {
  const hash = createHash("sha256")
  hash.update(`mlops-sync ${VERSION}\n`)
  for (const e of entries) {
    if (e.kind === "file") hash.update(`f\0${e.path}\0${e.size}\0${e.mtimeMs}\0${e.mode}\n`)
    else if (e.kind === "link") hash.update(`l\0${e.path}\0${e.target}\n`)
    else hash.update(`d\0${e.path}\n`)
  }
  return hash.digest("hex")
}

/** The header line (without newline) for a walk's digest. */
export const headerLine = (digest: string): string => JSON.stringify({ mlopsSync: VERSION, digest })

const line = (e: ManifestEntry): string =>
  JSON.stringify(
    e.kind === "file"
      ? ["f", e.path, e.size, e.mtimeMs, e.mode, e.sha256]
      : e.kind === "link"
        ? ["l", e.path, e.target]
        : ["d", e.path]
  )

export const encode = (header: string, entries: ReadonlyArray<ManifestEntry>): string =>
  `${header}\n${entries.map((e) => `${line(e)}\n`).join("")}`

/** A relative path that stays inside the directory (a manifest's paths are removed with `rm -rf`). */
export const isSafePath = (path: string): boolean =>
  path !== "" &&
  !path.includes("\n") &&
  path.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..")

const entryOf = (value: unknown): ManifestEntry | undefined => {
  if (!Array.isArray(value) || typeof value[1] !== "string" || !isSafePath(value[1])) return undefined
  const [kind, path] = value as [unknown, string]
  if (kind === "d" && value.length === 2) return { kind: "dir", path }
  if (kind === "l" && value.length === 3 && typeof value[2] === "string")
    return { kind: "link", path, target: value[2] }
  if (
    kind === "f" &&
    value.length === 6 &&
    typeof value[2] === "number" &&
    typeof value[3] === "number" &&
    typeof value[4] === "number" &&
    typeof value[5] === "string"
  )
    return { kind: "file", path, size: value[2], mtimeMs: value[3], mode: value[4], sha256: value[5] }
  return undefined
}

/**
 * A manifest's entries. `complete` is false when the header is not one this version wrote or
 * a line is unreadable: then only the paths can be used (to delete), not the hashes.
 */
export const decode = (
  text: string
): { readonly entries: ReadonlyArray<ManifestEntry>; readonly complete: boolean } => {
  const lines = text.split("\n")
  let complete = true
  try {
    const header: unknown = JSON.parse(lines[0] ?? "")
    if ((header as { readonly mlopsSync?: unknown } | null)?.mlopsSync !== VERSION) complete = false
  } catch {
    complete = false
  }
  const entries: Array<ManifestEntry> = []
  for (const raw of lines.slice(1)) {
    if (raw === "") continue
    let entry: ManifestEntry | undefined
    try {
      entry = entryOf(JSON.parse(raw))
    } catch {
      entry = undefined
    }
    if (entry === undefined) complete = false
    else entries.push(entry)
  }
  return { entries, complete }
}
