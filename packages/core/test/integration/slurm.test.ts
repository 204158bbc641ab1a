/**
 * The Slurm service against a real Slurm 22.05 (test/support/Slurm.ts) through the harness sshd
 * as its login node. MinJobAge=2, so a finished job soon leaves the controller too and only
 * `sacct -c` (the jobcomp file) still knows it.
 */
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Chunk, Deferred, Duration, Effect, Fiber, Layer, Schedule, Stream } from "effect"
import { ConnectionPool } from "../../src/ConnectionPool.js"
import * as Slurm from "../../src/Slurm.js"
import { describeState, type SlurmJob } from "../../src/SlurmJob.js"
import * as LivePool from "../support/LivePool.js"
import * as TestSlurm from "../support/Slurm.js"
import { TestSshd } from "../support/Sshd.js"

const cluster = TestSlurm.loginNode({ minJobAge: 2 })
const services = Slurm.layer.pipe(Layer.provideMerge(LivePool.layer()), Layer.provideMerge(cluster))

let scripts = 0
/** A job script written over SSH into the cluster's (shared) directory; its output goes to `<name>.out`. */
const script = (name: string, body: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const sshd = yield* TestSshd
    const slurm = yield* TestSlurm.TestSlurm
    const conn = yield* (yield* ConnectionPool).get(sshd.hostConfig.alias)
    const file = path.join(slurm.dir, `${name}-${++scripts}.sh`)
    yield* conn.files.write(
      file,
      [
        "#!/bin/sh",
        `#SBATCH --job-name=${name}`,
        `#SBATCH --output=${file}.out`,
        "#SBATCH --no-requeue",
        ...body,
        ""
      ].join("\n")
    )
    return file
  })

/** Poll `Slurm.job` until `until` holds (at most ~40 s; Slurm schedules within seconds). */
const waitFor = (id: string, until: (job: SlurmJob) => boolean) =>
  Effect.gen(function* () {
    const slurm = yield* Slurm.Slurm
    for (let i = 0; ; i++) {
      const job = yield* slurm.job("testhost", id)
      if (until(job) || i >= 160) return job
      yield* Effect.sleep("250 millis")
    }
  })

const queued = Effect.flatMap(TestSlurm.TestSlurm, (c) => c.client("squeue", ["-h", "-o", "%i %j"]))

layer(services, { excludeTestServices: true, timeout: Duration.minutes(2) })(
  "Slurm service on a real cluster",
  (it) => {
    it.effect(
      "preflight passes a request that fits and refuses more GPUs than the node has, before sbatch",
      () =>
        Effect.gen(function* () {
          const slurm = yield* Slurm.Slurm
          const c = yield* TestSlurm.TestSlurm
          const ok = yield* slurm.preflight("testhost", { gpus: 2 })
          assert.deepStrictEqual(ok, {
            partition: c.partition,
            maxTime: "UNLIMITED",
            nodes: [c.node],
            largestNode: 2
          })
          const before = yield* queued
          const refused = yield* Effect.flip(slurm.preflight("testhost", { gpus: 3 }))
          assert.strictEqual(refused._tag, "SlurmPreflightFailed")
          if (refused._tag !== "SlurmPreflightFailed") return
          assert.deepStrictEqual(refused.problems, [
            {
              _tag: "NotEnoughGpus",
              partition: c.partition,
              gres: "gpu",
              requested: 3,
              largestNode: 2,
              elsewhere: []
            }
          ])
          assert.include(refused.message, "testhost")
          assert.include(refused.message, "lower tp × pp to 2")
          const tooLong = yield* Effect.flip(
            slurm.preflight("testhost", { gpus: 1, partition: c.shortPartition, time: "20:00" })
          )
          assert.include(tooLong.message, "time limit 20:00 exceeds partition short's MaxTime 00:10:00")
          const missing = yield* Effect.flip(slurm.preflight("testhost", { gpus: 1, partition: "gpus" }))
          assert.include(missing.message, "partition gpus does not exist (partitions: debug, short)")
          assert.strictEqual(yield* queued, before, "nothing was submitted")
        })
    )

    it.effect("a job waits PENDING (Resources) behind one holding both GPUs, then RUNNING on the node", () =>
      Effect.gen(function* () {
        const slurm = yield* Slurm.Slurm
        const c = yield* TestSlurm.TestSlurm
        const holder = yield* slurm.submit(
          "testhost",
          yield* script("mlops-holder", ["#SBATCH --gres=gpu:2", "exec sleep 300"])
        )
        yield* waitFor(holder, (job) => job.state._tag === "Running")
        const waiter = yield* slurm.submit(
          "testhost",
          yield* script("mlops-waiter", ["#SBATCH --gres=gpu:1", "exec sleep 300"])
        )
        // the follower's own sight of the wait: the holder is let go only once it has reported
        // it (a loaded machine may otherwise poll past the whole PENDING (Resources) window)
        const sawResources = yield* Deferred.make<void>()
        const followed = yield* Effect.fork(
          Stream.runCollect(
            slurm.follow("testhost", waiter, { poll: "200 millis" }).pipe(
              Stream.map(describeState),
              Stream.tap((state) =>
                state === "PENDING (Resources)" ? Deferred.succeed(sawResources, undefined) : Effect.void
              )
            )
          )
        )
        const pending = yield* waitFor(
          waiter,
          (job) => job.state._tag === "Pending" && job.state.reason === "Resources"
        )
        assert.deepStrictEqual(
          [describeState(pending), pending.gpus, pending.source],
          ["PENDING (Resources)", 1, "squeue"]
        )
        const listed = yield* slurm.jobs("testhost", { namePrefix: "mlops-" })
        assert.includeMembers(
          listed.map((job) => `${job.id} ${job.slurmState}`),
          [`${holder} RUNNING`, `${waiter} PENDING`]
        )
        yield* Deferred.await(sawResources).pipe(Effect.timeout("60 seconds"))
        const stopped = yield* slurm.stop("testhost", holder)
        assert.deepStrictEqual(
          [stopped.slurmState, describeState(stopped)],
          ["CANCELLED", "CANCELLED ExitCode=0:15"]
        )
        const running = yield* waitFor(waiter, (job) => job.state._tag === "Running")
        assert.deepStrictEqual(running.state, { _tag: "Running", node: c.node })
        yield* slurm.stop("testhost", waiter)
        // followed: its states in order, one record per change, ending with how it ended
        const states = Chunk.toReadonlyArray(yield* Fiber.join(followed))
        assert.include(states, "PENDING (Resources)")
        assert.include(states, `RUNNING on ${c.node}`, states.join(" → "))
        assert.match(states[states.length - 1]!, /^CANCELLED ExitCode=0:(?:15|9)$/, states.join(" → "))
        assert.strictEqual(new Set(states).size, states.length)
      })
    )

    it.effect("a job that exits 3 is FAILED ExitCode=3:0 once squeue no longer lists it", () =>
      Effect.gen(function* () {
        const slurm = yield* Slurm.Slurm
        const id = yield* slurm.submit("testhost", yield* script("mlops-exit3", ["echo dying", "exit 3"]))
        const ended = yield* waitFor(id, (job) => job.state._tag === "Failed")
        assert.strictEqual(describeState(ended), "FAILED ExitCode=3:0")
        assert.notStrictEqual(ended.source, "squeue")
      })
    )

    it.effect("a job the controller has forgotten is read from sacct (the jobcomp file)", () =>
      Effect.gen(function* () {
        const slurm = yield* Slurm.Slurm
        const c = yield* TestSlurm.TestSlurm
        const id = yield* slurm.submit(
          "testhost",
          yield* script("mlops-purged", ["sh -c 'kill -9 $$'", "exit $?"])
        )
        yield* waitFor(id, (job) => job.state._tag === "Failed")
        // MinJobAge=2: the controller purges the record within ~15 s
        yield* c
          .client("scontrol", ["show", "job", id])
          .pipe(
            Effect.flip,
            Effect.retry(Schedule.spaced("500 millis").pipe(Schedule.upTo(Duration.seconds(60))))
          )
        const job = yield* slurm.job("testhost", id)
        assert.deepStrictEqual(
          [job.source, describeState(job), job.name],
          ["sacct", "FAILED ExitCode=137:0", "mlops-purged"]
        )
      })
    )

    it.effect("sbatch refusals and unknown jobs are typed errors naming the host and the fix", () =>
      Effect.gen(function* () {
        const slurm = yield* Slurm.Slurm
        const refused = yield* Effect.flip(
          slurm.submit("testhost", yield* script("mlops-three", ["#SBATCH --gres=gpu:3", "true"]))
        )
        assert.strictEqual(refused._tag, "SlurmSubmitRefused")
        assert.include(refused.message, "Requested node configuration is not available")
        assert.include(refused.message, "sinfo -o")
        const unknown = yield* Effect.flip(slurm.job("testhost", "999999"))
        assert.strictEqual(unknown._tag, "SlurmJobNotFound")
        assert.include(unknown.message, "999999")
        assert.include(unknown.message, "testhost")
        // cancelling a job that is gone is not an error (stop is idempotent)
        yield* slurm.cancel("testhost", "999999")
      })
    )
  }
)
