import { assert, describe, it } from "@effect/vitest"
import * as Check from "@mlops/serve/Check"
import { Effect } from "effect"
import * as Facts from "../../src/commands/facts.js"
import * as Engines from "../../src/Engines.js"

describe("the facts the command definitions show", () => {
  it.effect("name the registered engines in the registry's order, with their newest shipped releases", () =>
    Effect.gen(function* () {
      const registry = yield* Engines.registry
      assert.deepStrictEqual(
        Facts.engines,
        registry.map((engine) => ({
          name: engine.name,
          displayName: engine.displayName,
          latestVersion: engine.latestFlags.version
        }))
      )
      assert.strictEqual(registry[0], Engines.first)
      for (const engine of registry) assert.strictEqual(yield* Engines.named(engine.name), engine)
    })
  )

  it("give check's GPU defaults as serve's Check applies them", () => {
    assert.deepStrictEqual(Facts.defaultGpus, Check.defaultGpus)
  })
})
