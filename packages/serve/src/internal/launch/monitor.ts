/**
 * Following a starting server: its log through the classifier (every event reported as it
 * happens, phase timings on the Clock) up to the ready line and then the readiness checks,
 * raced against the death of its launcher (the `exit` file, polled as a cheap file read), a
 * stall timer (no new phase for `stallTimeout`) and the overall cap. Ends with "ready" or a
 * typed failure. After a death the rest of its group is killed (no grace: it crashed) while
 * the log is read to its end, so the traceback is never missed and nothing is left running
 * when the failure is returned.
 *
 * Every remote step goes through the launch's session: when the connection drops, the death
 * watchers, the log follow and readiness all carry on once it is back, so a crash that
 * happened meanwhile is read from the `exit` file and the log as soon as the host answers
 * again, and the outage itself never counts as a stall.
 *
 * @internal
 */
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as LogTail from "@mlops/core/LogTail"
import type { SlurmJob } from "@mlops/core/SlurmJob"
import { Clock, Duration, Effect, Option, Stream } from "effect"
import * as Classifier from "../../Classifier.js"
import type { PhaseTiming } from "../../Deployment.js"
import type { Engine } from "../../Engine.js"
import type { LaunchFailure } from "../../Failures.js"
import type { LaunchEvent } from "../../LaunchEvent.js"
import type * as Placement from "../../Placement.js"
import type { ReadinessError } from "../../Readiness.js"
import type { Session } from "./session.js"
import { LaunchTimedOut } from "./types.js"

export type Outcome =
  | { readonly _tag: "Ready"; readonly phases: ReadonlyArray<PhaseTiming> }
  | {
      readonly _tag: "Failed"
      readonly failure: LaunchFailure
      readonly phases: ReadonlyArray<PhaseTiming>
      /** The launcher exited (a crash; follow already killed the rest of its group), rather than went silent (a stall: still running). */
      readonly exited: boolean
    }

const decoder = new TextDecoder()

export const follow = Effect.fn("Launch.follow")(function* (
  session: Session,
  proc: Placement.Placed,
  o: {
    readonly engine: Engine
    readonly placement: Placement.Placement
    readonly name: string
    readonly fromOffset: number
    readonly startedAt: number
    readonly stallTimeout: Duration.Duration
    /** The launch's cap (ms), for the error. The deadline is the session's. */
    readonly overallMs: number
    readonly emit: (event: LaunchEvent, elapsedMs: number) => Effect.Effect<void>
    /** A batch job's new state, as the scheduler reports it. */
    readonly onJob?: (job: SlurmJob, elapsedMs: number) => Effect.Effect<void>
    /** Run once the ready line is seen (the HTTP checks); the death watchers keep running meanwhile. */
    readonly readiness: Effect.Effect<void, ReadinessError | Placement.PlacementError, ConnectionPool>
  }
) {
  const classifier = Classifier.make([o.engine.logs])
  const phases: Array<PhaseTiming> = []
  let nextOffset = o.fromOffset
  let lastProgressAt = yield* Clock.currentTimeMillis
  let readyLineSeen = false
  let queued = false
  const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - o.startedAt)

  const feed = (line: string) =>
    Effect.gen(function* () {
      const at = yield* elapsed
      for (const event of classifier.feed(line)) {
        if (event._tag === "PhaseStarted" || event._tag === "PhaseProgress") lastProgressAt = o.startedAt + at
        if (event._tag === "PhaseStarted" && !phases.some((p) => p.phase === event.phase)) {
          phases.push({ phase: event.phase, atMs: at })
        }
        yield* o.emit(event, at)
      }
    })

  const remaining = Effect.map(Clock.currentTimeMillis, (now) => Math.max(0, session.deadline - now))

  const untilReady = LogTail.follow(session.alias, proc.logPath, {
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
        return o.readiness
      })
    ),
    Effect.as({ _tag: "Ready" as const })
  )

  // Core's watch: the `exit` file (written the moment the launcher ends: a crash is seen within
  // one poll) and the group's liveness, both resumed on a new connection after a drop, so a
  // death during an outage is seen by the first poll after it.
  const death = o.placement.watch(session.alias, proc, { reconnect: session.reconnect }).pipe(
    Stream.tap((event) =>
      event._tag === "Disconnected"
        ? session.markDown(event.reason)
        : event._tag === "Reconnected"
          ? session.markUp
          : event._tag === "Job"
            ? // a batch job: waiting in the queue is not a stall, and each new state is progress
              Effect.flatMap(Clock.currentTimeMillis, (now) => {
                queued = event.job.state._tag === "Pending"
                lastProgressAt = now
                return o.onJob === undefined ? Effect.void : o.onJob(event.job, now - o.startedAt)
              })
            : Effect.void
    ),
    Stream.runLast,
    Effect.map((last) => ({
      _tag: "Died" as const,
      exit: Option.isSome(last) && last.value._tag === "Exited" ? last.value.status : undefined
    }))
  )

  // Silence counts from the last progress or the last reconnect, whichever is later, and only
  // while the host can be seen and the server has not printed its ready line.
  const stall = Effect.gen(function* () {
    for (;;) {
      yield* Effect.sleep("1 second")
      if (readyLineSeen || queued || (yield* session.isDown)) continue
      const since = Math.max(lastProgressAt, yield* session.lastReconnectAt)
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
    case "Ready":
      return { _tag: "Ready", phases } satisfies Outcome
    case "Stalled":
      return {
        _tag: "Failed",
        failure: classifier.stalled(first.silentMs),
        phases,
        exited: false
      } satisfies Outcome
    case "Died": {
      // The launcher is gone: kill what is left of its group while reading the log to its end
      // (one read; it no longer grows). The traceback is usually there: feed it at once.
      const readRest = session
        .run((conn) => conn.files.read(proc.logPath, { offset: nextOffset }))
        .pipe(
          Effect.flatMap((bytes) => {
            const lines = decoder.decode(bytes).split("\n")
            if (lines.at(-1) === "") lines.pop()
            return Effect.forEach(lines, feed, { discard: true })
          })
        )
      yield* Effect.all(
        [readRest, Effect.ignore(session.run((conn) => o.placement.kill(conn, proc), { retry: "write" }))],
        { concurrency: 2, discard: true }
      )
      const exit = first.exit
      const failure = classifier.finish(exit ?? { signal: "KILL" })
      return {
        _tag: "Failed",
        failure: failure ?? classifier.finish({ exitCode: exit?.exitCode ?? 1 }) ?? classifier.stalled(0),
        phases,
        exited: true
      } satisfies Outcome
    }
  }
})
