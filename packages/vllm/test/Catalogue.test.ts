import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Catalogue from "../src/Catalogue.js"

describe("vLLM catalogues", () => {
  it("ship the three dumped snapshots with their flag counts, oldest first", () => {
    assert.deepStrictEqual(
      Catalogue.snapshots.map((s) => [s.name, s.near, Catalogue.byName(s.name)!.flags.length]),
      [
        ["main-2025-09-26", "0.11", 181],
        ["main-2025-12-16", "0.13", 196],
        ["main-2026-05-19", "0.21", 254]
      ]
    )
  })

  it("rebuild an older snapshot's flags as its dump has them (removed, added, changed defaults)", () => {
    const v011 = Catalogue.byName("main-2025-09-26")!
    const v013 = Catalogue.byName("main-2025-12-16")!
    assert.isTrue(v011.bySpelling.has("--task"))
    assert.isFalse(v013.bySpelling.has("--task"))
    assert.isTrue(v013.bySpelling.has("--swap-space"))
    assert.isFalse(Catalogue.latest.bySpelling.has("--swap-space"))
    assert.strictEqual(v013.byDest.get("gpu_memory_utilization")!.default, 0.9)
    assert.strictEqual(Catalogue.latest.byDest.get("gpu_memory_utilization")!.default, 0.92)
  })

  it("know spellings: short forms, --no-x of toggles, choices converted to the flag's type", () => {
    const c = Catalogue.latest
    assert.strictEqual(c.bySpelling.get("-tp")!.dest, "tensor_parallel_size")
    assert.strictEqual(c.bySpelling.get("--no-enforce-eager")!.dest, "enforce_eager")
    assert.deepStrictEqual(
      Catalogue.byName("main-2025-12-16")!.byDest.get("block_size")!.choices?.slice(0, 3),
      [1, 8, 16]
    )
    assert.strictEqual(c.byDest.get("speculative_config")!.conversion, "json")
    assert.strictEqual(c.byDest.get("max_model_len")!.auto, true)
  })

  it("pick the snapshot near an installed version, warning when none is", () => {
    const exact = Effect.runSync(Catalogue.forVersion("0.13.0"))
    assert.strictEqual(exact.catalogue.snapshot.name, "main-2025-12-16")
    assert.isNull(exact.warning)
    const between = Effect.runSync(Catalogue.forVersion("0.15.1"))
    assert.strictEqual(between.catalogue.snapshot.name, "main-2025-12-16")
    assert.include(between.warning!, "0.15.1")
    const old = Effect.runSync(Catalogue.forVersion("0.8.5"))
    assert.strictEqual(old.catalogue.snapshot.name, "main-2025-09-26")
    const bad = Effect.runSync(Effect.flip(Catalogue.forVersion("latest")))
    assert.strictEqual(bad._tag, "UnknownVllmVersion")
  })
})
