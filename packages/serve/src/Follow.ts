/**
 * Following a placed server (`Placement.spawn`, `Placement.attach`) from the SDK: its log
 * through the same classifier as a launch, merged with its placement's states (a batch job's
 * `PENDING (Resources)`, `RUNNING on gpu01`). When it ends, the stream fails with the failure
 * as its placement reports it: the classifier's root cause (with its fix), which a batch job's
 * placement wraps with the scheduler's word on the end (its final state and exit code), exactly as a launch's failure reads.
 *
 * @since 0.1.0
 */

import type { ConnectionPool, GetError } from "@mlops/core/ConnectionPool"
import * as LogTail from "@mlops/core/LogTail"
import { Effect, Stream } from "effect"
import * as Classifier from "./Classifier.js"
import type { LaunchFailure } from "./Failures.js"
import type { LaunchEvent } from "./LaunchEvent.js"
import type { Placed } from "./Placement.js"

/** @category models */
export type FollowEvent =
  | { readonly _tag: "State"; readonly state: string; readonly waiting: boolean }
  | { readonly _tag: "Log"; readonly event: LaunchEvent }

/** @category models */
export interface FollowOptions {
  /** The engines whose lines and signatures the classifier reads. */
  readonly engines: ReadonlyArray<Classifier.EngineLogs>
  /** After it ended, how long the log may still bring its last lines (default 500 ms). */
  readonly drain?: `${number} millis`
}

/**
 * Its states and the classified log until it ends (then the failure as its placement reports
 * it). End it earlier with Stream combinators (`takeUntil` a `Ready` log event).
 *
 * @category following
 */
export const follow = <E>(
  placed: Placed<E>,
  options: FollowOptions
): Stream.Stream<FollowEvent, LaunchFailure | E | GetError | LogTail.FollowError, ConnectionPool> =>
  Stream.suspend(() => {
    const classifier = Classifier.make(options.engines)
    let reported: LaunchFailure | undefined
    const log = LogTail.follow(placed.host, placed.logPath).pipe(
      Stream.mapConcat((line) =>
        classifier.feed(line.text).map((event): FollowEvent => {
          if (event._tag === "Failed") reported = event.failure
          return { _tag: "Log", event }
        })
      )
    )
    const states = placed.watch(placed.host).pipe(
      Stream.flatMap(
        (event): Stream.Stream<FollowEvent, LaunchFailure | E> =>
          event._tag === "State"
            ? Stream.make({ _tag: "State" as const, state: event.state, waiting: event.waiting })
            : event._tag === "Exited"
              ? Stream.fromEffect(
                  Effect.gen(function* () {
                    // the log follower polls every 100 ms: let it bring the last lines
                    yield* Effect.sleep(options.drain ?? "500 millis")
                    const failure =
                      classifier.finish(event.status ?? { signal: "KILL" }) ??
                      reported ??
                      classifier.endedEarly(event.status ?? { signal: "KILL" })
                    return yield* Effect.fail(event.report(failure) ?? failure)
                  })
                )
              : Stream.empty
      )
    )
    return Stream.merge(states, log, { haltStrategy: "left" })
  })
