import * as Terminal from "@effect/platform/Terminal"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Platform from "../src/Platform.js"

/** Counts reads of `process.stdin` (Node creates the stream on the first) while `program` runs. */
const countingStdinReads = <A, E, R>(program: (reads: () => number) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const original = Object.getOwnPropertyDescriptor(process, "stdin")!
      let reads = 0
      Object.defineProperty(process, "stdin", {
        configurable: true,
        enumerable: original.enumerable ?? true,
        get() {
          reads++
          return original.get!.call(process)
        }
      })
      return { original, reads: () => reads }
    }),
    ({ reads }) => program(reads),
    ({ original }) => Effect.sync(() => Object.defineProperty(process, "stdin", original))
  )

describe("Platform", () => {
  it.scoped("the terminal opens standard input on first use, not when the layer is built", () =>
    countingStdinReads((reads) =>
      Effect.gen(function* () {
        const context = yield* Layer.build(Platform.lazyTerminal)
        const terminal = Effect.provide(Terminal.Terminal, Layer.succeedContext(context))
        assert.strictEqual(reads(), 0)
        const columns = yield* Effect.flatMap(terminal, (t) => t.columns)
        assert.isAtLeast(columns, 0)
        assert.isAbove(reads(), 0)
      })
    )
  )
})
