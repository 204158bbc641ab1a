import { assert, describe, it } from "@effect/vitest"
import * as Check from "@mlops/serve/Check"
import * as Facts from "../../src/commands/facts.js"
import * as Engines from "../../src/Engines.js"

describe("the facts the command definitions show", () => {
  it("name the registered engines in the registry's order, with their newest shipped releases", () => {
    assert.deepStrictEqual(
      Facts.engines,
      Engines.registry.map((engine) => ({
        name: engine.name,
        displayName: engine.displayName,
        latestVersion: engine.latestFlags.version
      }))
    )
    assert.deepStrictEqual(Facts.engineNames, Engines.names)
  })

  it("give check's GPU defaults as serve's Check applies them", () => {
    assert.deepStrictEqual(Facts.defaultGpus, Check.defaultGpus)
  })
})
