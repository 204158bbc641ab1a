/**
 * The generated form of a `vllm serve` parser: one snapshot in full, the others as what they
 * drop, add and redefine relative to the next newer one. Written by `scripts/generate-catalogue.ts`.
 *
 * @internal
 */

/**
 * How argparse consumes the flag: `switch` (store_true), `toggle` (BooleanOptionalAction, with
 * `--no-x`), `single` (one value), `many` (nargs `+`), `append` (repeatable, one value each),
 * `maybe` (nargs `?`: bare means on).
 */
export type Arity = "switch" | "toggle" | "single" | "many" | "append" | "maybe"

/**
 * How one value converts: `size` is vLLM's human_readable_int (`32k`, `1M`, `2Gi`), `json` a
 * JSON object or list (config dataclasses, dicts), `jsonOrText` JSON when it parses and the
 * text otherwise (`--hf-overrides`), `truth` is `true`/`false` text.
 */
export type Conversion = "text" | "int" | "float" | "size" | "json" | "jsonOrText" | "truth"

export interface FlagRecord {
  /** Canonical spelling, e.g. `--tensor-parallel-size`. */
  readonly flag: string
  /** Short spellings, e.g. `-tp`. */
  readonly short: ReadonlyArray<string>
  /** The argparse dest (the config field). */
  readonly dest: string
  readonly arity: Arity
  readonly conversion: Conversion
  /** `None` and an empty value give null (vLLM's `optional_type`). */
  readonly nullable: boolean
  /** The default as data; for a dataclass default whose repr is not data, its repr text. */
  readonly default: unknown
  readonly choices: ReadonlyArray<string | number | null> | null
  /** The config dataclass (or `Frontend`, `options`) the flag belongs to. */
  readonly group: string
  /** `size` flags that also take `auto` (`--max-model-len auto`). */
  readonly auto?: boolean
}

export interface SnapshotInfo {
  /** Our name for it: `main-YYYY-MM-DD`. */
  readonly name: string
  /** Upstream main commit the dump was taken at. */
  readonly commit: string
  readonly date: string
  /** The release it is closest to (`0.13`), from the reference. */
  readonly near: string
}

/** A snapshot relative to the next newer one. */
export interface SnapshotDelta extends SnapshotInfo {
  readonly dropped: ReadonlyArray<string>
  /** New or redefined flags, each placed after the flag named (null: first). */
  readonly put: ReadonlyArray<{ readonly after: string | null; readonly record: FlagRecord }>
}

/** A newer snapshot's flags turned into an older one's (order kept as that dump has it). */
export const rebuild = (base: ReadonlyArray<FlagRecord>, delta: SnapshotDelta): ReadonlyArray<FlagRecord> => {
  const replaced = new Set(delta.put.map((p) => p.record.flag))
  const dropped = new Set(delta.dropped)
  const out = base.filter((r) => !dropped.has(r.flag) && !replaced.has(r.flag))
  for (const { after, record } of delta.put) {
    const at = after === null ? 0 : out.findIndex((r) => r.flag === after) + 1
    if (after !== null && at === 0) throw new Error(`vLLM catalogue ${delta.name}: ${after} is not placed`)
    out.splice(at, 0, record)
  }
  return out
}
