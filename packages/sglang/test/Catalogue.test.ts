import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import * as Catalogue from "../src/Catalogue.js"
import * as ServerArgs from "../src/ServerArgs.js"

const catalogue = Catalogue.V0_5_11

describe("Catalogue", () => {
  it("holds all 374 flags of SGLang 0.5.11 with unique spellings", () => {
    assert.strictEqual(catalogue.version, "0.5.11")
    assert.strictEqual(catalogue.flags.length, 374)
    const spellings = catalogue.flags.flatMap((f) => [f.flag, ...f.aliases])
    assert.strictEqual(new Set(spellings).size, spellings.length)
    assert.isTrue(catalogue.flags.every((f) => f.flag.startsWith("--") && f.summary.length > 0))
  })

  it("maps every dataclass field to one flag (368 fields; 6 flags have no field of their own)", () => {
    assert.strictEqual(catalogue.byField.size, 368)
    const withoutField = catalogue.flags.filter((f) => f.field === null).map((f) => f.flag)
    assert.sameMembers(withoutField, [
      "--hybrid-kvcache-ratio",
      "--collect-tokens-histogram",
      "--prefill-round-robin-balance",
      "--enable-piecewise-cuda-graph",
      "--config"
    ])
    // --stream-output writes incremental_streaming_output but is not its canonical flag.
    assert.strictEqual(
      catalogue.byField.get("incremental_streaming_output")!.flag,
      "--incremental-streaming-output"
    )
    assert.strictEqual(catalogue.byFlag.get("--stream-output")!.field, "incremental_streaming_output")
  })

  it("looks up aliases and --no- spellings", () => {
    assert.strictEqual(catalogue.byFlag.get("--tensor-parallel-size")!.flag, "--tp-size")
    assert.strictEqual(catalogue.byFlag.get("--ep")!.flag, "--ep-size")
    assert.strictEqual(catalogue.byFlag.get("--model")!.field, "model_path")
    assert.strictEqual(catalogue.byFlag.get("--no-lora-strict-loading")!.flag, "--lora-strict-loading")
    assert.strictEqual(catalogue.byFlag.get("--fp8-gemm-backend")!.field, "fp8_gemm_runner_backend")
    assert.isFalse(catalogue.byFlag.has("--no-trust-remote-code"))
  })

  it("marks the human-readable int flags and the nargs=? const", () => {
    const human = catalogue.flags.filter((f) => f.humanReadable === true).map((f) => f.flag)
    assert.sameMembers(human, ["--context-length", "--max-total-tokens", "--max-prefill-tokens"])
    assert.strictEqual(catalogue.byFlag.get("--model-checksum")!.const, "")
  })

  it.effect("forVersion finds 0.5.11 exactly, with or without a leading v", () =>
    Effect.gen(function* () {
      const exact = yield* Catalogue.forVersion("0.5.11")
      assert.isTrue(exact.exact)
      assert.strictEqual(exact.catalogue, catalogue)
      assert.isNull(exact.warning)
      assert.isTrue((yield* Catalogue.forVersion("v0.5.11")).exact)
    })
  )
})

describe("ServerArgs", () => {
  const valid = (value: unknown) => Either.isRight(Schema.decodeUnknownEither(ServerArgs.ServerArgs)(value))

  it("defaults match the catalogue and pass the schema once a model path is set", () => {
    const defaults = ServerArgs.defaults()
    assert.strictEqual(Object.keys(defaults).length, 368)
    assert.strictEqual(defaults.tp_size, 1)
    assert.strictEqual(defaults.port, 30000)
    assert.isNull(defaults.model_path)
    assert.isFalse(valid(defaults))
    assert.isTrue(valid(ServerArgs.make({ model_path: "/m" })))
  })

  it("the schema rejects values outside a field's choices or type", () => {
    const args = ServerArgs.make({ model_path: "/m" })
    assert.isFalse(valid({ ...args, speculative_algorithm: "MEDUSA" }))
    assert.isTrue(valid({ ...args, speculative_algorithm: "NEXTN" }))
    assert.isFalse(valid({ ...args, tp_size: 1.5 }))
    assert.isFalse(valid({ ...args, tp_size: null }))
    assert.isTrue(valid({ ...args, mem_fraction_static: 0.8 }))
    assert.isFalse(valid({ ...args, log_requests_level: 7 }))
  })
})
