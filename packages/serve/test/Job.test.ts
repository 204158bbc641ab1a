/**
 * Jobs on the simulated host (its `torchrun` trains, holding GPU memory on the GPUs it is given):
 * a job runs detached to its exit with its output followed once; GPUs are picked apart for two
 * jobs; a third waits in the host's queue until one ends, or is refused naming who holds what; a
 * crash is classified; stop frees the GPUs; status and rm see jobs.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Probes from "@mlops/core/Probes"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import { Drive, FakeHost } from "@mlops/core/testing"
import { Chunk, Effect, Fiber, Stream } from "effect"
import * as Job from "../src/Job.js"
import * as SimHost from "../src/SimHost.js"

const layer = () => SimHost.layer([])
const { drive, advance } = Drive

const events = (request: Job.JobRequest) =>
  drive(Stream.runCollect(Job.run(request)).pipe(Effect.map(Chunk.toArray)))

const train = (...flags: ReadonlyArray<string>) =>
  ["torchrun", "--nproc-per-node", "1", "train.py", ...flags] as const

const connect = Effect.flatMap(ConnectionPool, (pool) => pool.get("sim"))

describe("Job.run on the sim", () => {
  it.effect("runs detached to exit 0; every line followed once; the record says succeeded", () =>
    Effect.gen(function* () {
      const seen = yield* events({ host: "sim", argv: train("--steps", "5"), gpus: 1 })
      const tags = seen.map((e) => e._tag)
      assert.deepStrictEqual(tags.slice(0, 2), ["Connected", "Submitted"])
      assert.strictEqual(tags.at(-1), "Finished")
      const output = seen.flatMap((e) => (e._tag === "Output" ? [e.line] : []))
      // the banner, five steps, the summary: each exactly once
      assert.lengthOf(output, 7)
      assert.lengthOf(new Set(output), 7)
      const started = seen.find((e) => e._tag === "Started")
      assert.deepStrictEqual(started?._tag === "Started" ? started.gpus : undefined, [0])
      const finished = seen.at(-1)
      assert.strictEqual(finished?._tag === "Finished" ? finished.job.state : undefined, "succeeded")
      const job = yield* Job.get("sim", "train")
      assert.strictEqual(job.state, "succeeded")
      assert.strictEqual(job.exit?.exitCode, 0)
      // its run directory is private, and so is every file mlops wrote in it
      const conn = yield* connect
      const dir = yield* conn.files.stat(job.runDir)
      assert.strictEqual((dir?.mode ?? 0) & 0o777, 0o700)
      for (const file of ["job.json", "gpus", "queued", "refused", "ticket", "log"]) {
        const stat = yield* conn.files.stat(`${job.runDir}/${file}`)
        assert.strictEqual((stat?.mode ?? 0) & 0o777, 0o600, file)
      }
    }).pipe(Effect.provide(layer()))
  )

  it.effect("two jobs asking for one GPU each land on different GPUs", () =>
    Effect.gen(function* () {
      yield* events({ host: "sim", argv: train("--steps", "400"), gpus: 1, name: "a", follow: false })
      yield* drive(advance(1000))
      yield* events({ host: "sim", argv: train("--steps", "400"), gpus: 1, name: "b", follow: false })
      yield* drive(advance(1000))
      const [a, b] = [yield* Job.get("sim", "a"), yield* Job.get("sim", "b")]
      assert.deepStrictEqual([a.state, b.state], ["running", "running"])
      assert.deepStrictEqual([a.gpus, b.gpus], [[0], [1]])
      // nvidia-smi agrees: one training process on each GPU
      const conn = yield* connect
      const held = yield* Probes.gpus(conn)
      assert.isTrue(held.every((gpu) => gpu.memoryUsedMiB > 20_000))
    }).pipe(Effect.provide(layer()))
  )

  it.effect(
    "without --wait a third is refused, naming which job holds which GPU; nothing is left behind",
    () =>
      Effect.gen(function* () {
        yield* events({ host: "sim", argv: train("--steps", "400"), gpus: 1, name: "a", follow: false })
        yield* events({ host: "sim", argv: train("--steps", "400"), gpus: 1, name: "b", follow: false })
        yield* drive(advance(1000))
        const error = yield* Effect.flip(events({ host: "sim", argv: train(), gpus: 1, name: "c" }))
        assert.strictEqual(error._tag, "GpusUnavailable")
        if (error._tag === "GpusUnavailable")
          assert.deepStrictEqual(error.holders, ["GPU 0: job a", "GPU 1: job b"])
        const names = (yield* Job.list("sim")).map((job) => job.name)
        assert.deepStrictEqual(names, ["a", "b"])
        // no ticket of it is left in the host's queue either
        const conn = yield* connect
        const queue = yield* conn.exec(
          RemoteCommand.make([
            "sh",
            "-c",
            'for t in /root/.mlops/jobs/.queue/*; do [ -e "$t" ] && echo "$t"; done; true'
          ])
        )
        assert.notInclude(queue.stdout, "-c")
        // detached, the same refusal: it is never reported as started
        const detached = yield* Effect.flip(
          events({ host: "sim", argv: train(), gpus: 1, name: "d", follow: false })
        )
        assert.strictEqual(detached._tag, "GpusUnavailable")
        assert.deepStrictEqual(
          (yield* Job.list("sim")).map((job) => job.name),
          ["a", "b"]
        )
      }).pipe(Effect.provide(layer()))
  )

  it.effect("with --wait a third queues on the host and starts on the GPU the first one frees", () =>
    Effect.gen(function* () {
      yield* events({ host: "sim", argv: train("--steps", "40"), gpus: 1, name: "a", follow: false })
      yield* events({ host: "sim", argv: train("--steps", "400"), gpus: 1, name: "b", follow: false })
      yield* drive(advance(500))
      const third = yield* Effect.fork(
        events({ host: "sim", argv: train("--steps", "2"), gpus: 1, name: "c", wait: true })
      )
      yield* drive(advance(1500))
      const queued = yield* Job.get("sim", "c")
      assert.strictEqual(queued.state, "queued")
      const seen = yield* drive(Fiber.join(third))
      const tags = seen.map((e) => e._tag)
      assert.include(tags, "Queued")
      assert.isBelow(tags.indexOf("Queued"), tags.indexOf("Started"))
      const started = seen.find((e) => e._tag === "Started")
      assert.deepStrictEqual(started?._tag === "Started" ? started.gpus : undefined, [0])
      assert.strictEqual((yield* Job.get("sim", "c")).state, "succeeded")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a crash is classified from the job's log: CUDA out of memory, with its exit", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        events({ host: "sim", argv: train("--steps", "6", "--fail", "oom", "--fail-at", "3"), gpus: 1 })
      )
      assert.strictEqual(error._tag, "JobFailed")
      if (error._tag === "JobFailed") {
        assert.strictEqual(error.failure._tag, "OOM")
        assert.strictEqual(error.exitCode, 1)
      }
      assert.strictEqual((yield* Job.get("sim", "train")).state, "failed")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("stop ends the group and confirms its GPU is free; rm then removes the record", () =>
    Effect.gen(function* () {
      yield* events({ host: "sim", argv: train("--steps", "400"), gpus: 2, name: "long", follow: false })
      yield* drive(advance(1000))
      const conn = yield* connect
      assert.isNotEmpty(yield* Probes.gpuProcesses(conn))
      const refused = yield* Effect.flip(drive(Job.remove("sim", "long")))
      assert.strictEqual(refused._tag, "JobStillRunning")
      const stopped = yield* drive(Job.stop("sim", "long"))
      assert.deepStrictEqual([stopped.outcome, stopped.gpus], ["terminated", [0, 1]])
      assert.lengthOf(yield* Probes.gpuProcesses(conn), 0)
      assert.strictEqual((yield* Job.get("sim", "long")).state, "stopped")
      yield* drive(Job.remove("sim", "long"))
      assert.deepStrictEqual(yield* Job.list("sim"), [])
      assert.isUndefined(yield* RemoteFiles.readTextIfExists(conn, "/root/.mlops/jobs/long/job.json"))
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a secret on the command line is refused before anything runs; --env carries it unrecorded", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        events({ host: "sim", argv: ["torchrun", "train.py", "--hf-token", "hf_abcdef123"] })
      )
      assert.strictEqual(error._tag, "InvalidJob")
      assert.notInclude(error.message, "hf_abcdef123")
      const handle = yield* FakeHost.host("sim")
      assert.lengthOf(
        (yield* handle.journal).filter((entry) => entry.kind === "detached"),
        0
      )
      yield* events({
        host: "sim",
        argv: train("--steps", "1"),
        gpus: 1,
        env: { HF_TOKEN: "hf_abcdef123" },
        name: "env"
      })
      const conn = yield* connect
      const record = yield* RemoteFiles.readTextIfExists(conn, "/root/.mlops/jobs/env/job.json")
      assert.include(record, "HF_TOKEN")
      assert.notInclude(record, "hf_abcdef123")
      const lines = (yield* handle.journal).map((entry) => entry.line).join("\n")
      assert.notInclude(lines, "hf_abcdef123")
    }).pipe(Effect.provide(layer()))
  )

  it.effect(
    "--sync: the job runs in its own snapshot of the local directory; the next sync sends only what changed",
    () =>
      Effect.gen(function* () {
        const local = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-job-sync-"))
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => fs.rmSync(local, { recursive: true, force: true }))
        )
        fs.writeFileSync(path.join(local, "train.py"), "print('hello')\n")
        fs.writeFileSync(path.join(local, "config.yaml"), "lr: 1e-4\n")
        fs.writeFileSync(path.join(local, ".env"), "WANDB_API_KEY=k\n")
        const first = yield* events({
          host: "sim",
          argv: train("--steps", "1"),
          gpus: 1,
          name: "s1",
          sync: { local }
        })
        const synced = first.find((e) => e._tag === "Synced")
        assert.deepStrictEqual(synced?._tag === "Synced" ? [synced.files, synced.sent] : [], [2, 2])
        assert.deepStrictEqual(synced?._tag === "Synced" ? synced.skipped : [], [".env: secret"])
        const conn = yield* connect
        const code = "/root/.mlops/jobs/s1/code"
        assert.strictEqual(yield* RemoteFiles.readTextIfExists(conn, `${code}/config.yaml`), "lr: 1e-4\n")
        assert.isUndefined(yield* RemoteFiles.readTextIfExists(conn, `${code}/.env`))
        fs.writeFileSync(path.join(local, "config.yaml"), "lr: 3e-4\n")
        const second = yield* events({
          host: "sim",
          argv: train("--steps", "1"),
          gpus: 1,
          name: "s2",
          sync: { local }
        })
        const again = second.find((e) => e._tag === "Synced")
        assert.strictEqual(again?._tag === "Synced" ? again.sent : undefined, 1)
        assert.strictEqual(
          yield* RemoteFiles.readTextIfExists(conn, "/root/.mlops/jobs/s2/code/config.yaml"),
          "lr: 3e-4\n"
        )
        // the first job's snapshot is its own
        assert.strictEqual(yield* RemoteFiles.readTextIfExists(conn, `${code}/config.yaml`), "lr: 1e-4\n")
      }).pipe(Effect.provide(layer()), Effect.scoped)
  )

  it.effect(
    "pull: what a job wrote comes back from its working directory (its synced code), again only what changed",
    () =>
      Effect.gen(function* () {
        const local = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-job-pull-"))
        const into = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-job-pulled-"))
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            fs.rmSync(local, { recursive: true, force: true })
            fs.rmSync(into, { recursive: true, force: true })
          })
        )
        fs.writeFileSync(path.join(local, "train.py"), "print('hello')\n")
        yield* events({
          host: "sim",
          argv: train("--steps", "2", "--output-dir", "out/drafter"),
          gpus: 1,
          name: "p1",
          sync: { local }
        })
        const pulled = yield* Job.pull("sim", "p1", "out", { into })
        assert.strictEqual(pulled.remote, "/root/.mlops/jobs/p1/code/out")
        assert.strictEqual(pulled.local, path.join(into, "out"))
        assert.deepStrictEqual([pulled.files, pulled.fetched], [2, 2])
        const config = JSON.parse(fs.readFileSync(path.join(into, "out", "drafter", "config.json"), "utf8"))
        assert.isObject(config)
        const again = yield* Job.pull("sim", "p1", "out/", { into })
        assert.deepStrictEqual([again.fetched, again.upToDate], [0, 2])
        const missing = yield* Effect.flip(Job.pull("sim", "p1", "checkpoints", { into }))
        assert.strictEqual(missing._tag, "PullSourceMissing")
        assert.include(missing.message, "/root/.mlops/jobs/p1/code/checkpoints")
        // `.` and `..` land under a name of their own inside `into`, never in it or beside it
        const here = yield* Job.pull("sim", "p1", ".", { into })
        assert.strictEqual(here.local, path.join(into, "code"))
        assert.isTrue(fs.existsSync(path.join(into, "code", "train.py")))
        const unknown = yield* Effect.flip(Job.pull("sim", "nope", "out", { into }))
        assert.strictEqual(unknown._tag, "JobNotFound")
      }).pipe(Effect.provide(layer()), Effect.scoped)
  )

  it.effect(
    "the job's environment reaches its command unchanged, whatever its names; CUDA orders GPUs as nvidia-smi",
    () =>
      Effect.gen(function* () {
        // names the host-side shells use for themselves, and the waiter's own variable
        const env = {
          mode: "train",
          dir: "/data",
          root: "r",
          ids: "7",
          want: "w",
          CUDA_DEVICE_ORDER: "PCI_BUS_ID"
        }
        const seen = yield* events({
          host: "sim",
          name: "envs",
          argv: [
            "sh",
            "-c",
            'echo "mode=$mode dir=$dir root=$root ids=$ids want=$want order=$CUDA_DEVICE_ORDER"'
          ],
          gpus: 1,
          env
        })
        const lines = seen.flatMap((e) => (e._tag === "Output" ? [e.line] : []))
        assert.deepStrictEqual(lines, ["mode=train dir=/data root=r ids=7 want=w order=PCI_BUS_ID"])
        // unset, CUDA numbers GPUs as nvidia-smi does (the waiter's indices are nvidia-smi's)
        const order = yield* events({
          host: "sim",
          name: "order",
          argv: ["sh", "-c", 'echo "order=$CUDA_DEVICE_ORDER visible=$CUDA_VISIBLE_DEVICES"'],
          gpus: 1
        })
        assert.deepStrictEqual(
          order.flatMap((e) => (e._tag === "Output" ? [e.line] : [])),
          ["order=PCI_BUS_ID visible=0"]
        )
      }).pipe(Effect.provide(layer()))
  )

  it.effect("a request the host can never meet is refused before anything is written", () =>
    Effect.gen(function* () {
      const many = yield* Effect.flip(events({ host: "sim", argv: train(), gpus: 3, wait: true }))
      assert.strictEqual(many._tag, "InvalidJob")
      assert.include(many.message, "sim has 2 GPU(s)")
      const absent = yield* Effect.flip(events({ host: "sim", argv: train(), gpuIds: [5] }))
      assert.strictEqual(absent._tag, "InvalidJob")
      assert.include(absent.message, "no GPU 5")
      const secret = yield* Effect.flip(
        events({ host: "sim", argv: ["sh", "-c", "HF_TOKEN=hf_abcdef123 torchrun train.py"], gpus: 1 })
      )
      assert.strictEqual(secret._tag, "InvalidJob")
      assert.include(secret.message, "--env HF_TOKEN=value")
      assert.notInclude(secret.message, "hf_abcdef123")
      // a deployment's name: stop, logs and rm would find the deployment first
      const conn = yield* connect
      yield* conn.files.write("/root/.mlops/deployments/qwen/meta.json", "{}")
      const clash = yield* Effect.flip(events({ host: "sim", argv: train(), gpus: 1, name: "qwen" }))
      assert.strictEqual(clash._tag, "InvalidJob")
      assert.include(clash.message, "a deployment is named qwen")
      assert.deepStrictEqual(yield* Job.list("sim"), [])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a job stopped while it is followed ends as stopped, not as a failure", () =>
    Effect.gen(function* () {
      const following = yield* Effect.fork(
        events({ host: "sim", argv: train("--steps", "400"), gpus: 1, name: "long" })
      )
      yield* drive(advance(1500))
      yield* drive(Job.stop("sim", "long"))
      const seen = yield* drive(Fiber.join(following))
      const last = seen.at(-1)
      assert.strictEqual(last?._tag === "Finished" ? last.job.state : last?._tag, "stopped")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a taken name is JobExists; a default name gets the next free number", () =>
    Effect.gen(function* () {
      yield* events({ host: "sim", argv: train("--steps", "1"), gpus: 1 })
      yield* events({ host: "sim", argv: train("--steps", "1"), gpus: 1 })
      assert.deepStrictEqual(
        (yield* Job.list("sim")).map((j) => j.name),
        ["train", "train-2"]
      )
      const error = yield* Effect.flip(events({ host: "sim", argv: train(), name: "train" }))
      assert.strictEqual(error._tag, "JobExists")
    }).pipe(Effect.provide(layer()))
  )
})
