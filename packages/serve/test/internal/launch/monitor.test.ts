/**
 * What "done" means is a parameter of following: a job is done when it exits 0, a server when
 * it is ready; following, classification and killing what is left are the same code. Driven on
 * the fake host with a detached process group (the plain placement) running a trainer-like
 * program.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import { FakeHost } from "@mlops/core/testing"
import { Clock, Duration, Effect } from "effect"
import type { GpuPlan } from "../../../src/Engine.js"
import * as Monitor from "../../../src/internal/launch/monitor.js"
import * as Session from "../../../src/internal/launch/session.js"
import type { LaunchEvent } from "../../../src/LaunchEvent.js"
import * as ProcessGroupPlacement from "../../../src/ProcessGroupPlacement.js"
import * as Workload from "../../../src/Workload.js"

const OOM_TRACEBACK = [
  "Traceback (most recent call last):",
  '  File "/work/train.py", line 88, in <module>',
  "    loss.backward()",
  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 MiB. GPU 0 has a total capacity of 31.35 GiB of which 25.50 MiB is free."
]

/** `trainer STEPS EXIT [STEP_MS]`: prints its steps, then the OOM traceback when EXIT is not 0, and exits with it. */
const trainer: FakeHost.Program = {
  match: "trainer",
  run: (ctx) =>
    Effect.gen(function* () {
      const steps = Number(ctx.argv[1] ?? "3")
      const exit = Number(ctx.argv[2] ?? "0")
      const stepMs = Number(ctx.argv[3] ?? "20")
      for (let step = 1; step <= steps; step++) {
        yield* ctx.stdout.line(`step ${step}/${steps} loss ${(2 / step).toFixed(3)}`)
        // real time: a detached fake process may run on the fake host's own clock
        yield* Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, stepMs)))
      }
      if (exit !== 0) for (const line of OOM_TRACEBACK) yield* ctx.stderr.line(line)
      return exit
    })
}

const host = FakeHost.layer([{ alias: "box", user: "ml", home: "/home/ml", programs: [trainer] }])

const plan: GpuPlan = { total: 1, nodes: 1, perNode: 1, first: 0, step: 1, elsewhere: "", fewer: () => "" }

/** Start `trainer steps exit` as a detached group and follow it with `workload`. */
const runJob = <E, R>(
  steps: number,
  exit: number,
  workload: Workload.Workload<E, R>,
  options: { readonly stepMs?: number; readonly stallTimeout?: Duration.DurationInput } = {}
) =>
  Effect.gen(function* () {
    const conn = yield* (yield* ConnectionPool).get("box")
    const placement = yield* ProcessGroupPlacement.kind.make(ProcessGroupPlacement.spec, conn.host)
    const runDir = `/home/ml/.mlops/jobs/t-${steps}-${exit}-${options.stepMs ?? 20}`
    const placed = yield* placement.spawn(
      "box",
      [
        {
          _tag: "OnHost",
          command: RemoteCommand.make(["trainer", String(steps), String(exit), String(options.stepMs ?? 20)]),
          shown: "trainer"
        }
      ],
      {
        runDir,
        logPath: `${runDir}/log`,
        token: "t",
        name: "t",
        gpus: plan,
        paths: { model: undefined, caches: [] }
      }
    )
    const now = yield* Clock.currentTimeMillis
    const session = yield* Session.make({
      alias: "box",
      deadline: now + 60_000,
      startedAt: now,
      onDisconnected: () => Effect.void,
      onReconnected: () => Effect.void
    })
    const events: Array<LaunchEvent> = []
    const outcome = yield* Monitor.follow(session, placed, {
      workload,
      name: "t",
      fromOffset: 0,
      startedAt: now,
      stallTimeout: Duration.decode(options.stallTimeout ?? "30 seconds"),
      overallMs: 60_000,
      emit: (event) => Effect.sync(() => void events.push(event)),
      onState: () => Effect.void
    })
    return { outcome, events, placed, conn }
  })

describe("following with a workload", () => {
  it.live("a job is done when it exits 0", () =>
    Effect.gen(function* () {
      const { outcome, placed, conn } = yield* runJob(3, 0, Workload.job())
      assert.strictEqual(outcome._tag, "Done")
      assert.isFalse(yield* placed.isAlive(conn))
    }).pipe(Effect.provide(host))
  )

  it.live("a job that exits non-zero fails with what its log says (the classifier's CUDA OOM)", () =>
    Effect.gen(function* () {
      const { outcome, events } = yield* runJob(2, 1, Workload.job())
      assert.strictEqual(outcome._tag, "Failed")
      if (outcome._tag !== "Failed") return
      assert.strictEqual(outcome.failure._tag, "OOM")
      // the log was read to its end: the traceback is the evidence
      assert.isTrue(
        outcome.failure.evidence.some((line) => line.text.includes("CUDA out of memory")),
        JSON.stringify(outcome.failure.evidence)
      )
      // and its progress reached the events as it came
      assert.include(
        events.map((e) => e._tag),
        "PhaseStarted"
      )
      assert.isTrue(outcome.exited)
      // a process group's report is the classifier's failure itself
      assert.strictEqual(outcome.reported, outcome.failure)
    }).pipe(Effect.provide(host))
  )

  it.live("the same exit 0 from a server is a failure: a server is done only when ready", () =>
    Effect.gen(function* () {
      const server = Workload.server({ engine: "none", signatures: [] }, Effect.void)
      const { outcome } = yield* runJob(2, 0, server)
      assert.strictEqual(outcome._tag, "Failed")
      if (outcome._tag !== "Failed") return
      assert.strictEqual(outcome.failure._tag, "ProcessExited")
    }).pipe(Effect.provide(host))
  )

  it.live(
    "a job's lines are its progress: steady steps are not a stall, silence longer than the stall timeout is",
    () =>
      Effect.gen(function* () {
        // a step every 400 ms, for longer than the 1 s stall timeout in all
        const steady = yield* runJob(5, 0, Workload.job(), { stepMs: 400, stallTimeout: "1 second" })
        assert.strictEqual(steady.outcome._tag, "Done")
        // one line, then 4 s of silence
        const silent = yield* runJob(2, 0, Workload.job(), { stepMs: 4000, stallTimeout: "1 second" })
        assert.strictEqual(silent.outcome._tag, "Failed")
        if (silent.outcome._tag !== "Failed") return
        assert.strictEqual(silent.outcome.failure._tag, "StartupStalled")
        assert.isFalse(silent.outcome.exited, "a stall leaves it running: the caller stops it")
        assert.isTrue(yield* silent.placed.isAlive(silent.conn))
        assert.strictEqual(yield* silent.placed.stop(silent.conn, "1 second"), "terminated")
      }).pipe(Effect.provide(host))
  )
})
