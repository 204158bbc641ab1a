/**
 * Following a placed server or job (`Placement.spawn`, `Placement.attach`) from the SDK: the
 * launch's own follow (its log through the classifier, the placement's watch across dropped
 * connections, stall detection, the log read to its end after a death) as a stream of events,
 * until the workload is done (a server: its ready line and the checks after it; a job: exit 0),
 * when the stream ends. When it fails, the stream fails with the failure as its placement
 * reports it, exactly as a launch's: the classifier's root cause (with its fix), which a batch
 * job's placement wraps with the scheduler's word on the end.
 *
 * @since 0.1.0
 */

import type { ConnectionPool, GetError } from "@mlops/core/ConnectionPool"
import type { ConnectionLost } from "@mlops/core/Errors"
import type * as LogTail from "@mlops/core/LogTail"
import { Clock, Duration, Effect, Mailbox, Stream } from "effect"
import type { LaunchFailure } from "./Failures.js"
import * as Monitor from "./internal/launch/monitor.js"
import * as Session from "./internal/launch/session.js"
import type { LaunchTimedOut } from "./internal/launch/types.js"
import type { LaunchEvent } from "./LaunchEvent.js"
import type { Placed, PlacementError } from "./Placement.js"
import type { Workload } from "./Workload.js"

/** @category models */
export type FollowEvent =
  /** The placement's word on it changed (a batch job's `PENDING (Resources)`). */
  | { readonly _tag: "State"; readonly state: string }
  /** A classifier event from its log (phases, progress, warnings). */
  | { readonly _tag: "Log"; readonly event: LaunchEvent }
  /** The connection dropped, or came back after `downMs`: following goes on. */
  | { readonly _tag: "Disconnected"; readonly reason: string }
  | { readonly _tag: "Reconnected"; readonly downMs: number }

/** @category models */
export interface FollowOptions {
  /** No progress for this long fails it as stalled (default 5 minutes; waiting for resources does not count). */
  readonly stallTimeout?: Duration.DurationInput
  /** Give up after this long (default 24 hours). */
  readonly timeout?: Duration.DurationInput
}

/** What following fails with besides the workload's and the placement's own errors: the connection given up on, the log unreadable, the cap. @category models */
export type FollowError = GetError | ConnectionLost | LogTail.FollowError | LaunchTimedOut

/**
 * The events of `placed` until `workload` is done (the stream ends) or it fails (the stream
 * fails with the failure as its placement reports it).
 *
 * @category following
 */
export const follow = <P extends PlacementError, W, R>(
  placed: Placed<P>,
  workload: Workload<W, R>,
  options: FollowOptions = {}
): Stream.Stream<FollowEvent, LaunchFailure | P | W | FollowError, R | ConnectionPool> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const mailbox = yield* Mailbox.make<FollowEvent, LaunchFailure | P | W | FollowError>({
        capacity: 256,
        strategy: "suspend"
      })
      const offer = (event: FollowEvent) => Effect.asVoid(mailbox.offer(event))
      const now = yield* Clock.currentTimeMillis
      const capMs = Duration.toMillis(options.timeout ?? "24 hours")
      const session = yield* Session.make({
        alias: placed.host,
        deadline: now + capMs,
        startedAt: now,
        onDisconnected: (reason) => offer({ _tag: "Disconnected", reason }),
        onReconnected: (downMs) => offer({ _tag: "Reconnected", downMs })
      })
      const followed = Monitor.follow(session, placed, {
        workload,
        name: placed.server.label,
        fromOffset: 0,
        startedAt: now,
        stallTimeout: Duration.decode(options.stallTimeout ?? "5 minutes"),
        overallMs: capMs,
        emit: (event) => offer({ _tag: "Log", event }),
        onState: (state) => offer({ _tag: "State", state })
      }).pipe(
        Effect.flatMap((outcome) => (outcome._tag === "Done" ? Effect.void : Effect.fail(outcome.reported)))
      )
      yield* followed.pipe(
        Effect.exit,
        Effect.flatMap((exit) => mailbox.done(exit)),
        Effect.forkScoped
      )
      return Mailbox.toStream(mailbox)
    })
  )
