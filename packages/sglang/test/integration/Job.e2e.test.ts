/**
 * Jobs end to end over a real sshd on 127.0.0.1 with the live ssh2 layer: a stand-in training
 * run (standin/train.py, torchrun-like workers registering GPU memory with the stand-in
 * nvidia-smi) started by `Job.run` in the test host's Python environment (hosts.json). The job
 * survives its connection being cut and is followed to its end once; two jobs land on different
 * GPUs; a third waits in the host's queue; a crash is classified; stop frees the GPUs; `--sync`
 * sends only what changed and never `.env`.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import * as Job from "@mlops/serve/Job"
import { Chunk, Context, Effect, Fiber, Layer, Stream } from "effect"
import type * as Sshd from "../../../core/test/support/Sshd.js"
import type * as Standin from "./standin/install.js"
import { alias, liveLayer, startHost } from "./support.js"

class E2E extends Context.Tag("test/JobE2E")<
  E2E,
  { readonly standin: Standin.Standin; readonly sshd: Sshd.Sshd }
>() {}

const TestLayer = Layer.unwrapEffect(Effect.map(E2E, liveLayer)).pipe(
  Layer.provideMerge(Layer.scoped(E2E, startHost))
)

const TRAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), "standin", "train.py")

const train = (...flags: ReadonlyArray<string>) => ["python", TRAIN, ...flags] as const

/** A fresh job name; afterwards (even when an assertion failed) it is stopped and its record removed. */
const jobName = (label: string) =>
  Effect.acquireRelease(
    Effect.sync(() => `job-${label}-${process.pid}-${Math.random().toString(36).slice(2, 7)}`),
    (name) =>
      Job.stop(alias, name).pipe(Effect.ignore, Effect.zipRight(Effect.ignore(Job.remove(alias, name))))
  )

const collect = (request: Job.JobRequest) =>
  Stream.runCollect(Job.run(request)).pipe(Effect.map(Chunk.toArray))

/** GPU memory in use per GPU, as the host's nvidia-smi (the stand-in, first on its PATH) says. */
const gpuMemory = (standin: Standin.Standin): ReadonlyArray<number> =>
  execFileSync(
    path.join(standin.bin, "nvidia-smi"),
    ["--query-gpu=memory.used", "--format=csv,noheader,nounits"],
    { encoding: "utf8" }
  )
    .trim()
    .split("\n")
    .map(Number)

const waitUntil = <R>(check: Effect.Effect<boolean, unknown, R>, what: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 200; i++) {
      if (yield* Effect.orElseSucceed(check, () => false)) return
      yield* Effect.sleep("100 millis")
    }
    assert.fail(`timed out waiting for ${what}`)
  })

describe("jobs over a real sshd", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.scoped("a job survives its connection being cut and is followed to its end, each line once", () =>
      Effect.gen(function* () {
        const { sshd, standin } = yield* E2E
        const name = yield* jobName("cut")
        let cut = false
        const events = yield* Job.run({
          host: alias,
          name,
          argv: train("--steps", "15", "--step-seconds", "0.2"),
          gpus: 1
        }).pipe(
          Stream.tap((event) =>
            event._tag === "Output" && event.line.includes("'step': 3") && !cut
              ? Effect.zipRight(
                  Effect.sync(() => {
                    cut = true
                  }),
                  sshd.killSessionProcesses
                )
              : Effect.void
          ),
          Stream.runCollect,
          Effect.map(Chunk.toArray)
        )
        assert.isTrue(cut)
        assert.isTrue(
          events.some((e) => e._tag === "Reconnected"),
          JSON.stringify(events.map((e) => e._tag))
        )
        const steps = events.flatMap((e) =>
          e._tag === "Output" && e.line.includes("'step'") ? [e.line] : []
        )
        assert.deepStrictEqual(
          steps.map((line) => Number(/'step': (\d+)/.exec(line)?.[1])),
          Array.from({ length: 15 }, (_, i) => i + 1)
        )
        const last = events.at(-1)
        assert.strictEqual(last?._tag === "Finished" ? last.job.state : last?._tag, "succeeded")
        // private on the real file system: the run directory 0700, every file mlops wrote 0600
        const dir = path.join(standin.stateDir, "jobs", name)
        assert.strictEqual(fs.statSync(dir).mode & 0o777, 0o700)
        for (const file of ["job.json", "gpus", "queued", "refused", "ticket", "log", "exit"])
          assert.strictEqual(fs.statSync(path.join(dir, file)).mode & 0o777, 0o600, file)
      })
    )

    it.scoped(
      "two jobs land on different GPUs; a third waits in the host's queue and takes the GPU the first frees; stop frees the GPUs",
      () =>
        Effect.gen(function* () {
          const { standin } = yield* E2E
          const [a, b, c] = [yield* jobName("a"), yield* jobName("b"), yield* jobName("c")]
          const long = train("--steps", "600", "--step-seconds", "0.1")
          yield* collect({ host: alias, name: a, argv: long, gpus: 1, follow: false })
          yield* waitUntil(
            Effect.map(Job.get(alias, a), (job) => job.gpus.length === 1),
            "a's GPU"
          )
          yield* collect({ host: alias, name: b, argv: long, gpus: 1, follow: false })
          yield* waitUntil(
            Effect.map(Job.get(alias, b), (job) => job.gpus.length === 1),
            "b's GPU"
          )
          const [jobA, jobB] = [yield* Job.get(alias, a), yield* Job.get(alias, b)]
          assert.notDeepEqual(jobA.gpus, jobB.gpus)
          yield* waitUntil(
            Effect.sync(() => gpuMemory(standin).every((mib) => mib > 20_000)),
            "both GPUs in use"
          )
          // without --wait: refused, naming both holders
          const refused = yield* Effect.flip(
            collect({ host: alias, name: c, argv: train("--steps", "2"), gpus: 1 })
          )
          assert.strictEqual(refused._tag, "GpusUnavailable")
          assert.include(refused.message, `job ${a}`)
          assert.include(refused.message, `job ${b}`)
          // with --wait: queued on the host until a's GPU is free
          const third = yield* Effect.fork(
            collect({ host: alias, name: c, argv: train("--steps", "3"), gpus: 1, wait: true })
          )
          yield* waitUntil(
            Effect.map(Job.get(alias, c), (job) => job.state === "queued"),
            "c queued"
          )
          const stopped = yield* Job.stop(alias, a)
          assert.deepStrictEqual(stopped.gpus, jobA.gpus)
          const events = yield* Fiber.join(third)
          const started = events.find((e) => e._tag === "Started")
          assert.deepStrictEqual(started?._tag === "Started" ? started.gpus : undefined, jobA.gpus)
          assert.strictEqual((yield* Job.get(alias, c)).state, "succeeded")
          yield* Job.stop(alias, b)
          assert.isTrue(
            gpuMemory(standin).every((mib) => mib < 2048),
            JSON.stringify(gpuMemory(standin))
          )
        })
    )

    it.scoped(
      "a crash is classified from the job's log: CUDA out of memory on rank 0, not torchrun's report",
      () =>
        Effect.gen(function* () {
          const name = yield* jobName("oom")
          const error = yield* Effect.flip(
            collect({
              host: alias,
              name,
              argv: train("--nproc-per-node", "2", "--steps", "6", "--fail", "oom", "--fail-at", "2"),
              gpus: 2
            })
          )
          assert.strictEqual(error._tag, "JobFailed")
          if (error._tag === "JobFailed") {
            assert.strictEqual(error.failure._tag, "OOM")
            assert.strictEqual(error.exitCode, 1)
          }
          assert.strictEqual((yield* Job.get(alias, name)).state, "failed")
        })
    )

    it.scoped(
      "--sync sends the working directory, then only what changed; each job runs its own snapshot; never .env unless asked",
      () =>
        Effect.gen(function* () {
          const local = yield* Effect.acquireRelease(
            Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-job-sync-"))),
            (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
          )
          fs.writeFileSync(
            path.join(local, "main.py"),
            'import pathlib\nprint("data:", pathlib.Path("data.txt").read_text().strip())\n'
          )
          fs.writeFileSync(path.join(local, "data.txt"), "one\n")
          fs.writeFileSync(path.join(local, ".env"), "WANDB_API_KEY=secret-value\n")
          fs.writeFileSync(path.join(local, ".gitignore"), "checkpoints/\n")
          fs.mkdirSync(path.join(local, "checkpoints"))
          fs.writeFileSync(path.join(local, "checkpoints", "big.bin"), "x".repeat(4096))
          const first = yield* jobName("sync")
          const run1 = yield* collect({
            host: alias,
            name: first,
            argv: ["python", "main.py"],
            sync: { local }
          })
          const synced1 = run1.find((e) => e._tag === "Synced")
          assert.strictEqual(synced1?._tag === "Synced" ? synced1.sent : undefined, 3)
          assert.isTrue(run1.some((e) => e._tag === "Output" && e.line === "data: one"))
          const { standin } = yield* E2E
          const code = path.join(standin.stateDir, "jobs", first, "code")
          assert.isFalse(fs.existsSync(path.join(code, ".env")))
          assert.isFalse(fs.existsSync(path.join(code, "checkpoints")))
          // the same directory synced to the next run's own code directory, after one change
          fs.writeFileSync(path.join(local, "data.txt"), "two\n")
          const second = yield* jobName("sync2")
          const run2 = yield* collect({
            host: alias,
            name: second,
            argv: ["python", "main.py"],
            sync: { local }
          })
          const synced2 = run2.find((e) => e._tag === "Synced")
          assert.strictEqual(synced2?._tag === "Synced" ? synced2.sent : undefined, 1)
          assert.isTrue(run2.some((e) => e._tag === "Output" && e.line === "data: two"))
          // the first run's snapshot is its own: the change reached only the second
          assert.strictEqual(fs.readFileSync(path.join(code, "data.txt"), "utf8"), "one\n")
          assert.isTrue(synced1?._tag === "Synced" && synced1.skipped.some((s) => s.startsWith(".env")))
        })
    )
  })
})
