/**
 * Running programs on fake hosts under a `TestClock`: advance it while an effect runs, with
 * event-loop turns between steps (a fake host's HTTP goes through real loopback sockets).
 *
 * @since 0.1.0
 */
import { type Duration, Effect, Fiber, Option, TestClock } from "effect"

const turn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** Run `effect`, advancing the TestClock by `step` per event-loop turn until it ends. */
export const drive = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: { readonly step?: Duration.DurationInput; readonly maxSteps?: number } = {}
): Effect.Effect<A, E, R> =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(effect)
    for (let i = 0; i < (options.maxSteps ?? 20_000); i++) {
      const done = yield* Fiber.poll(fiber)
      if (Option.isSome(done)) return yield* done.value
      yield* turn
      yield* TestClock.adjust(options.step ?? "100 millis")
    }
    yield* Fiber.interrupt(fiber)
    return yield* Effect.dieMessage("the effect did not finish in the simulated time allowed")
  })

/** Advance simulated time by `total` in steps, yielding to real I/O between them. */
export const advance = (total: number, step = 100) =>
  Effect.gen(function* () {
    for (let t = 0; t < total; t += step) {
      yield* turn
      yield* TestClock.adjust(step)
    }
  })
