/**
 * The flag catalogue of one SGLang version: every `launch_server` flag with its field, type,
 * default, choices and argparse shape. Each version is a generated data file in
 * `src/internal/catalogue/` (see `scripts/generate-catalogue.ts`); adding a version means adding
 * one such file and one line to `versions`.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import * as v0_5_11 from "./internal/catalogue/v0_5_11.js"

/**
 * How argparse converts a flag's value. `bool` flags take no value (store_true, deprecated no-ops,
 * BooleanOptionalAction); `str|null` is SGLang's `nullable_str` ("None" and "" give null).
 *
 * @category models
 */
export type FlagType =
  | "bool"
  | "str"
  | "str|null"
  | "int"
  | "float"
  | "list[str]"
  | "list[int]"
  | "list[float]"
  | "json"

/** @category models */
export interface FlagSpec {
  /** The canonical spelling (the one whose name matches the field), e.g. `--tp-size`. */
  readonly flag: string
  /** The ServerArgs field it writes; null for meta (`--config`) and deprecated no-op flags. */
  readonly field: string | null
  /** Other spellings of the same flag, e.g. `--tensor-parallel-size`. */
  readonly aliases: ReadonlyArray<string>
  readonly type: FlagType
  /** The value an omitted flag yields (argparse default, before SGLang's `__post_init__`). */
  readonly default: unknown
  readonly choices: ReadonlyArray<string | number> | null
  readonly nargs: "+" | "*" | "?" | null
  /** The comment section of `add_cli_args` the flag sits in. */
  readonly section: string
  readonly deprecated: boolean
  /** argparse BooleanOptionalAction: `--no-<name>` is accepted too. */
  readonly negatable: boolean
  readonly summary: string
  /** What SGLang computes when the default is left in place, in words. */
  readonly autoResolution: string | null
  /** Only `--model-path`. */
  readonly required?: boolean
  /** `human_readable_int`: accepts `32k`, `1M`, `128Ki`. */
  readonly humanReadable?: boolean
  /** The value of a bare `nargs="?"` flag. */
  readonly const?: unknown
  readonly notes?: string
}

/** @category models */
export interface Catalogue {
  readonly version: string
  /** Every flag, in `add_cli_args` order. */
  readonly flags: ReadonlyArray<FlagSpec>
  /** Every accepted spelling (canonical, aliases, `--no-<name>`) → its flag. */
  readonly byFlag: ReadonlyMap<string, FlagSpec>
  /** Field → the flag that writes it (the non-deprecated one when two do). */
  readonly byField: ReadonlyMap<string, FlagSpec>
}

/** The `--no-<name>` spelling of a negatable flag. @category models */
export const negation = (spec: FlagSpec): string => `--no-${spec.flag.slice(2)}`

/** Build the lookup maps for a list of flags. @category constructors */
export const make = (version: string, flags: ReadonlyArray<FlagSpec>): Catalogue => {
  const byFlag = new Map<string, FlagSpec>()
  const byField = new Map<string, FlagSpec>()
  for (const spec of flags) {
    byFlag.set(spec.flag, spec)
    for (const alias of spec.aliases) byFlag.set(alias, spec)
    if (spec.negatable) byFlag.set(negation(spec), spec)
    if (spec.field !== null) {
      const seen = byField.get(spec.field)
      if (seen === undefined || (seen.deprecated && !spec.deprecated)) byField.set(spec.field, spec)
    }
  }
  return { version, flags, byFlag, byField }
}

/** SGLang 0.5.11. @category catalogues */
export const V0_5_11: Catalogue = make(v0_5_11.version, v0_5_11.flags)

/** The newest known catalogue; the default everywhere a catalogue is optional. @category catalogues */
export const latest: Catalogue = V0_5_11

/** Known versions → catalogue. @category catalogues */
export const versions: ReadonlyMap<string, Catalogue> = new Map([[V0_5_11.version, V0_5_11]])

/** No catalogue for this SGLang version (and none of the same minor line). @category errors */
export class UnsupportedSglangVersion extends Schema.TaggedError<UnsupportedSglangVersion>()(
  "UnsupportedSglangVersion",
  {
    version: Schema.String,
    known: Schema.Array(Schema.String),
    fix: Schema.String
  }
) {
  override get message() {
    return `no flag catalogue for SGLang ${this.version}; known versions: ${this.known.join(", ")}. ${this.fix}`
  }
}

/** @category models */
export interface CatalogueMatch {
  readonly catalogue: Catalogue
  readonly requested: string
  /** False when a different patch release of the same minor line was used. */
  readonly exact: boolean
  /** Set when `exact` is false: what was substituted, for display. */
  readonly warning: string | null
}

const VERSION = /^v?(\d+)\.(\d+)\.(\d+)(?:[.+-]?[A-Za-z0-9.]*)?$/

const parseVersion = (v: string) => {
  const m = VERSION.exec(v.trim())
  return m === null ? null : { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) }
}

/**
 * The catalogue for an SGLang version (`0.5.11`, `v0.5.11`). Any other release of a known
 * `major.minor` line (`0.5.12`, `0.5.11.post1`, `0.5.11rc2`) falls back to the nearest known patch
 * with a warning, since patch releases rarely change flags; another minor line fails.
 *
 * @category catalogues
 */
export const forVersion = (
  version: string,
  known: ReadonlyMap<string, Catalogue> = versions
): Effect.Effect<CatalogueMatch, UnsupportedSglangVersion> => {
  const knownList = [...known.keys()]
  const fail = () =>
    Effect.fail(
      new UnsupportedSglangVersion({
        version,
        known: knownList,
        fix: `use SGLang ${knownList.join(" or ")}, or generate a catalogue for ${version} from its server_args.py (packages/sglang/scripts/generate-catalogue.ts)`
      })
    )
  const wanted = parseVersion(version)
  if (wanted === null) return fail()
  const exact = known.get(version.trim().replace(/^v/, ""))
  if (exact !== undefined)
    return Effect.succeed({ catalogue: exact, requested: version, exact: true, warning: null })
  let best: { catalogue: Catalogue; distance: number } | null = null
  for (const [key, catalogue] of known) {
    const v = parseVersion(key)
    if (v === null || v.major !== wanted.major || v.minor !== wanted.minor) continue
    const distance = Math.abs(v.patch - wanted.patch)
    if (best === null || distance < best.distance) best = { catalogue, distance }
  }
  if (best === null) return fail()
  return Effect.succeed({
    catalogue: best.catalogue,
    requested: version,
    exact: false,
    warning: `no flag catalogue for SGLang ${version}; using ${best.catalogue.version} (same minor line), flags added or changed in ${version} are unknown`
  })
}
