/**
 * The flags of `vllm serve` at three points of vLLM's main branch (near 0.11, 0.13 and 0.21),
 * generated from dumps of the real parser by `scripts/generate-catalogue.ts`: the newest in
 * full, each older one as its difference from the next newer one.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import * as Generated from "./internal/catalogue/index.js"
import { type FlagRecord, rebuild, type SnapshotInfo } from "./internal/catalogue/snapshot.js"

/** @category models */
export type Flag = FlagRecord

/** @category models */
export type Snapshot = SnapshotInfo

/** @category models */
export interface Catalogue {
  readonly snapshot: Snapshot
  /** Every flag in the order `vllm serve --help=all` builds them. */
  readonly flags: ReadonlyArray<Flag>
  /** Every accepted spelling (canonical, short, `--no-x`) → its flag. */
  readonly bySpelling: ReadonlyMap<string, Flag>
  /** dest → its flag. */
  readonly byDest: ReadonlyMap<string, Flag>
}

/** The `--no-x` spelling of a toggle. @category models */
export const negationOf = (flag: Flag): string => `--no-${flag.flag.slice(2)}`

const build = (snapshot: Snapshot, flags: ReadonlyArray<Flag>): Catalogue => {
  const bySpelling = new Map<string, Flag>()
  const byDest = new Map<string, Flag>()
  for (const flag of flags) {
    for (const spelling of [flag.flag, ...flag.short]) bySpelling.set(spelling, flag)
    if (flag.arity === "toggle") bySpelling.set(negationOf(flag), flag)
    byDest.set(flag.dest, flag)
  }
  return { snapshot, flags, bySpelling, byDest }
}

/**
 * A catalogue of flags read from an install's own parser (`HostFlags`): its snapshot is named
 * after the version (`host-0.26.0`).
 *
 * @category constructors
 */
export const fromInstall = (version: string, flags: ReadonlyArray<Flag>): Catalogue =>
  build({ name: `host-${version}`, commit: "", date: "", near: version }, flags)

const { base, deltas } = Generated

/** Every shipped snapshot, oldest first. @category catalogues */
export const snapshots: ReadonlyArray<Snapshot> = [
  ...deltas.map(({ dropped: _d, put: _p, ...info }) => info),
  base.info
]

/** The newest shipped snapshot (main 2026-05-19, near 0.21). @category catalogues */
export const latest: Catalogue = build(base.info, base.flags)

const built = new Map<string, Catalogue>([[latest.snapshot.name, latest]])

/** The catalogue of a shipped snapshot by name (`main-2025-12-16`). @category catalogues */
export const byName = (name: string): Catalogue | undefined => {
  const cached = built.get(name)
  if (cached !== undefined) return cached
  const at = deltas.findIndex((d) => d.name === name)
  if (at === -1) return undefined
  const delta = deltas[at]!
  // each delta is written against the next newer snapshot
  const newer = at + 1 < deltas.length ? byName(deltas[at + 1]!.name)! : latest
  const { dropped: _d, put: _p, ...info } = delta
  const catalogue = build(info, rebuild(newer.flags, delta))
  built.set(name, catalogue)
  return catalogue
}

/** `0.13.0` → [0, 13]; undefined when it is not a version. */
const minorOf = (version: string): readonly [number, number] | undefined => {
  const m = /^v?(\d+)\.(\d+)/.exec(version.trim())
  return m === null ? undefined : [Number(m[1]), Number(m[2])]
}

/** @category models */
export interface CatalogueChoice {
  readonly catalogue: Catalogue
  /** Set when the snapshot is not near this version: what stands in, naming both. */
  readonly warning: string | null
}

/** Not a vLLM version (`latest`, ``). @category errors */
export class UnknownVllmVersion extends Schema.TaggedError<UnknownVllmVersion>()("UnknownVllmVersion", {
  version: Schema.String,
  snapshots: Schema.Array(Schema.String)
}) {
  override get message() {
    return `${JSON.stringify(this.version)} is not a vLLM version; give one such as 0.13.0 (mlops ships flags for ${this.snapshots.join(", ")})`
  }
}

/**
 * The catalogue for an installed vLLM version: the newest snapshot near or below it (the oldest
 * for an older version), warning unless it is near that minor release; undefined for a string
 * that is not a version.
 *
 * @category catalogues
 */
export const choose = (version: string): CatalogueChoice | undefined => {
  const wanted = minorOf(version)
  if (wanted === undefined) return undefined
  const key = ([major, minor]: readonly [number, number]) => major * 1000 + minor
  const below = snapshots.filter((s) => key(minorOf(s.near)!) <= key(wanted))
  const chosen = below.at(-1) ?? snapshots[0]!
  const near = key(minorOf(chosen.near)!) === key(wanted)
  return {
    catalogue: byName(chosen.name)!,
    warning: near
      ? null
      : `mlops ships no vLLM flags for ${version}; using ${chosen.name} (near ${chosen.near}): flags added or removed since are not known`
  }
}

/** `choose`, failing for a string that is not a version. @category catalogues */
export const forVersion = (version: string): Effect.Effect<CatalogueChoice, UnknownVllmVersion> => {
  const chosen = choose(version)
  return chosen !== undefined
    ? Effect.succeed(chosen)
    : Effect.fail(
        new UnknownVllmVersion({ version, snapshots: snapshots.map((s) => `${s.name} (≈${s.near})`) })
      )
}
