/**
 * SGLang version strings as hosts report them (`0.5.11`, `v0.5.11`, `0.5.0rc2`, `0.5.6.post2`,
 * `0.5.12.dev3+g1a2b3c`) and the snapshots of main mlops ships catalogues for
 * (`main-2026-05-19`), parsed and ordered the way PEP 440 orders releases.
 *
 * @since 0.1.0
 */

/** @category models */
export interface Release {
  readonly _tag: "Release"
  readonly major: number
  readonly minor: number
  readonly patch: number
  /** `rc2` → ["rc", 2]; null for a final release. */
  readonly pre: readonly ["a" | "b" | "rc", number] | null
  readonly post: number | null
  readonly dev: number | null
  /** The part after `+` (a local build of the same release, e.g. `cu128`); null when absent. */
  readonly local: string | null
}

/** `main-YYYY-MM-DD`: SGLang's main branch on that date, not a release. @category models */
export interface Snapshot {
  readonly _tag: "Snapshot"
  readonly date: string
}

/** @category models */
export type Parsed = Release | Snapshot

const RELEASE =
  /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-_.]?(a|b|rc)(\d+))?(?:[-_.]?post(\d+))?(?:[-_.]?dev(\d+))?(?:\+([A-Za-z0-9.]+))?$/
const SNAPSHOT = /^main-(\d{4}-\d{2}-\d{2})$/

/** Parse a version; undefined when it is neither a release nor a snapshot name. @category parsing */
export const parse = (version: string): Parsed | undefined => {
  const text = version.trim()
  const snapshot = SNAPSHOT.exec(text)
  if (snapshot !== null) return { _tag: "Snapshot", date: snapshot[1]! }
  const m = RELEASE.exec(text)
  if (m === null) return undefined
  return {
    _tag: "Release",
    major: Number(m[1]),
    minor: Number(m[2]),
    patch: Number(m[3] ?? 0),
    pre: m[4] === undefined ? null : [m[4] as "a" | "b" | "rc", Number(m[5])],
    post: m[6] === undefined ? null : Number(m[6]),
    dev: m[7] === undefined ? null : Number(m[7]),
    local: m[8] ?? null
  }
}

/**
 * The name a catalogue would have: without a leading `v` or a local `+build` part (a local
 * build of a release has that release's parser), otherwise as given.
 *
 * @category parsing
 */
export const normalize = (version: string): string => {
  const parsed = parse(version)
  if (parsed === undefined || parsed._tag === "Snapshot") return version.trim()
  return version
    .trim()
    .replace(/^v/, "")
    .replace(/\+[A-Za-z0-9.]+$/, "")
}

const preRank = { a: 0, b: 1, rc: 2 } as const

/**
 * PEP 440 order of two releases: dev < pre-release < release < post-release; the local part
 * does not order.
 *
 * @category ordering
 */
export const compareReleases = (a: Release, b: Release): number => {
  const base = a.major - b.major || a.minor - b.minor || a.patch - b.patch
  if (base !== 0) return base
  // A key per release: [pre kind or 3 for none, pre number, post or -1, dev or +inf]; a bare dev
  // release (x.y.z.devN) sorts before every pre-release of x.y.z.
  const key = (r: Release): ReadonlyArray<number> => [
    r.pre === null ? (r.dev !== null && r.post === null ? -1 : 3) : preRank[r.pre[0]],
    r.pre?.[1] ?? 0,
    r.post ?? -1,
    r.dev ?? Number.POSITIVE_INFINITY
  ]
  const ka = key(a)
  const kb = key(b)
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1
  return 0
}

/** `0.5.11` for display (a release's numbers, pre, post and dev parts). @category formatting */
export const format = (parsed: Parsed): string => {
  if (parsed._tag === "Snapshot") return `main-${parsed.date}`
  const pre = parsed.pre === null ? "" : `${parsed.pre[0]}${parsed.pre[1]}`
  const post = parsed.post === null ? "" : `.post${parsed.post}`
  const dev = parsed.dev === null ? "" : `.dev${parsed.dev}`
  return `${parsed.major}.${parsed.minor}.${parsed.patch}${pre}${post}${dev}`
}
