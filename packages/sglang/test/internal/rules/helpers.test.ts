import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { largestDivisorAtMost } from "../../../src/internal/rules/helpers.js"

const naive = (n: number, limit: number) => {
  for (let d = Math.min(n, limit); d > 1; d--) if (n % d === 0) return d
  return 1
}

describe("largestDivisorAtMost", () => {
  it("is the largest divisor of n not above the limit", () => {
    assert.strictEqual(largestDivisorAtMost(8, 3), 2)
    assert.strictEqual(largestDivisorAtMost(12, 12), 12)
    assert.strictEqual(largestDivisorAtMost(12, 5), 4)
    assert.strictEqual(largestDivisorAtMost(7, 6), 1)
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 1, max: 6000 }),
        (n, limit) => largestDivisorAtMost(n, limit) === naive(n, limit)
      )
    )
  })

  it("stays fast for sizes a random command line can give (2e9 GPUs)", () => {
    // O(sqrt n): about 45k steps, where counting down from n took seconds
    assert.strictEqual(largestDivisorAtMost(2_000_000_014, 3), 2)
    assert.strictEqual(largestDivisorAtMost(1_999_999_973, 1_000_000_000), 1)
    assert.strictEqual(largestDivisorAtMost(16_414_808 * 330_500_707, 5), 4)
  })

  it("is 1 for sizes that are not positive integers", () => {
    assert.strictEqual(largestDivisorAtMost(0, 4), 1)
    assert.strictEqual(largestDivisorAtMost(-8, 4), 1)
    assert.strictEqual(largestDivisorAtMost(8, 0), 1)
  })
})
