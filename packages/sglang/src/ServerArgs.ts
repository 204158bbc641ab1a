/**
 * SGLang's `ServerArgs` as a typed value: every field of the newest known version with the
 * CLI default applied where the user gave nothing. `null` is Python `None` (usually "let SGLang
 * decide", see each flag's `autoResolution` in the catalogue).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import * as Catalogue from "./Catalogue.js"
import type { ServerArgsV0_5_11 } from "./internal/catalogue/v0_5_11.js"

/** All fields of SGLang 0.5.11 (the newest catalogue). @category models */
export type ServerArgs = ServerArgsV0_5_11

/** A ServerArgs field name, e.g. `"tp_size"`. @category models */
export type Field = keyof ServerArgs

/** The CLI defaults: every field except `model_path`, which has none (the flag is required). @category models */
export type Defaults = Omit<ServerArgs, "model_path"> & { readonly model_path: null }

type AnySchema = Schema.Schema<unknown>

const literals = (choices: ReadonlyArray<string | number>): AnySchema =>
  Schema.Literal(...(choices as [string | number, ...Array<string | number>])) as unknown as AnySchema

/** The schema of one field's value (without null). @category schemas */
const baseSchema = (spec: Catalogue.FlagSpec): AnySchema => {
  const element = (fallback: AnySchema): AnySchema =>
    spec.choices === null ? fallback : literals(spec.choices)
  switch (spec.type) {
    case "bool":
      return Schema.Boolean as unknown as AnySchema
    case "str":
    case "str|null":
      return element(Schema.String as unknown as AnySchema)
    case "int":
      return element(Schema.Int as unknown as AnySchema)
    case "float":
      return element(Schema.Number as unknown as AnySchema)
    case "list[str]":
      return Schema.Array(element(Schema.String as unknown as AnySchema)) as unknown as AnySchema
    case "list[int]":
      return Schema.Array(Schema.Int) as unknown as AnySchema
    case "list[float]":
      return Schema.Array(Schema.Number) as unknown as AnySchema
    case "json":
      return Schema.Unknown
  }
}

/** The schema of a field: its base type, nullable when the default is None. @category schemas */
export const fieldSchema = (spec: Catalogue.FlagSpec): AnySchema => {
  const base = baseSchema(spec)
  if (spec.type === "json" || spec.required === true) return base
  if (spec.default === null || spec.type === "str|null") return Schema.NullOr(base) as unknown as AnySchema
  if (Schema.is(base)(spec.default)) return base
  // An upstream default outside the declared type (`debug_tensor_dump_inject: str = False`).
  return Schema.Union(base, literals([spec.default as string | number])) as unknown as AnySchema
}

/**
 * The ServerArgs schema of a catalogue: one field per catalogue field, choices as literals.
 * Typed as the newest version's `ServerArgs` (an older catalogue has fewer fields at run time).
 *
 * @category schemas
 */
export const schemaFor = (catalogue: Catalogue.Catalogue): Schema.Schema<ServerArgs> => {
  const fields: Record<string, AnySchema> = {}
  for (const [field, spec] of catalogue.byField) fields[field] = fieldSchema(spec)
  // The struct is built from data, so its static type is only known through the generated interface.
  return Schema.Struct(fields) as unknown as Schema.Schema<ServerArgs>
}

/**
 * ServerArgs of the newest catalogue, built when first used (a schema of some 400 fields is a
 * noticeable part of a program's start). @category schemas
 */
export const ServerArgs: Schema.Schema<ServerArgs> = Schema.suspend(() => schemaFor(Catalogue.latest))

const defaultsCache = new WeakMap<Catalogue.Catalogue, Defaults>()

/** Every field at its CLI default (what `launch_server --model-path X` gets for the rest). @category constructors */
export const defaults = (catalogue: Catalogue.Catalogue = Catalogue.latest): Defaults => {
  const cached = defaultsCache.get(catalogue)
  if (cached !== undefined) return cached
  const values: Record<string, unknown> = {}
  for (const [field, spec] of catalogue.byField) values[field] = spec.default
  const result = values as unknown as Defaults
  defaultsCache.set(catalogue, result)
  return result
}

/** Defaults plus the given fields: a complete ServerArgs for tests and programmatic launches. @category constructors */
export const make = (
  given: Partial<ServerArgs> & { readonly model_path: string },
  catalogue: Catalogue.Catalogue = Catalogue.latest
): ServerArgs => ({ ...defaults(catalogue), ...given }) as ServerArgs
