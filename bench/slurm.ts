/**
 * Slurm benches on the real single-node test cluster (core's test support; needs root and
 * Debian's slurm packages) with the harness sshd as the login node and the stand-in SGLang as
 * the job, each against a baseline measured in this run:
 *
 * (a) submit → RUNNING → ready: the Slurm placement's preflight and spawn (files, sbatch) to the
 *     classifier's Ready line plus `/health` 200 through the tunnel to the node, median of
 *     BENCH_RUNS (5). mlops' own overhead = that minus Slurm's own submit→start (the job's
 *     StartTime − SubmitTime, and a bare `sbatch` + `squeue` poll measured here) minus the
 *     stand-in's own start→ready (its stamps);
 * (b) crash line written (the stand-in stamps the wall clock right after the traceback) →
 *     `SlurmJobEnded` in the caller, with the state poll at 250 ms and at 1 s; goal < 2 s.
 *
 *   npx tsx bench/slurm.ts      (or `npm run bench`, which runs every bench)
 */
import * as path from "node:path"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import * as HttpClient from "@mlops/core/HttpClient"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as Follow from "@mlops/serve/Follow"
import * as SlurmPlacement from "@mlops/serve/SlurmPlacement"
import * as Workload from "@mlops/serve/Workload"
import { Effect, Layer, Stream } from "effect"
import * as TestSlurm from "../packages/core/test/support/Slurm.js"
import * as Sshd from "../packages/core/test/support/Sshd.js"
import { logs } from "../packages/sglang/src/internal/logs/index.js"
import * as Standin from "../packages/sglang/test/integration/standin/install.js"
import { alias, freePort } from "../packages/sglang/test/integration/support.js"
import { median } from "./support/stats.js"

const RUNS = Number(process.env.BENCH_RUNS ?? 5)

const ms = (x: number) => `${x.toFixed(0)} ms`

const program = Effect.gen(function* () {
  const standin = yield* Standin.install
  standin.writeHostsFile(alias)
  const slurm = yield* TestSlurm.start()
  const sshd = yield* Sshd.start({
    extraConfig: TestSlurm.withSetEnv(standin.sshdConfig, [`SLURM_CONF=${slurm.confPath}`])
  })
  const live = ConnectionPool.layer().pipe(
    Layer.provideMerge(Hosts.layer({ sshConfig: sshd.sshConfigPath, mlopsHome: standin.mlopsHome }))
  )
  yield* Effect.provide(measure(standin, slurm), live)
})

const measure = (standin: Standin.Standin, slurm: TestSlurm.SlurmCluster) =>
  Effect.gen(function* () {
    let n = 0
    const launch = (port: number, extra: ReadonlyArray<string>, poll: `${number} millis`) =>
      Effect.gen(function* () {
        const conn = yield* (yield* ConnectionPool.ConnectionPool).get(alias)
        const placement = yield* SlurmPlacement.makeKind({ poll }).make(SlurmPlacement.spec(), conn.host)
        const name = `bench-${++n}`
        const runDir = path.join(standin.stateDir, "deployments", name)
        const gpus = { total: 1, nodes: 1, perNode: 1, first: 0, step: 1, elsewhere: "", fewer: () => "" }
        const command = RemoteCommand.make(
          [
            path.join(standin.venv, "bin", "python"),
            "-m",
            "sglang.launch_server",
            "--model-path",
            standin.modelPath,
            "--port",
            String(port),
            // where the login node reaches a server on the node
            "--host",
            slurm.nodeAddress,
            ...extra
          ],
          { env: { STANDIN_PHASE_SECONDS: "0.02", STANDIN_STAMP_FILE: standin.stampFile } }
        )
        yield* placement.preflight(conn, { name, gpus, port })
        const placed = yield* placement.spawn(alias, [{ _tag: "OnHost", command, shown: "sglang" }], {
          runDir,
          logPath: path.join(runDir, "log"),
          token: `t${n}`,
          name,
          paths: { model: undefined, caches: [] },
          gpus
        })
        return { placement, placed }
      })

    // baseline: Slurm alone, a bare sbatch of the same GPU request and a 50 ms squeue poll until RUNNING (local client)
    const bare: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      const t0 = Date.now()
      const id = (yield* slurm.client("sbatch", [
        "--parsable",
        "--output=/dev/null",
        "--wrap",
        "sleep 30"
      ])).trim()
      while ((yield* slurm.client("squeue", ["-h", "-j", id, "-o", "%T"])).trim() !== "RUNNING")
        yield* Effect.sleep("50 millis")
      bare.push(Date.now() - t0)
      yield* slurm.client("scancel", [id])
    }

    const totals: Array<number> = []
    const overheads: Array<number> = []
    const toRunning: Array<number> = []
    const spawned: Array<number> = []
    const engines: Array<number> = []
    const scheduled: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      const port = yield* freePort
      const t0 = Date.now()
      const { placed } = yield* launch(port, [], "250 millis")
      spawned.push(Date.now() - t0)
      let running = 0
      yield* Follow.follow(placed, Workload.server(logs, Effect.void)).pipe(
        Stream.tap((e) =>
          Effect.sync(() => {
            if (e._tag === "State" && e.state.startsWith("RUNNING") && running === 0) running = Date.now()
          })
        ),
        Stream.runDrain
      )
      const readyLine = Date.now()
      const conn = yield* (yield* ConnectionPool.ConnectionPool).get(alias)
      const client = yield* HttpClient.make(conn, { port, target: yield* placed.address(conn) })
      for (;;) {
        const health = yield* Effect.either(
          client.request({ method: "GET", path: "/health", timeout: "2 seconds" })
        )
        if (health._tag === "Right" && health.right.status === 200) break
        yield* Effect.sleep("50 millis")
      }
      const total = Date.now() - t0
      const stamps = standin.stamps().filter((s) => s.ms >= t0)
      const start = stamps.find((s) => s.event === "start")
      const ready = stamps.find((s) => s.event === "ready")
      const record = yield* slurm.client("scontrol", ["show", "job", "-o", String(placed.server.ids.job)])
      const submit = Date.parse(/SubmitTime=(\S+)/.exec(record)![1]! + "Z")
      const began = Date.parse(/StartTime=(\S+)/.exec(record)![1]! + "Z")
      const engine = start !== undefined && ready !== undefined ? ready.ms - start.ms : 0
      totals.push(total)
      toRunning.push(running - t0)
      scheduled.push(began - submit)
      // mlops' own: its work before Slurm has the job, and from the ready line to /health 200
      overheads.push(spawned[spawned.length - 1]! + (t0 + total - readyLine))
      engines.push(engine)
      yield* placed.stop(conn)
    }
    console.log(`(a) submit → RUNNING → ready, median of ${RUNS}:`)
    console.log(
      `    spawn (preflight, 4 files, sbatch) ${ms(median(spawned))}; Slurm's SubmitTime → StartTime ${ms(median(scheduled))} (1 s resolution)`
    )
    console.log(
      `    mlops spawn → RUNNING seen ${ms(median(toRunning))}; bare sbatch → squeue RUNNING (50 ms poll) ${ms(median(bare))} (ratio ${(median(toRunning) / median(bare)).toFixed(2)})`
    )
    console.log(
      `    spawn → ready (/health 200 via the node tunnel) ${ms(median(totals))}; mlops' own overhead ${ms(median(overheads))} (spawn + ready line → /health 200); the stand-in's own start→ready ${ms(median(engines))}; the rest is Slurm's scheduling cycle, the state poll (250 ms) and Python's start`
    )

    for (const poll of ["250 millis", "1000 millis"] as const) {
      const detect: Array<number> = []
      for (let i = 0; i < RUNS; i++) {
        const port = yield* freePort
        const t0 = Date.now()
        const { placed } = yield* launch(port, ["--mem-fraction-static", "0.96"], poll)
        const ended = yield* Follow.follow(placed, Workload.server(logs, Effect.void)).pipe(
          Stream.runDrain,
          Effect.flip
        )
        const at = Date.now()
        const crash = standin.stamps().find((s) => s.event === "crash" && s.ms >= t0)
        if (ended._tag !== "SlurmJobEnded" || crash === undefined)
          return yield* Effect.dieMessage(`no typed end: ${ended._tag}`)
        detect.push(at - crash.ms)
      }
      console.log(
        `(b) crash line → SlurmJobEnded (state poll ${poll}), median of ${RUNS}: ${ms(median(detect))} (goal < 2000 ms: ${median(detect) < 2000 ? "met" : "missed"})`
      )
    }
  }).pipe(Effect.scoped)

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
