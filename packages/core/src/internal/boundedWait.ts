/**
 * A timeout that also holds where the effect runs uninterruptibly (a scope's release, a
 * finalizer, an `onInterrupt`): there `Effect.timeout` alone cannot end the wait, so the waited
 * part is made interruptible first.
 *
 * @internal
 */
import { type Duration, Effect } from "effect"
import type { TimeoutException } from "effect/Cause"

export const boundedWait =
  (duration: Duration.DurationInput) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | TimeoutException, R> =>
    effect.pipe(Effect.interruptible, Effect.timeout(duration))
