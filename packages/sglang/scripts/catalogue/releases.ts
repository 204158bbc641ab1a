/**
 * The release catalogues as differences: each release's flags (read from the reference data
 * `versions/args-<version>.json` through the same argparse reading the host dump uses) written
 * against its neighbour on the way to the base release, and checked: applying every diff
 * reproduces every release's flags exactly, in order. Used by `../generate-catalogue.ts`.
 */
import { isDeepStrictEqual } from "node:util"
import { Schema } from "effect"
import type { FlagSpec } from "../../src/Catalogue.js"
import { type ParserAction, toFlag } from "../../src/internal/catalogue/fromParser.js"
import {
  apply,
  changeableKeys,
  type FlagChange,
  type FlagRecord,
  type Placement,
  type ReleaseDiff
} from "../../src/internal/catalogue/release.js"

/** One flag as the reference data records it. */
export const DataFlag = Schema.Struct({
  flag: Schema.String,
  field: Schema.NullOr(Schema.String),
  dest: Schema.String,
  aliases: Schema.Array(Schema.String),
  negative_flags: Schema.Array(Schema.String),
  type: Schema.String,
  type_fn: Schema.NullOr(Schema.String),
  action: Schema.String,
  nargs: Schema.NullOr(Schema.Union(Schema.Number, Schema.String)),
  const: Schema.Unknown,
  default: Schema.Unknown,
  default_suppressed: Schema.Boolean,
  choices: Schema.NullOr(Schema.Array(Schema.Union(Schema.String, Schema.Number))),
  required: Schema.Boolean,
  deprecated: Schema.Boolean,
  replaced_by: Schema.NullOr(Schema.String),
  hidden: Schema.Boolean
})
export type DataFlag = typeof DataFlag.Type

/** One entry of `versions/index.json`. */
export const IndexEntry = Schema.Struct({
  version: Schema.String,
  commit: Schema.String,
  date: Schema.String,
  flags: Schema.Number,
  release_point: Schema.String,
  server_args_blob: Schema.String,
  repo: Schema.String
})
export type IndexEntry = typeof IndexEntry.Type

export const toAction = (flag: DataFlag): ParserAction => ({
  option_strings: [flag.flag, ...flag.aliases, ...flag.negative_flags],
  dest: flag.dest,
  action: flag.action,
  type_fn: flag.type_fn,
  nargs: flag.nargs,
  const: flag.const,
  default: flag.default,
  default_suppressed: flag.default_suppressed,
  choices: flag.choices,
  required: flag.required,
  deprecated: flag.deprecated,
  replaced_by: flag.replaced_by,
  hidden: flag.hidden
})

/** Where our reading of the data disagrees with the data's own classification. */
export const disagreements = (version: string, flags: ReadonlyArray<DataFlag>): ReadonlyArray<string> =>
  flags.flatMap((flag) => {
    const parsed = toFlag(toAction(flag), flag.field)
    const expected =
      flag.type === "custom" || (flag.type === "bool" && flag.action === "store") ? "str" : flag.type
    const problems: Array<string> = []
    if (parsed.flag !== flag.flag) problems.push(`primary ${parsed.flag} != ${flag.flag}`)
    if (parsed.type !== expected) problems.push(`type ${parsed.type} != ${flag.type}`)
    return problems.map((p) => `${version} ${flag.flag}: ${p}`)
  })

type Words = Pick<FlagSpec, "section" | "summary" | "autoResolution" | "notes">

/** A release's flags; our words (summary, section, notes) from `neighbour` or `base` when the flag is there. */
export const releaseFlags = (
  flags: ReadonlyArray<DataFlag>,
  neighbour: ReadonlyMap<string, FlagSpec>,
  base: ReadonlyMap<string, FlagSpec>
): ReadonlyArray<FlagSpec> =>
  flags.map((flag) => {
    const { note, ...parsed } = toFlag(toAction(flag), flag.field)
    const known: Words | undefined = neighbour.get(parsed.flag) ?? base.get(parsed.flag)
    const notes = note ?? known?.notes
    return {
      ...parsed,
      section: known?.section ?? "",
      summary: known?.summary ?? "",
      autoResolution: known?.autoResolution ?? null,
      ...(notes === undefined ? {} : { notes })
    }
  })

const ordinary: Record<string, unknown> = {
  aliases: [],
  default: null,
  choices: null,
  nargs: null,
  deprecated: false,
  negatable: false,
  section: "",
  summary: "",
  autoResolution: null
}

/** Only what differs from an ordinary flag. */
const compact = (spec: FlagSpec): FlagRecord =>
  Object.fromEntries(
    Object.entries(spec).filter(
      ([key, value]) => !(key in ordinary && isDeepStrictEqual(ordinary[key], value))
    )
  ) as unknown as FlagRecord

/** The longest common subsequence of two flag orders (the flags that need not move). */
const keptInOrder = (from: ReadonlyArray<string>, to: ReadonlyArray<string>): ReadonlySet<string> => {
  const n = from.length
  const m = to.length
  const table = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0))
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      table[i]![j] =
        from[i] === to[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!)
  const kept = new Set<string>()
  for (let i = 0, j = 0; i < n && j < m; ) {
    if (from[i] === to[j]) {
      kept.add(from[i]!)
      i++
      j++
    } else if (table[i + 1]![j]! >= table[i]![j + 1]!) i++
    else j++
  }
  return kept
}

/** `to` written against `from`; throws when applying it does not give `to` back. */
export const diffOf = (
  fromVersion: string,
  from: ReadonlyArray<FlagSpec>,
  to: ReadonlyArray<FlagSpec>
): ReleaseDiff => {
  const before = new Map(from.map((s) => [s.flag, s]))
  const after = new Set(to.map((s) => s.flag))
  const common = to.filter((s) => before.has(s.flag)).map((s) => s.flag)
  const kept = keptInOrder(
    from.map((s) => s.flag).filter((f) => after.has(f)),
    common
  )
  const placeAfter = (index: number) => (index === 0 ? null : to[index - 1]!.flag)
  const changed: Array<FlagChange> = []
  for (const spec of to) {
    const old = before.get(spec.flag)
    if (old === undefined) continue
    const change: Record<string, unknown> = {}
    for (const key of changeableKeys) {
      const a = (old as unknown as Record<string, unknown>)[key]
      const b = (spec as unknown as Record<string, unknown>)[key]
      if (!isDeepStrictEqual(a, b)) change[key] = b === undefined ? null : b
    }
    if (Object.keys(change).length > 0) changed.push({ flag: spec.flag, ...change })
  }
  const diff: ReleaseDiff = {
    from: fromVersion,
    removed: from.filter((s) => !after.has(s.flag)).map((s) => s.flag),
    added: to.flatMap((spec, i) =>
      before.has(spec.flag) ? [] : [{ ...compact(spec), after: placeAfter(i) }]
    ),
    changed,
    moved: to.flatMap(
      (spec, i): Array<Placement> =>
        before.has(spec.flag) && !kept.has(spec.flag) ? [{ flag: spec.flag, after: placeAfter(i) }] : []
    )
  }
  if (!isDeepStrictEqual(apply(from, diff), to)) {
    throw new Error(`the diff ${fromVersion} -> ${to.length} flags does not reproduce the release`)
  }
  return diff
}

/** `0.5.6.post2` → `v0_5_6_post2`, `main-2026-05-19` → `main_2026_05_19`. */
export const moduleNameOf = (version: string): string =>
  (/^\d/.test(version) ? `v${version}` : version).replace(/[.-]/g, "_")

const lit = (value: unknown) => JSON.stringify(value)

/** One release module's text (before formatting). */
export const renderRelease = (entry: IndexEntry, diff: ReleaseDiff): string =>
  [
    "/**",
    ` * SGLang ${entry.version} launch_server flags (${entry.flags}): those of ${diff.from} with the`,
    ` * differences below (commit ${entry.commit.slice(0, 12)}, ${entry.date.slice(0, 10)}, release point`,
    ` * ${entry.release_point}). Generated by packages/sglang/scripts/generate-catalogue.ts from`,
    " * the reference release data; do not edit.",
    " */",
    'import type { ReleaseDiff } from "../release.js"',
    "",
    `export const diff: ReleaseDiff = ${lit(diff)}`,
    ""
  ].join("\n")

/** The registry of every release, in release order, with the modules' diffs. */
export const renderIndex = (entries: ReadonlyArray<IndexEntry>, base: string): string => {
  const others = entries.filter((e) => e.version !== base)
  return [
    "/**",
    ` * Every SGLang release with a shipped catalogue, oldest first: ${base} in full (../v${base.replaceAll(".", "_")}.ts),`,
    " * the others as differences. Generated by packages/sglang/scripts/generate-catalogue.ts; do not edit.",
    " */",
    'import type { ReleaseInfo } from "../release.js"',
    ...others.map(
      (e) => `import { diff as ${moduleNameOf(e.version)} } from "./${moduleNameOf(e.version)}.js"`
    ),
    "",
    "export const releases: ReadonlyArray<ReleaseInfo> = [",
    entries
      .map(
        (e) =>
          `  { version: ${lit(e.version)}, commit: ${lit(e.commit)}, date: ${lit(e.date.slice(0, 10))}, releasePoint: ${lit(e.release_point)}, flagCount: ${e.flags}, diff: ${e.version === base ? "null" : moduleNameOf(e.version)} }`
      )
      .join(",\n"),
    "]",
    ""
  ].join("\n")
}
