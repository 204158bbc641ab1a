/**
 * Following a starting server: its log through the classifier (every event reported as it
 * happens, phase timings on the Clock), raced against the death of its process group, a
 * stall timer (no new phase for `stallTimeout`) and the overall cap. Ends with "ready" or a
 * typed failure; the log is read to its end after a death so the traceback is never missed.
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import * as LogTail from "@mlops/core/LogTail"
import * as RemoteProcess from "@mlops/core/RemoteProcess"
import { Clock, Duration, Effect, Schedule, Stream } from "effect"
import * as Classifier from "../../Classifier.js"
import type { PhaseTiming } from "../../Deployment.js"
import type { LaunchFailure } from "../../Failures.js"
import type { LaunchEvent } from "../../LaunchEvent.js"
import { LaunchTimedOut } from "./types.js"

export type Outcome =
  | { readonly _tag: "Ready"; readonly phases: ReadonlyArray<PhaseTiming> }
  | { readonly _tag: "Failed"; readonly failure: LaunchFailure; readonly phases: ReadonlyArray<PhaseTiming> }

const decoder = new TextDecoder()

export const follow = Effect.fn("Launch.follow")(function* (
  conn: Connection,
  proc: RemoteProcess.DetachedProcess,
  o: {
    readonly name: string
    readonly fromOffset: number
    readonly startedAt: number
    readonly stallTimeout: Duration.Duration
    /** Epoch ms by which the whole launch must be ready, and the cap it came from. */
    readonly deadline: number
    readonly overallMs: number
    readonly emit: (event: LaunchEvent, elapsedMs: number) => Effect.Effect<void>
  }
) {
  const classifier = Classifier.make()
  const phases: Array<PhaseTiming> = []
  let nextOffset = o.fromOffset
  let lastProgressAt = yield* Clock.currentTimeMillis
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

  const untilReady = LogTail.follow(proc.host, proc.logPath, {
    fromOffset: o.fromOffset,
    pollInterval: "100 millis"
  }).pipe(
    Stream.mapEffect((line) =>
      Effect.suspend(() => {
        nextOffset = line.nextOffset
        return feed(line.text)
      }).pipe(Effect.map(() => classifier.isReady()))
    ),
    Stream.takeUntil((ready) => ready),
    Stream.runDrain,
    Effect.as({ _tag: "Ready" as const })
  )

  // kill -0 first: a previous attempt's exit file must not count
  const death = RemoteProcess.isAlive(conn, proc).pipe(
    Effect.repeat({ schedule: Schedule.spaced("500 millis"), until: (alive) => !alive }),
    Effect.zipRight(RemoteProcess.exitStatus(conn, proc)),
    Effect.map((exit) => ({ _tag: "Died" as const, exit }))
  )

  const stall = Effect.gen(function* () {
    for (;;) {
      yield* Effect.sleep("1 second")
      const silent = (yield* Clock.currentTimeMillis) - lastProgressAt
      if (silent >= Duration.toMillis(o.stallTimeout)) return { _tag: "Stalled" as const, silentMs: silent }
    }
  })

  const first = yield* Effect.raceAll([untilReady, death, stall]).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(Math.max(0, o.deadline - lastProgressAt)),
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
  switch (first._tag) {
    case "Ready":
      return { _tag: "Ready", phases } satisfies Outcome
    case "Stalled":
      return { _tag: "Failed", failure: classifier.stalled(first.silentMs), phases } satisfies Outcome
    case "Died": {
      // read what the follower had not reached yet: the traceback is usually there
      const size = (yield* conn.files.stat(proc.logPath))?.size ?? nextOffset
      if (size > nextOffset) {
        const rest = decoder.decode(
          yield* conn.files.read(proc.logPath, { offset: nextOffset, length: size - nextOffset })
        )
        const lines = rest.split("\n")
        if (lines.at(-1) === "") lines.pop()
        yield* Effect.forEach(lines, feed, { discard: true })
      }
      const exit = first.exit
      const failure = classifier.finish(
        exit === undefined
          ? { signal: "KILL" }
          : {
              ...(exit.exitCode === null ? {} : { exitCode: exit.exitCode }),
              ...(exit.signal === null ? {} : { signal: exit.signal })
            }
      )
      return {
        _tag: "Failed",
        failure: failure ?? classifier.finish({ exitCode: exit?.exitCode ?? 1 }) ?? classifier.stalled(0),
        phases
      } satisfies Outcome
    }
  }
})
