/**
 * Following what a placement started until the workload is done: its log through the
 * classifier (every event reported as it happens, phase timings on the Clock), raced against
 * the placement's watch (a process group's `exit` file, polled as a cheap file read; a batch
 * job's states), a stall timer (no progress for `stallTimeout`) and the overall cap. A server
 * is done at its ready line and the readiness checks after it; a job when it exits 0 (see
 * `Workload`). Ends with "done" or a typed failure: the classifier's, and the same as the
 * placement reports it. After a death what is left of it is killed (no grace: it crashed)
 * while the log is read to its end, so the traceback is never missed and nothing is left
 * running when the failure is returned.
 *
 * Every remote step goes through the launch's session: when the connection drops, the death
 * watchers, the log follow and readiness all carry on once it is back, so a crash that
 * happened meanwhile is read from the `exit` file and the log as soon as the host answers
 * again, and the outage itself never counts as a stall.
 *
 * @internal
 */
import type * as ConnectionPool from "@mlops/core/ConnectionPool"
import type { ConnectionLost } from "@mlops/core/Errors"
import * as LogTail from "@mlops/core/LogTail"
import { Clock, Duration, Effect, Option, Ref, Stream } from "effect"
import * as Classifier from "../../Classifier.js"
import type { PhaseTiming } from "../../Deployment.js"
import type { LaunchFailure } from "../../Failures.js"
import type { LaunchEvent } from "../../LaunchEvent.js"
import type * as Placement from "../../Placement.js"
import * as Workload from "../../Workload.js"
import type { Session } from "./session.js"
import { LaunchTimedOut } from "./types.js"

export type Outcome<E> =
  | { readonly _tag: "Done"; readonly phases: ReadonlyArray<PhaseTiming> }
  | {
      readonly _tag: "Failed"
      /** The classifier's failure (its fix drives auto-fix). */
      readonly failure: LaunchFailure
      /** The failure as the placement reports it (a batch job's end carries the classifier's). */
      readonly reported: LaunchFailure | E
      readonly phases: ReadonlyArray<PhaseTiming>
      /** It exited (a crash; follow already killed what was left of it), rather than went silent (a stall: still running). */
      readonly exited: boolean
    }

const decoder = new TextDecoder()

export const follow = <P extends Placement.PlacementError, E, R>(
  session: Session,
  proc: Placement.Placed<P>,
  o: {
    readonly workload: Workload.Workload<E, R>
    readonly name: string
    readonly fromOffset: number
    readonly startedAt: number
    readonly stallTimeout: Duration.Duration
    /** The launch's cap (ms), for the error. The deadline is the session's. */
    readonly overallMs: number
    readonly emit: (event: LaunchEvent, elapsedMs: number) => Effect.Effect<void>
    /** The placement's new word on it (a batch job's `PENDING (Resources)`). */
    readonly onState: (state: string, elapsedMs: number) => Effect.Effect<void>
    /** Each line of the log as it is read, before the classifier's events for it (a job shows its output). */
    readonly onLine?: (line: string, elapsedMs: number) => Effect.Effect<void>
    /**
     * Progress shared with the other ranks of a deployment across hosts (epoch ms of the latest):
     * one rank waiting at a barrier while another loads is not stalled.
     */
    readonly sharedProgress?: Ref.Ref<number>
  }
): Effect.Effect<
  Outcome<P>,
  E | P | ConnectionPool.GetError | LogTail.FollowError | LaunchTimedOut | ConnectionLost,
  R | ConnectionPool.ConnectionPool
> =>
  Effect.gen(function* () {
    const classifier = Classifier.make(o.workload.logs)
    const phases: Array<PhaseTiming> = []
    let nextOffset = o.fromOffset
    let lastProgressAt = yield* Clock.currentTimeMillis
    let readyLineSeen = false
    let queued = false
    const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - o.startedAt)

    const progressed = (at: number) =>
      Effect.suspend(() => {
        lastProgressAt = o.startedAt + at
        return o.sharedProgress === undefined
          ? Effect.void
          : Ref.update(o.sharedProgress, (latest) => Math.max(latest, o.startedAt + at))
      })
    const feed = (line: string) =>
      Effect.gen(function* () {
        const at = yield* elapsed
        if (o.onLine !== undefined) yield* o.onLine(line, at)
        if (o.workload.isProgress({ _tag: "Line" })) yield* progressed(at)
        for (const event of classifier.feed(line)) {
          if (o.workload.isProgress(event)) yield* progressed(at)
          if (event._tag === "PhaseStarted" && !phases.some((p) => p.phase === event.phase)) {
            phases.push({ phase: event.phase, atMs: at })
          }
          yield* o.emit(event, at)
        }
      })

    const remaining = Effect.map(Clock.currentTimeMillis, (now) => Math.max(0, session.deadline - now))

    const done = o.workload.done
    // a server: its ready line, then the checks (the death watchers keep running meanwhile); a
    // job is never done from its log
    const untilReady =
      done._tag === "Ready"
        ? LogTail.follow(session.alias, proc.logPath, {
            fromOffset: o.fromOffset,
            pollInterval: "100 millis",
            reconnect: session.reconnect
          }).pipe(
            Stream.mapEffect((line) =>
              Effect.suspend(() => {
                nextOffset = line.nextOffset
                return feed(line.text)
              }).pipe(Effect.map(() => classifier.isReady()))
            ),
            Stream.takeUntil((ready) => ready),
            Stream.runDrain,
            Effect.zipRight(
              Effect.suspend(() => {
                readyLineSeen = true
                return done.checks
              })
            ),
            Effect.as({ _tag: "Done" as const })
          )
        : LogTail.follow(session.alias, proc.logPath, {
            fromOffset: o.fromOffset,
            pollInterval: "100 millis",
            reconnect: session.reconnect
          }).pipe(
            Stream.runForEach((line) =>
              Effect.suspend(() => {
                nextOffset = line.nextOffset
                return feed(line.text)
              })
            ),
            Effect.zipRight(Effect.never)
          )

    // The placement's watch: a process group's `exit` file (written the moment it ends: a crash
    // is seen within one poll) and its liveness, a batch job's states; resumed on a new
    // connection after a drop, so a death during an outage is seen by the first poll after it.
    const death = proc.watch(session.alias, { reconnect: session.reconnect }).pipe(
      Stream.tap((event) =>
        event._tag === "Disconnected"
          ? session.markDown(event.reason)
          : event._tag === "Reconnected"
            ? session.markUp
            : event._tag === "State"
              ? // waiting for resources is not a stall, and each new state is progress
                Effect.flatMap(Clock.currentTimeMillis, (now) => {
                  queued = event.waiting
                  lastProgressAt = now
                  return o.onState(event.state, now - o.startedAt)
                })
              : Effect.void
      ),
      Stream.runLast,
      Effect.map((last) =>
        Option.isSome(last) && last.value._tag === "Exited"
          ? { _tag: "Died" as const, exit: last.value.status, report: last.value.report }
          : { _tag: "Died" as const, exit: undefined, report: undefined }
      )
    )

    // Silence counts from the last progress or the last reconnect, whichever is later, and only
    // while the host can be seen and the server has not printed its ready line.
    const stall = Effect.gen(function* () {
      for (;;) {
        yield* Effect.sleep("1 second")
        if (readyLineSeen || queued || (yield* session.isDown)) continue
        const shared = o.sharedProgress === undefined ? 0 : yield* Ref.get(o.sharedProgress)
        const since = Math.max(lastProgressAt, shared, yield* session.lastReconnectAt)
        const silent = (yield* Clock.currentTimeMillis) - since
        if (silent >= Duration.toMillis(o.stallTimeout)) return { _tag: "Stalled" as const, silentMs: silent }
      }
    })

    // the first to END wins, failing included (readiness refused, the watch giving up): the
    // others are interrupted
    const ended = yield* Effect.raceAll([
      Effect.either(untilReady),
      Effect.either(death),
      Effect.either(stall)
    ]).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(yield* remaining),
        onTimeout: () =>
          new LaunchTimedOut({
            host: proc.host,
            name: o.name,
            timeoutMs: o.overallMs,
            phase: classifier.phase(),
            fix: "raise overallTimeout if this model is known to start slowly, or look at the log for what it waits on"
          })
      })
    )
    const first = yield* ended
    switch (first._tag) {
      case "Done":
        return { _tag: "Done", phases } satisfies Outcome<P>
      case "Stalled": {
        const failure = classifier.stalled(first.silentMs)
        return { _tag: "Failed", failure, reported: failure, phases, exited: false } satisfies Outcome<P>
      }
      case "Died": {
        // It ended: kill what is left of it while reading the log to its end (one read; it no
        // longer grows). The traceback is usually there: feed it at once.
        const readRest = session
          .run((conn) => conn.files.read(proc.logPath, { offset: nextOffset }))
          .pipe(
            Effect.flatMap((bytes) => {
              const lines = decoder.decode(bytes).split("\n")
              if (lines.at(-1) === "") lines.pop()
              return Effect.forEach(lines, feed, { discard: true })
            })
          )
        const exit = first.exit
        // a job that exited 0 is done: its last lines still reach the events
        if (done._tag === "ExitedZero" && Workload.exitedZero(exit)) {
          yield* readRest
          return { _tag: "Done", phases } satisfies Outcome<P>
        }
        yield* Effect.all(
          [readRest, Effect.ignore(session.run((conn) => proc.kill(conn), { retry: "write" }))],
          { concurrency: 2, discard: true }
        )
        // it ended before it was done: whatever its exit, that is the failure (a server's exit 0 too)
        const failure = classifier.endedEarly(exit ?? { signal: "KILL" })
        const reported = first.report === undefined ? failure : (first.report(failure) ?? failure)
        return { _tag: "Failed", failure, reported, phases, exited: true } satisfies Outcome<P>
      }
    }
  }).pipe(Effect.withSpan("Launch.follow"))
