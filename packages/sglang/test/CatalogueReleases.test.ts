import { readFileSync } from "node:fs"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Catalogue from "../src/Catalogue.js"
import type { DataFlag } from "./support/releaseData.js"

// The reference release data, unchanged (see fixtures/versions/README.md).
const fixtures = join(import.meta.dirname, "fixtures/versions")
const readJson = <A>(name: string): A => JSON.parse(readFileSync(join(fixtures, name), "utf8"))

interface IndexEntry {
  readonly version: string
  readonly commit: string
  readonly date: string
  readonly flags: number
  readonly release_point: string
}
interface History {
  readonly option_strings: ReadonlyArray<string>
  readonly versions: ReadonlyArray<string>
}
const index = readJson<ReadonlyArray<IndexEntry>>("index.json")
const history = readJson<Record<string, History>>("flag-history.json")

const catalogueOf = (version: string): Catalogue.Catalogue => {
  const catalogue = Catalogue.get(version)
  assert.isDefined(catalogue, version)
  return catalogue!
}

describe("Catalogue releases", () => {
  it("ships all 29 releases of the data, in order, with their commit, date and flag count", () => {
    assert.deepStrictEqual(
      Catalogue.releases.map((r) => [r.version, r.commit, r.date, r.flagCount, r.releasePoint]),
      index.map((e) => [e.version, e.commit, e.date.slice(0, 10), e.flags, e.release_point])
    )
    for (const entry of index) assert.strictEqual(catalogueOf(entry.version).flags.length, entry.flags)
  })

  it("every release has exactly the flags the flag history lists for it, with known spellings", () => {
    for (const { version } of index) {
      const catalogue = catalogueOf(version)
      const expected = Object.entries(history)
        .filter(([, h]) => h.versions.includes(version))
        .map(([flag]) => flag)
      assert.sameMembers(
        catalogue.flags.map((f) => f.flag),
        expected,
        version
      )
      for (const spec of catalogue.flags) {
        const seen = history[spec.flag]!.option_strings
        for (const alias of spec.aliases) assert.include(seen, alias, `${version} ${spec.flag}`)
      }
    }
  })

  for (const version of ["0.4.9", "0.5.4", "0.5.15"]) {
    it(`${version}: every flag's argparse facts are the data's, in the parser's order`, () => {
      const data = readJson<ReadonlyArray<DataFlag>>(`args-${version}.json`)
      const catalogue = catalogueOf(version)
      assert.deepStrictEqual(
        catalogue.flags.map((f) => f.flag),
        data.map((d) => d.flag)
      )
      data.forEach((d, i) => {
        const spec = catalogue.flags[i]!
        const takesText = d.type === "custom" || (d.type === "bool" && d.action === "store")
        assert.deepStrictEqual(
          {
            field: spec.field,
            aliases: spec.aliases,
            type: spec.type,
            default: spec.default,
            choices: spec.choices,
            nargs: spec.nargs,
            deprecated: spec.deprecated,
            negatable: spec.negatable,
            required: spec.required === true,
            humanReadable: spec.humanReadable === true,
            replacedBy: spec.replacedBy ?? null,
            hidden: spec.hidden === true
          },
          {
            field: d.field,
            aliases: d.aliases,
            type: takesText ? "str" : d.type,
            default: d.default_suppressed ? null : d.default,
            choices: d.choices,
            nargs: d.nargs === 0 ? null : d.nargs,
            deprecated: d.deprecated,
            negatable: d.negative_flags.length > 0,
            required: d.required,
            humanReadable: (d.type_fn ?? "").endsWith("human_readable_int"),
            replacedBy: d.replaced_by,
            hidden: d.hidden
          },
          `${version} ${d.flag}`
        )
        if (d.nargs === "?" || d.action === "DeprecatedStoreConstAction")
          assert.deepStrictEqual(spec.const, d.const)
      })
    })
  }

  it("keeps our summaries for flags 0.5.11 also has, and none for the others", () => {
    const old = catalogueOf("0.4.9")
    assert.strictEqual(
      old.byFlag.get("--tp-size")!.summary,
      Catalogue.V0_5_11.byFlag.get("--tp-size")!.summary
    )
    const gone = old.flags.find((f) => !Catalogue.V0_5_11.byFlag.has(f.flag))!
    assert.strictEqual(gone.summary, "")
  })

  it("builds a catalogue once", () => {
    assert.strictEqual(Catalogue.get("0.5.4"), Catalogue.get("v0.5.4"))
    assert.strictEqual(Catalogue.get("0.5.11"), Catalogue.V0_5_11)
    assert.strictEqual(Catalogue.get("0.5.11+cu128"), Catalogue.V0_5_11)
    assert.isUndefined(Catalogue.get("0.5.12"))
  })

  describe("forVersion", () => {
    it.effect("a shipped release is exact, with or without a leading v", () =>
      Effect.gen(function* () {
        for (const v of ["0.5.11", "v0.5.11", "0.5.6.post2", "0.5.0rc2", "main-2026-05-19"]) {
          const match = yield* Catalogue.forVersion(v)
          assert.isTrue(match.exact, v)
          assert.isNull(match.warning)
        }
      })
    )

    it.effect("another version gets the nearest shipped release below it, with a warning naming both", () =>
      Effect.gen(function* () {
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["0.5.12", "0.5.11"],
          ["0.5.11.post1", "0.5.11"],
          ["0.5.13rc0", "0.5.11"],
          ["0.5.21", "0.5.15"],
          ["0.6.0", "0.5.15"],
          ["0.3.6", "0.4.0"]
        ]
        for (const [requested, used] of cases) {
          const match = yield* Catalogue.forVersion(requested)
          assert.strictEqual(match.catalogue.version, used, requested)
          assert.isFalse(match.exact)
          assert.include(match.warning ?? "", requested)
          assert.include(match.warning ?? "", used)
        }
      })
    )

    it.effect("fails for a string that is not a version", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(Catalogue.forVersion("latest"))
        assert.strictEqual(error._tag, "UnsupportedSglangVersion")
        assert.include(error.message, "0.4.0")
      })
    )
  })
})
