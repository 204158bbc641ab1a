/**
 * The reference release data (test/fixtures/versions) in the shapes the tests need: one
 * release's flags as the host dump prints them (argparse actions plus the ServerArgs field
 * names), built here from the data, not from our catalogues.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"

/** One flag of `args-<version>.json`. */
export interface DataFlag {
  readonly flag: string
  readonly field: string | null
  readonly dest: string
  readonly aliases: ReadonlyArray<string>
  readonly negative_flags: ReadonlyArray<string>
  readonly type: string
  readonly type_fn: string | null
  readonly action: string
  readonly nargs: number | string | null
  readonly const: unknown
  readonly default: unknown
  readonly default_suppressed: boolean
  readonly choices: ReadonlyArray<string | number> | null
  readonly required: boolean
  readonly deprecated: boolean
  readonly replaced_by: string | null
  readonly hidden: boolean
}

export const fixturesDir = join(import.meta.dirname, "..", "fixtures", "versions")

/** A fixture file's JSON. */
export const readJson = <A>(name: string): A => JSON.parse(readFileSync(join(fixturesDir, name), "utf8"))

/** One release's flags (`args-<version>.json`). */
export const readFixture = (name: string): ReadonlyArray<DataFlag> => readJson(name)

/** `flag-history.json`: each primary flag's releases. */
export const flagHistory = (): Readonly<Record<string, { readonly versions: ReadonlyArray<string> }>> =>
  readJson("flag-history.json")

/** A flag the data has no release for, as a dump action: only what differs from a plain `store`. */
export type ExtraAction = {
  readonly option_strings: ReadonlyArray<string>
  readonly dest: string
} & Readonly<Record<string, unknown>>

/** One flag as the argparse action the dump prints (its `--no-` spellings included). */
export const actionOf = (f: DataFlag) => ({
  option_strings: [f.flag, ...f.aliases, ...f.negative_flags],
  dest: f.dest,
  action: f.action,
  type_fn: f.type_fn,
  nargs: f.nargs,
  const: f.const,
  default: f.default,
  default_suppressed: f.default_suppressed,
  choices: f.choices,
  required: f.required,
  deprecated: f.deprecated,
  replaced_by: f.replaced_by,
  hidden: f.hidden
})

/** What the host dump prints for a parser holding `flags` (then `extra`). */
export const dumpOf = (
  flags: ReadonlyArray<DataFlag>,
  sha256: string,
  extra: ReadonlyArray<ExtraAction> = []
) => ({
  sha256,
  fields: [
    ...new Set([...flags.flatMap((f) => (f.field === null ? [] : [f.field])), ...extra.map((e) => e.dest)])
  ],
  actions: [
    ...flags.map(actionOf),
    ...extra.map((e) => ({
      action: "store",
      type_fn: "str",
      nargs: null,
      const: null,
      default: null,
      default_suppressed: false,
      choices: null,
      required: false,
      deprecated: false,
      replaced_by: null,
      hidden: false,
      ...e
    }))
  ]
})
