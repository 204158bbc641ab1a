/**
 * Flags across releases: which shipped releases accept a spelling, and a catalogue's flags
 * listed with their type, default, choices and those releases (what `mlops flags` prints).
 *
 * @since 0.1.0
 */
import * as Catalogue from "./Catalogue.js"

let presence: ReadonlyMap<string, ReadonlyArray<string>> | undefined

/** Spelling → the shipped releases that accept it (as a flag or an alias), oldest first. */
const presenceMap = (): ReadonlyMap<string, ReadonlyArray<string>> => {
  if (presence !== undefined) return presence
  const map = new Map<string, Array<string>>()
  for (const release of Catalogue.releases) {
    for (const spelling of Catalogue.get(release.version)!.byFlag.keys()) {
      const list = map.get(spelling)
      if (list === undefined) map.set(spelling, [release.version])
      else list.push(release.version)
    }
  }
  presence = map
  return map
}

/**
 * The shipped releases that accept this spelling (`--tp-size`, an alias, a `--no-` form),
 * oldest first; empty when none does.
 *
 * @category history
 */
export const releasesWith = (spelling: string): ReadonlyArray<string> => presenceMap().get(spelling) ?? []

/**
 * Releases as runs of consecutive shipped releases: `0.4.0–0.5.15, main-2026-07-20`.
 *
 * @category formatting
 */
export const formatReleases = (versions: ReadonlyArray<string>): string => {
  const order = Catalogue.releases.map((r) => r.version)
  const have = new Set(versions)
  const runs: Array<string> = []
  let start: string | undefined
  let last: string | undefined
  for (const version of order) {
    if (have.has(version)) {
      start ??= version
      last = version
    } else if (start !== undefined) {
      runs.push(start === last ? start : `${start}–${last}`)
      start = undefined
    }
  }
  if (start !== undefined) runs.push(start === last ? start : `${start}–${last}`)
  return runs.join(", ")
}

/** One flag as `mlops flags` shows it. @category models */
export interface FlagInfo {
  readonly flag: string
  readonly aliases: ReadonlyArray<string>
  readonly field: string | null
  readonly type: Catalogue.FlagType
  readonly default: unknown
  readonly choices: ReadonlyArray<string | number> | null
  readonly deprecated: boolean
  readonly replacedBy: string | null
  readonly summary: string
  /** Shipped releases that have this flag (its canonical spelling), oldest first. */
  readonly releases: ReadonlyArray<string>
}

/**
 * A catalogue's flags whose spelling, field or summary contains `query` (case-insensitive; all
 * when empty), in `add_cli_args` order.
 *
 * @category listing
 */
export const list = (catalogue: Catalogue.Catalogue, query = ""): ReadonlyArray<FlagInfo> => {
  const needle = query.toLowerCase().replace(/^-+/, "")
  return catalogue.flags
    .filter(
      (spec) =>
        needle === "" ||
        [spec.flag, ...spec.aliases, spec.field ?? "", spec.summary].some((text) =>
          text.toLowerCase().includes(needle)
        )
    )
    .map((spec) => ({
      flag: spec.flag,
      aliases: spec.aliases,
      field: spec.field,
      type: spec.type,
      default: spec.default,
      choices: spec.choices,
      deprecated: spec.deprecated,
      replacedBy: spec.replacedBy ?? null,
      summary: spec.summary,
      releases: releasesWith(spec.flag)
    }))
}

/**
 * Spellings that contain `query` and that other shipped releases accept but `catalogue` does
 * not (a flag that was removed, or is newer), with those releases.
 *
 * @category listing
 */
export const elsewhere = (
  catalogue: Catalogue.Catalogue,
  query: string
): ReadonlyArray<{ readonly flag: string; readonly releases: ReadonlyArray<string> }> => {
  const needle = query.toLowerCase().replace(/^-+/, "")
  if (needle === "") return []
  return [...presenceMap()]
    .filter(([spelling]) => spelling.toLowerCase().includes(needle) && !catalogue.byFlag.has(spelling))
    .map(([flag, releases]) => ({ flag, releases }))
}
