/**
 * The shipped releases in order, their flags built on first use (by applying the differences
 * outward from the base release, memoised), and where any version string sits among them.
 *
 * @internal
 */
import type { FlagSpec } from "../../Catalogue.js"
import * as SglangVersion from "../../SglangVersion.js"
import { apply, type ReleaseInfo } from "./release.js"
import { releases } from "./releases/index.js"
import { flags as baseFlags, version as baseVersion } from "./v0_5_11.js"

export { releases }

const indexOf = new Map(releases.map((r, i) => [r.version, i]))
const baseIndex = indexOf.get(baseVersion)!
const built = new Map<string, ReadonlyArray<FlagSpec>>([[baseVersion, baseFlags]])

/** The release named exactly so (after `SglangVersion.normalize`). */
export const find = (version: string): ReleaseInfo | undefined => {
  const i = indexOf.get(SglangVersion.normalize(version))
  return i === undefined ? undefined : releases[i]
}

/** The flags of a shipped release. */
export const flagsOf = (release: ReleaseInfo): ReadonlyArray<FlagSpec> => {
  const cached = built.get(release.version)
  if (cached !== undefined) return cached
  const i = indexOf.get(release.version)!
  const neighbour = releases[i > baseIndex ? i - 1 : i + 1]!
  const flags = apply(flagsOf(neighbour), release.diff!)
  built.set(release.version, flags)
  return flags
}

const isSnapshot = (r: ReleaseInfo) => SglangVersion.parse(r.version)?._tag === "Snapshot"

/**
 * Where a version sits among the shipped releases: its index when shipped, else a half-step
 * position. A release goes after the newest shipped release not above it and after the
 * snapshots of main that follow that one (a 0.5.12 comes after main-2026-05-19: the snapshot
 * was taken from the 0.5.12 line's main before the release); a snapshot goes by date.
 * Undefined for a string that is not a version.
 */
export const positionOf = (version: string): number | undefined => {
  const exact = indexOf.get(SglangVersion.normalize(version))
  if (exact !== undefined) return exact
  const parsed = SglangVersion.parse(version)
  if (parsed === undefined) return undefined
  let at = -1
  if (parsed._tag === "Snapshot") {
    releases.forEach((r, i) => {
      if (r.date <= parsed.date) at = i
    })
    return at + 0.5
  }
  releases.forEach((r, i) => {
    const other = SglangVersion.parse(r.version)
    if (other?._tag === "Release" && SglangVersion.compareReleases(other, parsed) <= 0) at = i
  })
  while (at + 1 < releases.length && isSnapshot(releases[at + 1]!)) at++
  return at + 0.5
}

/**
 * The shipped release (not a snapshot) closest below a version, or the oldest when the version
 * is older than all; undefined for a string that is not a version.
 */
export const nearestRelease = (version: string): ReleaseInfo | undefined => {
  const position = positionOf(version)
  if (position === undefined) return undefined
  const candidates = releases.filter((r) => !isSnapshot(r))
  const below = candidates.filter((r) => indexOf.get(r.version)! <= position)
  return below.at(-1) ?? candidates[0]
}
