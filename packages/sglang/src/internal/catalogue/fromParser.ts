/**
 * From argparse's own description of a flag (one `parser._actions` entry of SGLang's
 * `ServerArgs.add_cli_args`, as the host dump prints it and as the reference extraction
 * recorded it) to a catalogue `FlagSpec`. One reading for both, so a catalogue generated from
 * the release data and one read from a host agree on every flag.
 *
 * @internal
 */
import { Schema } from "effect"
import type { FlagSpec, FlagType } from "../../Catalogue.js"

/** One argparse action. `default` is null when `default_suppressed` (argparse.SUPPRESS). */
export const ParserAction = Schema.Struct({
  option_strings: Schema.Array(Schema.String),
  dest: Schema.String,
  action: Schema.String,
  /** The qualified name of the `type=` callable, null when none. */
  type_fn: Schema.NullOr(Schema.String),
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
export type ParserAction = typeof ParserAction.Type

/** Actions that take no value on the command line. */
const SWITCHES = new Set([
  "store_true",
  "store_false",
  "store_const",
  "BooleanOptionalAction",
  "DeprecatedAction",
  "DeprecatedStoreTrueAction",
  "DeprecatedStoreConstAction"
])

const endsWith = (name: string | null, ...suffixes: ReadonlyArray<string>) =>
  name !== null && suffixes.some((s) => name === s || name.endsWith(`.${s}`))

/** Our type for an action, plus a note when argparse converts in a way we only approximate. */
export const classify = (action: ParserAction): { readonly type: FlagType; readonly note?: string } => {
  if (SWITCHES.has(action.action) || action.nargs === 0) return { type: "bool" }
  const fn = action.type_fn
  const list = action.nargs === "+" || action.nargs === "*"
  if (endsWith(fn, "loads", "json_list_type")) return { type: "json" }
  if (endsWith(fn, "nullable_str")) return { type: "str|null" }
  const scalar: "str" | "int" | "float" | null =
    fn === null || fn === "str"
      ? "str"
      : endsWith(fn, "int", "human_readable_int")
        ? "int"
        : fn === "float"
          ? "float"
          : null
  if (scalar !== null) return { type: list ? `list[${scalar}]` : scalar }
  if (fn === "bool") {
    return { type: "str", note: "argparse type=bool: any non-empty word (even False) is read as True" }
  }
  return { type: list ? "list[str]" : "str", note: `parsed by SGLang's ${fn}; checked as text offline` }
}

/** `--no-x` spellings of a BooleanOptionalAction. */
const negations = (action: ParserAction): ReadonlyArray<string> =>
  action.action === "BooleanOptionalAction"
    ? action.option_strings.filter(
        (s) => s.startsWith("--no-") && action.option_strings.includes(`--${s.slice(5)}`)
      )
    : []

const dashed = (field: string) => `--${field.replaceAll("_", "-")}`

/**
 * The ServerArgs field an action writes: its dest when that is a field, else the field one of
 * its option strings is named after (`tensor_parallel_size` → `tp_size` through `--tp-size`,
 * as `ServerArgs.from_cli_args` renames it), else none (deprecated no-ops, `--config`).
 */
export const fieldOf = (action: ParserAction, fields: ReadonlySet<string>): string | null => {
  if (action.action === "DeprecatedAction") return null
  if (fields.has(action.dest)) return action.dest
  for (const s of action.option_strings) {
    const candidate = s.replace(/^--?/, "").replaceAll("-", "_")
    if (fields.has(candidate) && s === dashed(candidate)) return candidate
  }
  return null
}

/** The facts of one action that a `FlagSpec` holds (no summary or section: argparse has none). */
export interface ParsedFlag {
  readonly flag: string
  readonly field: string | null
  readonly aliases: ReadonlyArray<string>
  readonly type: FlagType
  readonly default: unknown
  readonly choices: ReadonlyArray<string | number> | null
  readonly nargs: "+" | "*" | "?" | null
  readonly deprecated: boolean
  readonly negatable: boolean
  readonly required?: boolean
  readonly humanReadable?: boolean
  readonly const?: unknown
  readonly hidden?: boolean
  readonly replacedBy?: string
  readonly note?: string
}

/** One action as a flag; `field` as computed by `fieldOf` (or given by the data). */
export const toFlag = (action: ParserAction, field: string | null): ParsedFlag => {
  const negative = negations(action)
  const spellings = action.option_strings.filter((s) => !negative.includes(s))
  const primary =
    field !== null && spellings.includes(dashed(field))
      ? dashed(field)
      : (spellings.find((s) => s.startsWith("--")) ?? spellings[0] ?? `--${action.dest}`)
  const { type, note } = classify(action)
  const nargs = action.nargs === "+" || action.nargs === "*" || action.nargs === "?" ? action.nargs : null
  const constant =
    nargs === "?" || action.action === "DeprecatedStoreConstAction" || action.action === "store_const"
      ? action.const
      : undefined
  return {
    flag: primary,
    field,
    aliases: spellings.filter((s) => s !== primary),
    type,
    default: action.default_suppressed ? null : action.default,
    choices: action.choices,
    nargs,
    deprecated: action.deprecated,
    negatable: negative.length > 0,
    ...(action.required ? { required: true } : {}),
    ...(endsWith(action.type_fn, "human_readable_int") ? { humanReadable: true } : {}),
    ...(constant === undefined ? {} : { const: constant }),
    ...(action.hidden ? { hidden: true } : {}),
    ...(action.replaced_by === null ? {} : { replacedBy: action.replaced_by }),
    ...(note === undefined ? {} : { note })
  }
}

/** Every action of a parser as catalogue flags, with empty summaries (argparse help is not kept). */
export const toFlagSpecs = (
  actions: ReadonlyArray<ParserAction>,
  fields: ReadonlySet<string>,
  described: (flag: string) => Pick<FlagSpec, "section" | "summary" | "autoResolution"> | undefined = () =>
    undefined
): ReadonlyArray<FlagSpec> =>
  actions
    .filter((a) => !(a.option_strings.length === 0 || a.dest === "help"))
    .map((action) => {
      const { note, ...parsed } = toFlag(action, fieldOf(action, fields))
      const words = described(parsed.flag)
      return {
        ...parsed,
        section: words?.section ?? "",
        summary: words?.summary ?? "",
        autoResolution: words?.autoResolution ?? null,
        ...(note === undefined ? {} : { notes: note })
      }
    })
