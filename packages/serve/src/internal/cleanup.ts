/**
 * Cleanup that talks to a host from an interrupted fiber (a launch's `stopOnInterrupt`).
 * Interruption handlers run uninterruptibly, and inside an uninterruptible region a timeout
 * cannot cancel what it guards: a command on a dead connection would wait forever instead of
 * failing after its timeout. So the work runs in a fresh, interruptible fiber (no pending
 * interruption of its own) and is awaited; its own timeouts bound it.
 *
 * @internal
 */
import { Effect, Fiber } from "effect"

export const boundedCleanup = <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.forkDaemon(Effect.interruptible(work)), Fiber.join)
