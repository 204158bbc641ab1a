import { assert, describe, it } from "@effect/vitest"
import * as SglangVersion from "../src/SglangVersion.js"

const release = (v: string) => {
  const parsed = SglangVersion.parse(v)
  assert.strictEqual(parsed?._tag, "Release", v)
  return parsed as SglangVersion.Release
}

describe("SglangVersion", () => {
  it("parses releases, pre/post/dev parts, local builds and snapshots of main", () => {
    assert.deepStrictEqual(release("v0.5.6.post2"), {
      _tag: "Release",
      major: 0,
      minor: 5,
      patch: 6,
      pre: null,
      post: 2,
      dev: null,
      local: null
    })
    assert.deepStrictEqual(release("0.5.0rc2").pre, ["rc", 2])
    assert.strictEqual(release("0.5.12.dev3+g1a2b3c").dev, 3)
    assert.strictEqual(release("0.5.12.dev3+g1a2b3c").local, "g1a2b3c")
    assert.deepStrictEqual(SglangVersion.parse("main-2026-05-19"), { _tag: "Snapshot", date: "2026-05-19" })
    for (const bad of ["latest", "", "0.5", "five"]) {
      // `0.5` is not how SGLang versions are written but PEP 440 allows it
      if (bad === "0.5") assert.strictEqual(release(bad).patch, 0)
      else assert.isUndefined(SglangVersion.parse(bad), bad)
    }
  })

  it("orders as PEP 440 does: dev < rc < release < post", () => {
    const sorted = ["0.5.11.dev1", "0.5.11rc0", "0.5.11rc2", "0.5.11", "0.5.11.post1", "0.5.12", "0.6.0"]
    const shuffled = [...sorted].reverse()
    shuffled.sort((a, b) => SglangVersion.compareReleases(release(a), release(b)))
    assert.deepStrictEqual(shuffled, sorted)
    assert.strictEqual(SglangVersion.compareReleases(release("0.5.11+cu128"), release("0.5.11")), 0)
  })

  it("normalizes to the catalogue name: no leading v, no local build part", () => {
    assert.strictEqual(SglangVersion.normalize("v0.5.11"), "0.5.11")
    assert.strictEqual(SglangVersion.normalize("0.5.11+cu128"), "0.5.11")
    assert.strictEqual(SglangVersion.normalize("0.5.6.post2"), "0.5.6.post2")
    assert.strictEqual(SglangVersion.normalize("main-2026-07-20"), "main-2026-07-20")
    assert.strictEqual(SglangVersion.format(release("v0.5.0rc2")), "0.5.0rc2")
  })
})
