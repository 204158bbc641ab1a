/**
 * Each signature lists the wordings it was checked against (by emitter and version): each of
 * them, pasted alone as a log, is named by that signature's class.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Classifier from "../../../src/Classifier.js"
import { signatures } from "../../../src/internal/logs/signatures/index.js"

describe("signatures", () => {
  it("have unique ids and at least one wording each", () => {
    assert.strictEqual(new Set(signatures.map((s) => s.id)).size, signatures.length)
    for (const s of signatures) assert.isAbove(s.variants.length, 0, s.id)
  })

  for (const signature of signatures) {
    it(`${signature.id}: every listed wording is a ${signature.tag}`, () => {
      for (const variant of signature.variants) {
        const { failure } = Classifier.classifyText(variant.text)
        assert.strictEqual(failure?._tag, signature.tag, `${variant.from}: ${variant.text}`)
      }
    })
  }
})
