/**
 * Generate a flag catalogue data file from an extracted `args.json` (one object per
 * `parser.add_argument` call of SGLang's `ServerArgs.add_cli_args`).
 *
 * Usage (from packages/sglang):
 *   npx tsx scripts/generate-catalogue.ts [args.json] [--version 0.5.11] [--out src/internal/catalogue/v0_5_11.ts]
 *   npm run generate -- /path/to/args.json --version 0.5.11
 *
 * Defaults: args.json = <repo>/../shared/reference/sglang/args.json, version 0.5.11,
 * out = src/internal/catalogue/v<version with _>.ts. The output is formatted with biome.
 * To add a version: run this with its args.json, then add it to `versions` in src/Catalogue.ts.
 */
import { execFileSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { Schema } from "effect"

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const repoDir = resolve(packageDir, "../..")

const RawFlag = Schema.Struct({
  flag: Schema.String,
  field: Schema.NullOr(Schema.String),
  aliases: Schema.Array(Schema.String),
  type: Schema.Literal(
    "bool",
    "str",
    "str|null",
    "int",
    "float",
    "list[str]",
    "list[int]",
    "list[float]",
    "json"
  ),
  default: Schema.Unknown,
  choices: Schema.NullOr(Schema.Array(Schema.Union(Schema.String, Schema.Number))),
  section: Schema.String,
  deprecated: Schema.Boolean,
  summary: Schema.String,
  nargs: Schema.optional(Schema.Literal("+", "*", "?")),
  required: Schema.optional(Schema.Boolean),
  negatable: Schema.optional(Schema.Boolean),
  auto_resolution: Schema.optional(Schema.String),
  notes: Schema.optional(Schema.String),
  field_default: Schema.optional(Schema.Unknown)
})
type RawFlag = typeof RawFlag.Type

const parseCommandLine = (argv: ReadonlyArray<string>) => {
  let input = resolve(repoDir, "../shared/reference/sglang/args.json")
  let version = "0.5.11"
  let out: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === "--version") version = argv[++i] ?? version
    else if (arg === "--out") out = argv[++i]
    else input = resolve(arg)
  }
  const moduleName = `v${version.replaceAll(".", "_")}`
  return {
    input,
    version,
    moduleName,
    out: resolve(out ?? resolve(packageDir, `src/internal/catalogue/${moduleName}.ts`))
  }
}

const lit = (value: unknown): string => JSON.stringify(value)

// The base TS type of a value of this flag (without null).
const baseType = (flag: RawFlag): string => {
  const choices = flag.choices?.map(lit).join(" | ")
  switch (flag.type) {
    case "bool":
      return "boolean"
    case "str":
    case "str|null":
      return choices ?? "string"
    case "int":
    case "float":
      return choices ?? "number"
    case "list[str]":
      return `ReadonlyArray<${choices ?? "string"}>`
    case "list[int]":
    case "list[float]":
      return "ReadonlyArray<number>"
    case "json":
      return "unknown"
  }
}

const matchesBase = (flag: RawFlag, value: unknown): boolean => {
  switch (flag.type) {
    case "bool":
      return typeof value === "boolean"
    case "str":
    case "str|null":
      return typeof value === "string"
    case "int":
    case "float":
      return typeof value === "number"
    case "json":
      return true
    default:
      return Array.isArray(value)
  }
}

const fieldType = (flag: RawFlag): string => {
  const base = baseType(flag)
  if (flag.type === "json" || flag.required === true) return base
  if (flag.default === null || flag.type === "str|null") return `${base} | null`
  // e.g. `debug_tensor_dump_inject: str = False` upstream.
  if (!matchesBase(flag, flag.default)) return `${base} | ${lit(flag.default)}`
  return base
}

const humanReadable = (flag: RawFlag) => flag.type === "int" && (flag.notes ?? "").includes("SI/IEC")

const specLiteral = (flag: RawFlag): string => {
  const entries: Array<[string, unknown]> = [
    ["flag", flag.flag],
    ["field", flag.field],
    ["aliases", flag.aliases],
    ["type", flag.type],
    ["default", flag.default],
    ["choices", flag.choices],
    ["nargs", flag.nargs ?? null],
    ["section", flag.section],
    ["deprecated", flag.deprecated],
    ["negatable", flag.negatable ?? false],
    ["summary", flag.summary],
    ["autoResolution", flag.auto_resolution ?? null]
  ]
  if (flag.required === true) entries.push(["required", true])
  if (humanReadable(flag)) entries.push(["humanReadable", true])
  // The only nargs="?" flag (`--model-checksum`) stores "" when given bare.
  if (flag.nargs === "?") entries.push(["const", ""])
  if (flag.notes !== undefined) entries.push(["notes", flag.notes])
  return `{ ${entries.map(([k, v]) => `${k === "default" || k === "const" ? lit(k) : k}: ${lit(v)}`).join(", ")} }`
}

const docComment = (text: string) => `/** ${text.replaceAll("*/", "*\\/")} */`

const render = (version: string, moduleName: string, flags: ReadonlyArray<RawFlag>): string => {
  const typeName = `ServerArgs${moduleName.toUpperCase()}`
  const seen = new Set<string>()
  const fields: Array<string> = []
  for (const flag of flags) {
    if (flag.field === null || seen.has(flag.field)) continue
    // A field written by a deprecated alias flag and a live flag takes its type from the live one.
    const live = flags.find((f) => f.field === flag.field && !f.deprecated) ?? flag
    seen.add(flag.field)
    fields.push(
      `  ${docComment(`${live.summary} (\`${live.flag}\`)`)}\n  readonly ${flag.field}: ${fieldType(live)}`
    )
  }
  return [
    "/**",
    ` * SGLang ${version} launch_server flags (${flags.length}): generated by`,
    " * packages/sglang/scripts/generate-catalogue.ts from args.json; do not edit.",
    " */",
    'import type { FlagSpec } from "../../Catalogue.js"',
    "",
    `export const version = ${lit(version)}`,
    "",
    "export const flags: ReadonlyArray<FlagSpec> = [",
    flags.map((f) => `  ${specLiteral(f)}`).join(",\n"),
    "]",
    "",
    `/** Every ServerArgs field of SGLang ${version} with its CLI type; null is Python None. */`,
    `export interface ${typeName} {`,
    fields.join("\n"),
    "}",
    ""
  ].join("\n")
}

const main = () => {
  const options = parseCommandLine(process.argv.slice(2))
  const flags = Schema.decodeUnknownSync(Schema.Array(RawFlag))(
    JSON.parse(readFileSync(options.input, "utf8"))
  )
  writeFileSync(options.out, render(options.version, options.moduleName, flags))
  execFileSync(resolve(repoDir, "node_modules/.bin/biome"), ["format", "--write", options.out], {
    cwd: repoDir,
    stdio: "inherit"
  })
  process.stdout.write(`wrote ${flags.length} flags of SGLang ${options.version} to ${options.out}\n`)
}

main()
