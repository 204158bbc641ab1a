import { assert, describe, it } from "@effect/vitest"
import * as Catalogue from "../src/Catalogue.js"
import * as Flags from "../src/Flags.js"
import { flagHistory } from "./support/releaseData.js"

describe("Flags", () => {
  it("releasesWith: the shipped releases accepting a spelling, from the flag history", () => {
    const history = flagHistory()
    for (const flag of ["--tp-size", "--enable-flashinfer-mla", "--mamba-scheduler-strategy"]) {
      assert.deepStrictEqual(Flags.releasesWith(flag), history[flag]!.versions, flag)
    }
    assert.deepStrictEqual(Flags.releasesWith("--no-such-flag"), [])
    assert.include(Flags.releasesWith("--tensor-parallel-size"), "0.4.0")
  })

  it("formatReleases: runs of consecutive releases", () => {
    assert.strictEqual(Flags.formatReleases(["0.4.3", "0.4.4", "0.4.5", "0.4.6", "0.4.7"]), "0.4.3–0.4.7")
    assert.strictEqual(Flags.formatReleases(["0.4.0", "0.4.2", "0.4.3"]), "0.4.0, 0.4.2–0.4.3")
    assert.strictEqual(Flags.formatReleases([]), "")
  })

  it("list filters by spelling, field or summary and carries the releases", () => {
    const found = Flags.list(Catalogue.V0_5_11, "tensor-parallel")
    assert.deepStrictEqual(
      found.map((f) => f.flag),
      ["--tp-size"]
    )
    assert.strictEqual(found[0]!.releases[0], "0.4.0")
    assert.strictEqual(Flags.list(Catalogue.V0_5_11).length, Catalogue.V0_5_11.flags.length)
  })

  it("elsewhere: spellings of other releases that this one lacks", () => {
    const other = Flags.elsewhere(Catalogue.V0_5_11, "flashinfer-mla")
    assert.deepStrictEqual(
      other.map((o) => o.flag),
      ["--enable-flashinfer-mla"]
    )
  })
})
