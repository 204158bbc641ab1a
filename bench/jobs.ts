/**
 * Starting a job on one host (the test sshd on 127.0.0.1 serving the stand-in environment):
 *
 * - baseline, what people type: `ssh host 'nohup python train.py … > log 2>&1 &'` (a fresh ssh
 *   process and connection each time, as a person runs it), until ssh returns;
 * - `Job.run` with `follow: false`, until `Submitted` (record written, the group detached behind
 *   the host's queue and GPU pick) and until the job is seen holding its GPU, with a fresh
 *   connection each time (cold, as a CLI start is) and on an open one (warm, as a program's);
 * - the same with `--sync` of an unchanged 10 000-file tree (one round trip for the tree, one
 *   for the job's snapshot of it).
 *
 * Medians of RUNS (10) each, ratios to the baseline measured in the same run.
 *
 *   npx tsx bench/jobs.ts      (or `npm run bench -- jobs`)
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Job from "@mlops/serve/Job"
import { Chunk, Effect, Stream } from "effect"
import * as Sshd from "../packages/core/test/support/Sshd.js"
import { alias, liveLayer, startHost } from "../packages/sglang/test/integration/support.js"
import { median } from "./support/stats.js"

const RUNS = Number(process.env.RUNS ?? 10)
const TRAIN = path.join(import.meta.dirname, "..", "packages/sglang/test/integration/standin/train.py")
const FILES = Number(process.env.SYNC_FILES ?? 10_000)

const ms = (n: number) => `${n.toFixed(0)} ms`

const sshNohup = (sshd: Sshd.Sshd, venv: string, dir: string) =>
  Effect.async<void>((resume) => {
    const script = `mkdir -p ${dir} && cd ${dir} && nohup ${venv}/bin/python ${TRAIN} --steps 1 --step-seconds 0 > log 2>&1 < /dev/null &`
    execFile("ssh", Sshd.sshArgs(sshd, script), { timeout: 30_000 }, () => resume(Effect.void))
  })

const started = (name: string, extra: Partial<Job.JobRequest> = {}) =>
  Effect.gen(function* () {
    const t0 = performance.now()
    yield* Stream.runCollect(
      Job.run({
        host: alias,
        name,
        argv: ["python", TRAIN, "--steps", "1", "--step-seconds", "0"],
        follow: false,
        ...extra
      })
    ).pipe(Effect.map(Chunk.toArray))
    const submitted = performance.now() - t0
    for (;;) {
      const job = yield* Job.get(alias, name)
      if (job.gpus.length > 0 || job.state !== "queued") break
      yield* Effect.sleep("20 millis")
    }
    return { submitted, running: performance.now() - t0 }
  })

const program = Effect.gen(function* () {
  const host = yield* startHost
  const { sshd, standin } = host
  const live = liveLayer(host)

  const baseline: Array<number> = []
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now()
    yield* sshNohup(sshd, standin.venv, path.join(standin.dir, `nohup-${i}`))
    baseline.push(performance.now() - t0)
  }

  const cold: Array<{ submitted: number; running: number }> = []
  for (let i = 0; i < RUNS; i++)
    cold.push(yield* started(`cold-${i}`, { gpus: 1 }).pipe(Effect.provide(live), Effect.scoped))
  const warm = yield* Effect.gen(function* () {
    const times: Array<{ submitted: number; running: number }> = []
    for (let i = 0; i < RUNS; i++) times.push(yield* started(`warm-${i}`, { gpus: 1 }))
    return times
  }).pipe(Effect.provide(live))

  // an unchanged 10 000-file tree: synced once first, then each job's sync is one round trip
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-bench-jobs-"))
  for (let i = 0; i < FILES; i++) {
    const dir = path.join(tree, `d${i % 100}`)
    if (i < 100) fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, `f${i}.py`), `# ${i}\n`)
  }
  const synced = yield* Effect.gen(function* () {
    yield* started("sync-first", { sync: { local: tree } })
    const times: Array<{ submitted: number; running: number }> = []
    for (let i = 0; i < RUNS; i++) times.push(yield* started(`sync-${i}`, { sync: { local: tree } }))
    return times
  }).pipe(Effect.provide(live))
  fs.rmSync(tree, { recursive: true, force: true })

  const base = median(baseline)
  const line = (label: string, xs: ReadonlyArray<{ submitted: number; running: number }>) => {
    const sub = median(xs.map((x) => x.submitted))
    const run = median(xs.map((x) => x.running))
    console.log(
      `  ${label.padEnd(44)} submitted ${ms(sub).padStart(7)} (${(sub / base).toFixed(2)}x)   running ${ms(run).padStart(7)} (${(run / base).toFixed(2)}x)`
    )
  }
  console.log(`job start, median of ${RUNS} (ratios to the baseline)`)
  console.log(`  ${"baseline: ssh host 'nohup python train.py &'".padEnd(44)} ${ms(base)}`)
  line("Job.run, fresh connection (a CLI start)", cold)
  line("Job.run, open connection (a program)", warm)
  line(`Job.run --sync (unchanged ${FILES}-file tree)`, synced)
})

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
