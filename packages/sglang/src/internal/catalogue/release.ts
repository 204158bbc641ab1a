/**
 * A release's flags written as the difference from a neighbouring release: the flags it lacks,
 * the flags it adds (compact records: only what differs from an ordinary flag), the argparse
 * facts that changed, and the flags that sit elsewhere in `add_cli_args`. `apply` turns the
 * neighbour's flags into this release's. Summaries and sections carry over from the neighbour
 * (they are ours, written for 0.5.11; argparse help is not kept).
 *
 * @internal
 */
import type { FlagSpec, FlagType } from "../../Catalogue.js"

/** A flag with the ordinary values left out (no aliases, default None, no choices, ...). */
export interface FlagRecord {
  readonly flag: string
  readonly field: string | null
  readonly type: FlagType
  readonly aliases?: ReadonlyArray<string>
  readonly default?: unknown
  readonly choices?: ReadonlyArray<string | number> | null
  readonly nargs?: "+" | "*" | "?" | null
  readonly deprecated?: boolean
  readonly negatable?: boolean
  readonly required?: boolean
  readonly humanReadable?: boolean
  readonly const?: unknown
  readonly hidden?: boolean
  readonly replacedBy?: string
  readonly notes?: string
  readonly section?: string
  readonly summary?: string
  readonly autoResolution?: string | null
}

/** The argparse facts of a flag that can change between releases (its name is the key). */
export const changeableKeys = [
  "field",
  "aliases",
  "type",
  "default",
  "choices",
  "nargs",
  "deprecated",
  "negatable",
  "required",
  "humanReadable",
  "const",
  "hidden",
  "replacedBy",
  "notes"
] as const

/** Keys that are absent on an ordinary flag: a change to `null` removes them. */
const optionalKeys: ReadonlySet<string> = new Set([
  "required",
  "humanReadable",
  "const",
  "hidden",
  "replacedBy",
  "notes"
])

/** What changed for one flag present in both releases: this release's values of those keys. */
export type FlagChange = { readonly flag: string } & {
  readonly [K in (typeof changeableKeys)[number]]?: FlagSpec[K] | null
}

/** A flag placed right after another one (null: first). */
export interface Placement {
  readonly flag: string
  readonly after: string | null
}

export interface ReleaseDiff {
  /** The release whose flags this one is written against. */
  readonly from: string
  readonly removed: ReadonlyArray<string>
  readonly added: ReadonlyArray<FlagRecord & { readonly after: string | null }>
  readonly changed: ReadonlyArray<FlagChange>
  readonly moved: ReadonlyArray<Placement>
}

/** A compact record as a full FlagSpec. */
export const expand = (record: FlagRecord): FlagSpec => {
  const {
    aliases,
    default: value,
    choices,
    nargs,
    deprecated,
    negatable,
    section,
    summary,
    autoResolution
  } = record
  return {
    ...record,
    aliases: aliases ?? [],
    default: value ?? null,
    choices: choices ?? null,
    nargs: nargs ?? null,
    deprecated: deprecated ?? false,
    negatable: negatable ?? false,
    section: section ?? "",
    summary: summary ?? "",
    autoResolution: autoResolution ?? null
  }
}

const applyChange = (spec: FlagSpec, change: FlagChange): FlagSpec => {
  const next: Record<string, unknown> = { ...spec }
  for (const [key, value] of Object.entries(change)) {
    if (key === "flag") continue
    if (value === null && optionalKeys.has(key)) delete next[key]
    else next[key] = value
  }
  return next as unknown as FlagSpec
}

/**
 * The flags of a release from its neighbour's and the difference. Placements are applied until
 * all are in (each names the flag before it in the release's own order, which may itself be
 * placed), so their order in the diff does not matter.
 */
export const apply = (from: ReadonlyArray<FlagSpec>, diff: ReleaseDiff): ReadonlyArray<FlagSpec> => {
  const removed = new Set([...diff.removed, ...diff.moved.map((m) => m.flag)])
  const changes = new Map(diff.changed.map((c) => [c.flag, c]))
  const kept = from.filter((spec) => !removed.has(spec.flag))
  const byFlag = new Map(from.map((spec) => [spec.flag, spec]))
  const result: Array<FlagSpec> = kept.map((spec) => {
    const change = changes.get(spec.flag)
    return change === undefined ? spec : applyChange(spec, change)
  })
  const pending: Array<{ readonly spec: FlagSpec; readonly after: string | null }> = [
    ...diff.moved.map((m) => {
      const spec = byFlag.get(m.flag)
      if (spec === undefined) throw new Error(`catalogue diff: moved flag ${m.flag} is not in ${diff.from}`)
      const change = changes.get(m.flag)
      return { spec: change === undefined ? spec : applyChange(spec, change), after: m.after }
    }),
    ...diff.added.map(({ after, ...record }) => ({ spec: expand(record), after }))
  ]
  while (pending.length > 0) {
    const before = pending.length
    for (let i = 0; i < pending.length; i++) {
      const { spec, after } = pending[i]!
      const at = after === null ? 0 : result.findIndex((s) => s.flag === after) + 1
      if (at === 0 && after !== null) continue
      result.splice(at, 0, spec)
      pending.splice(i--, 1)
    }
    if (pending.length === before) {
      throw new Error(`catalogue diff: cannot place ${pending.map((p) => p.spec.flag).join(", ")}`)
    }
  }
  return result
}

/** A release with a shipped catalogue. */
export interface ReleaseInfo {
  /** As SGLang reports it (`0.5.11`, `0.5.6.post2`), or `main-<date>` for a snapshot of main. */
  readonly version: string
  /** The source commit the flags were read from. */
  readonly commit: string
  /** Committer date of that commit, `YYYY-MM-DD`. */
  readonly date: string
  /**
   * How the commit was chosen: `version.py` (the version bump), `release_index_cut` /
   * `release_branch_cut` (the verified branch cut), `approx_cut` (approximate), `main_snapshot`.
   */
  readonly releasePoint: string
  readonly flagCount: number
  /** Null for the base release, whose catalogue is written in full. */
  readonly diff: ReleaseDiff | null
}
