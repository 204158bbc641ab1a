/**
 * Generate the flag catalogues: the base release (0.5.11) in full from `args.json` (with our
 * summaries and sections), and every other release as differences from its neighbour, from the
 * reference release data (`versions/index.json` and `args-<version>.json`, extracted by running
 * each release's own parser builder).
 *
 * Usage (from packages/sglang):
 *   npm run generate [-- --reference <dir>]
 *
 * `--reference` defaults to the nearest shared/reference/sglang above the repository (holding
 * args.json and versions/).
 * Writes src/internal/catalogue/v0_5_11.ts and src/internal/catalogue/releases/*.ts, formatted
 * with biome. Fails when our reading of the data disagrees with the data's own classification
 * or a diff does not reproduce its release exactly.
 *
 * Why differences: 29 releases of 82-458 flags in full would be ~200,000 generated lines, almost
 * all repeats; each release differs from its neighbour by 5-60 flags, so a release file reads
 * like its changelog, and the base stays the one fully written (and typed) catalogue.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { Schema } from "effect"
import type { FlagSpec } from "../src/Catalogue.js"
import { apply } from "../src/internal/catalogue/release.js"
import * as Base from "./catalogue/base.js"
import * as Releases from "./catalogue/releases.js"

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const repoDir = resolve(packageDir, "../..")
const catalogueDir = join(packageDir, "src/internal/catalogue")
const BASE = "0.5.11"

/** `--reference <dir>`, else the nearest `shared/reference/sglang` above the repository. */
const referenceDir = (argv: ReadonlyArray<string>): string => {
  const at = argv.indexOf("--reference")
  if (at !== -1) return resolve(argv[at + 1]!)
  for (let dir = dirname(repoDir); ; dir = dirname(dir)) {
    const candidate = join(dir, "shared/reference/sglang")
    if (existsSync(candidate)) return candidate
    if (dirname(dir) === dir)
      throw new Error("no shared/reference/sglang above the repository: pass --reference <dir>")
  }
}

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, "utf8"))

const main = async () => {
  const reference = referenceDir(process.argv.slice(2))
  const versionsDir = join(reference, "versions")
  const index = Schema.decodeUnknownSync(Schema.Array(Releases.IndexEntry))(
    readJson(join(versionsDir, "index.json"))
  )
  const data = new Map(
    index.map((e) => [
      e.version,
      Schema.decodeUnknownSync(Schema.Array(Releases.DataFlag))(
        readJson(join(versionsDir, `args-${e.version}.json`))
      )
    ])
  )
  const problems = index.flatMap((e) => Releases.disagreements(e.version, data.get(e.version)!))
  if (problems.length > 0)
    throw new Error(`our argparse reading disagrees with the data:\n${problems.join("\n")}`)

  // The base, in full, from args.json (+ the argparse facts it lacks, from the release data).
  const rich = Schema.decodeUnknownSync(Schema.Array(Base.RawFlag))(readJson(join(reference, "args.json")))
  const extraOf = (f: Releases.DataFlag): Base.ArgparseExtras => ({
    ...(f.hidden ? { hidden: true } : {}),
    ...(f.replaced_by === null ? {} : { replacedBy: f.replaced_by })
  })
  const extras = new Map(data.get(BASE)!.map((f) => [f.flag, extraOf(f)]))
  const baseFile = join(catalogueDir, "v0_5_11.ts")
  writeFileSync(baseFile, Base.render(BASE, "v0_5_11", rich, extras))
  // Import the base as written, so the diffs are computed against exactly what ships.
  const baseModule: { readonly flags: ReadonlyArray<FlagSpec> } = await import(`${baseFile}?t=${Date.now()}`)
  const baseByFlag = new Map(baseModule.flags.map((s) => [s.flag, s]))
  const fromData = Releases.releaseFlags(data.get(BASE)!, baseByFlag, baseByFlag)
  const mismatched = fromData.filter((s, i) => !isSame(s, baseModule.flags[i]))
  if (mismatched.length > 0) {
    throw new Error(`args.json and args-${BASE}.json disagree on ${mismatched.map((s) => s.flag).join(", ")}`)
  }

  // Every other release against its neighbour on the way to the base.
  const releasesDir = join(catalogueDir, "releases")
  rmSync(releasesDir, { recursive: true, force: true })
  mkdirSync(releasesDir, { recursive: true })
  const at = index.findIndex((e) => e.version === BASE)
  const flagsOf = new Map<string, ReadonlyArray<FlagSpec>>([[BASE, baseModule.flags]])
  const order = [
    ...index.slice(at + 1).map((_, k) => at + 1 + k),
    ...index.slice(0, at).map((_, k) => at - 1 - k)
  ]
  for (const i of order) {
    const entry = index[i]!
    const neighbour = index[i > at ? i - 1 : i + 1]!.version
    const from = flagsOf.get(neighbour)!
    const to = Releases.releaseFlags(
      data.get(entry.version)!,
      new Map(from.map((s) => [s.flag, s])),
      baseByFlag
    )
    const diff = Releases.diffOf(neighbour, from, to)
    flagsOf.set(entry.version, apply(from, diff))
    writeFileSync(
      join(releasesDir, `${Releases.moduleNameOf(entry.version)}.ts`),
      Releases.renderRelease(entry, diff)
    )
  }
  writeFileSync(join(releasesDir, "index.ts"), Releases.renderIndex(index, BASE))
  execFileSync(join(repoDir, "node_modules/.bin/biome"), ["format", "--write", baseFile, releasesDir], {
    cwd: repoDir,
    stdio: "inherit"
  })
  process.stdout.write(`wrote ${index.length} catalogues (${BASE} in full) to ${catalogueDir}\n`)
}

const isSame = (a: FlagSpec, b: FlagSpec | undefined) =>
  b !== undefined && JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort())

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 1
})
