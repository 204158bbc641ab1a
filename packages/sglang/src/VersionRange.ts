/**
 * The SGLang releases a launch rule holds for: a first and a last shipped release (or "still
 * there" in the newest source mlops read), and how that was checked against each release's own
 * source. Releases are ordered as the shipped catalogues are (`Catalogue.releases`); a version
 * that is not shipped sits between its neighbours.
 *
 * @since 0.1.0
 */
import * as Registry from "./internal/catalogue/registry.js"

/** @category models */
export interface VersionRange {
  /** The first shipped release where the rule holds as modelled. */
  readonly from: string
  /** The last one; null when it still holds in the newest source read (main-2026-07-20). */
  readonly through: string | null
  /** How the range was verified against the releases' own `server_args.py` (and what lies outside it). */
  readonly verified: string
}

/** @category constructors */
export const make = (from: string, through: string | null, verified: string): VersionRange => {
  if (Registry.find(from) === undefined) throw new Error(`VersionRange: ${from} is not a shipped release`)
  if (through !== null && Registry.find(through) === undefined)
    throw new Error(`VersionRange: ${through} is not a shipped release`)
  return { from, through, verified }
}

/** Whether `version` lies in the range (false for a string that is not a version). @category predicates */
export const contains = (range: VersionRange, version: string): boolean => {
  const at = Registry.positionOf(version)
  if (at === undefined) return false
  const from = Registry.positionOf(range.from)!
  const through = range.through === null ? Number.POSITIVE_INFINITY : Registry.positionOf(range.through)!
  return at >= from && at <= through
}

/** `version` is this release or a later one. @category predicates */
export const atLeast = (version: string, release: string): boolean =>
  (Registry.positionOf(version) ?? -1) >= Registry.positionOf(release)!

/** `0.5.9–0.5.13`; `0.5.11–main-2026-07-20` for a range still open at the newest release read. @category formatting */
export const format = (range: VersionRange): string =>
  range.through === null
    ? `${range.from}–${Registry.releases.at(-1)!.version}`
    : range.through === range.from
      ? range.from
      : `${range.from}–${range.through}`
