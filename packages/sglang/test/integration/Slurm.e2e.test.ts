/**
 * The Slurm placement end to end: a real Slurm 22.05 cluster (core's test support), the harness
 * sshd as its login node, and the stand-in SGLang (written from SGLang's facts) as the job's
 * program. Its log is read by the same classifier as on a plain host.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import { ConnectionLost } from "@mlops/core/Errors"
import * as Hosts from "@mlops/core/Hosts"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import { describeState } from "@mlops/core/SlurmJob"
import * as Tunnel from "@mlops/core/Tunnel"
import * as SlurmFollow from "@mlops/serve/SlurmFollow"
import * as SlurmPlacement from "@mlops/serve/SlurmPlacement"
import * as Status from "@mlops/serve/Status"
import * as Stop from "@mlops/serve/Stop"
import { Chunk, Context, Duration, Effect, Layer, Stream } from "effect"
import type * as TestSlurm from "../../../core/test/support/Slurm.js"
import type * as Sshd from "../../../core/test/support/Sshd.js"
import { logs } from "../../src/internal/logs/index.js"
import * as Serving from "../support/serving.js"
import type * as Standin from "./standin/install.js"
import { alias, fixedStory, freePort, startCluster } from "./support.js"

const SECRET = "hf_slurm_s3cret"

class Cluster extends Context.Tag("test/SlurmCluster")<
  Cluster,
  { readonly standin: Standin.Standin; readonly sshd: Sshd.Sshd; readonly slurm: TestSlurm.SlurmCluster }
>() {}

const cluster = Layer.scoped(Cluster, startCluster)
const live = Layer.unwrapEffect(
  Effect.map(Cluster, ({ standin, sshd }) =>
    ConnectionPool.layer().pipe(
      Layer.provideMerge(Hosts.layer({ sshConfig: sshd.sshConfigPath, mlopsHome: standin.mlopsHome }))
    )
  )
)

/** The stand-in's launch command (its environment carries a secret, as an HF token would). */
const serverCommand = (standin: Standin.Standin, port: number, extra: ReadonlyArray<string> = []) =>
  RemoteCommand.make(
    [
      path.join(standin.venv, "bin", "python"),
      "-m",
      "sglang.launch_server",
      "--model-path",
      standin.modelPath,
      "--port",
      String(port),
      ...extra
    ],
    { env: { STANDIN_PHASE_SECONDS: "0.02", HF_TOKEN: SECRET } }
  )

/** `program`, with the scheduler's job lookups (`squeue -j`, `scontrol show job`, `sacct -j`) it ran counted. */
const countingJobQueries = <A, E, R>(program: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const pool = yield* ConnectionPool.ConnectionPool
    let jobQueries = 0
    const counting = ConnectionPool.ConnectionPool.of({
      get: (host) =>
        Effect.map(pool.get(host), (conn) => ({
          ...conn,
          exec: (command, options) => {
            if (/^(squeue .*-j |scontrol show job |sacct .*-j )/.test(RemoteCommand.describe(command)))
              jobQueries++
            return conn.exec(command, options)
          }
        })),
      invalidate: pool.invalidate
    })
    const result = yield* Effect.provideService(program, ConnectionPool.ConnectionPool, counting)
    return { result, jobQueries }
  })

let deployments = 0
const runDirFor = (standin: Standin.Standin, name: string) =>
  path.join(standin.stateDir, "deployments", `${name}-${++deployments}`)

const spawnServer = (name: string, gpus: number, port: number, extra: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    const { standin } = yield* Cluster
    const placement = SlurmPlacement.make({
      settings: {},
      gpus,
      jobName: `mlops-${name}`,
      poll: "250 millis"
    })
    const runDir = runDirFor(standin, name)
    const placed = yield* placement.spawn(alias, serverCommand(standin, port, extra), {
      runDir,
      logPath: path.join(runDir, "log"),
      token: `token-${name}`
    })
    return { placement, placed }
  })

layer(Layer.provideMerge(live, cluster), { excludeTestServices: true, timeout: Duration.minutes(3) })(
  "SGLang on Slurm (real cluster, stand-in engine)",
  (it) => {
    it.effect(
      "waits PENDING (Resources) behind a job holding both GPUs, then runs to ready through a tunnel to the node",
      () =>
        Effect.gen(function* () {
          const { slurm, standin } = yield* Cluster
          const holder = (yield* slurm.client("sbatch", [
            "--parsable",
            "--gres=gpu:2",
            "--output=/dev/null",
            "--wrap",
            "sleep 300"
          ])).trim()
          const port = yield* freePort
          const { placement, placed } = yield* spawnServer("ready", 1, port)
          const seen: Array<string> = []
          let released = false
          const events = yield* SlurmFollow.follow(placement, placed, { engines: [logs] }).pipe(
            Stream.tap((event) =>
              Effect.gen(function* () {
                if (event._tag !== "Job") return
                seen.push(describeState(event.job))
                // once it waits for the GPUs, the holder leaves
                if (
                  event.job.state._tag === "Pending" &&
                  event.job.state.reason === "Resources" &&
                  !released
                ) {
                  released = true
                  yield* slurm.client("scancel", [holder])
                }
              })
            ),
            Stream.takeUntil((event) => event._tag === "Log" && event.event._tag === "Ready"),
            Stream.runCollect
          )
          assert.include(seen, "PENDING (Resources)")
          assert.include(seen, `RUNNING on ${slurm.node}`)
          assert.strictEqual(
            Chunk.last(events).pipe((last) => last._tag === "Some" && last.value._tag),
            "Log"
          )

          // readiness through the login node: a tunnel to <node address>:<port>
          const conn = yield* (yield* ConnectionPool.ConnectionPool).get(alias)
          const target = yield* placement.target(conn, placed)
          assert.strictEqual(target, "127.0.0.1", "the node's NodeAddr")
          const health = yield* Tunnel.request(conn, { port, target, method: "GET", path: "/health" })
          assert.strictEqual(health.status, 200)
          const models = yield* Tunnel.request(conn, { port, target, method: "GET", path: "/v1/models" })
          assert.include(models.body, standin.modelPath)
          const generated = yield* Tunnel.request(conn, {
            port,
            target,
            method: "POST",
            path: "/generate",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ text: "Hello", sampling_params: { max_new_tokens: 4 } })
          })
          assert.strictEqual(generated.status, 200)

          // status lists it: state, node, GPUs, elapsed
          const listed = (yield* SlurmPlacement.jobs(alias)).find((job) => job.id === placed.job)
          assert.deepStrictEqual(
            [listed?.slurmState, listed?.nodes, listed?.gpus],
            ["RUNNING", slurm.node, 1]
          )
          assert.isAtLeast(listed?.elapsedSeconds ?? -1, 0)

          // the secret went through the 0600 env file only
          const script = fs.readFileSync(path.join(placed.runDir, "job.sh"), "utf8")
          assert.notInclude(script, SECRET)
          assert.match(script.trimEnd().split("\n").pop()!, /^exec /)
          assert.strictEqual(fs.statSync(path.join(placed.runDir, "env")).mode & 0o777, 0o600)
          assert.strictEqual(fs.statSync(placed.logPath).mode & 0o777, 0o600)
          assert.strictEqual(fs.statSync(placed.runDir).mode & 0o777, 0o700)
          assert.notInclude(yield* slurm.client("scontrol", ["show", "job", "-o", placed.job!]), SECRET)

          // stop = scancel, then the job has left the running states
          assert.strictEqual(yield* placement.stop(conn, placed), "terminated")
          const after = yield* placement.job(conn, placed)
          assert.strictEqual(after.slurmState, "CANCELLED")
          assert.isFalse(yield* placement.isAlive(conn, placed))
          assert.strictEqual(
            yield* placement.stop(conn, placed),
            "exited-before",
            "stopping again is a no-op"
          )
        })
    )

    it.effect("a crash is classified with its fix and named with the job's FAILED state", () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const { placement, placed } = yield* spawnServer("oom", 2, port, [
          "--tp-size",
          "2",
          "--mem-fraction-static",
          "0.96"
        ])
        const ended = yield* SlurmFollow.follow(placement, placed, { engines: [logs] }).pipe(
          Stream.runDrain,
          Effect.flip
        )
        assert.strictEqual(ended._tag, "SlurmJobEnded")
        if (ended._tag !== "SlurmJobEnded") return
        assert.match(ended.state, /^FAILED ExitCode=\d+:\d+$/)
        assert.strictEqual(ended.failure?._tag, "OOM")
        assert.include(ended.message, "--mem-fraction-static")
        assert.include(ended.message, `Slurm job ${placed.job}`)
      })
    )

    it.scoped(
      "the launch program with the Slurm placement: queued past its stall timeout, then the job runs to ready through the node",
      () =>
        Effect.gen(function* () {
          const { standin, slurm } = yield* Cluster
          const port = yield* freePort
          const name = `slurm-launch-${process.pid}`
          const placement = SlurmPlacement.make({
            settings: {},
            gpus: 2,
            jobName: `mlops-${name}`,
            poll: "250 millis"
          })
          // both GPUs held for 8 s: the launch waits in the queue longer than its stall timeout
          const holder = (yield* slurm.client("sbatch", [
            "--parsable",
            "--gres=gpu:2",
            "--output=/dev/null",
            "--wrap",
            "sleep 300"
          ])).trim()
          yield* Effect.forkScoped(Effect.delay(slurm.client("scancel", [holder]), "8 seconds"))
          const events = yield* Serving.launch({
            host: alias,
            name,
            argv: fixedStory(standin.modelPath, port),
            env: { STANDIN_PHASE_SECONDS: "0.02" },
            stallTimeout: "2 seconds",
            placement
          }).pipe(Stream.runCollect)
          const last = Chunk.toReadonlyArray(events).at(-1)
          assert.strictEqual(last?._tag, "Launched", JSON.stringify(last))
          if (last?._tag !== "Launched") return
          // the job's states reach the caller as events: queued behind the holder, then running
          const states = Chunk.toReadonlyArray(events).flatMap((e) => (e._tag === "Job" ? [e.state] : []))
          assert.include(states, "PENDING (Resources)")
          assert.include(states, `RUNNING on ${slurm.node}`)
          const listed = (yield* SlurmPlacement.jobs(alias)).find((job) => job.name === `mlops-${name}`)
          assert.deepStrictEqual(
            [listed?.slurmState, listed?.nodes, listed?.gpus],
            ["RUNNING", slurm.node, 2]
          )
          const conn = yield* (yield* ConnectionPool.ConnectionPool).get(alias)
          const placed = yield* placement.attach(conn, last.deployment.runDir, last.deployment.logPath)
          assert.strictEqual(yield* placement.stop(conn, placed), "terminated")
        })
    )

    it.scoped(
      "a login node whose hosts.json entry has slurm: launch submits a job, status and stop work from its record",
      () =>
        Effect.gen(function* () {
          const { standin, sshd, slurm } = yield* Cluster
          const login = "cluster-login"
          // the same sshd under a second alias, a Slurm login node by its hosts.json entry
          const sshConfig = fs.readFileSync(sshd.sshConfigPath, "utf8")
          fs.writeFileSync(
            sshd.sshConfigPath,
            `${sshConfig}\n${sshConfig.replace("Host testhost", `Host ${login}`)}`
          )
          const hostsPath = path.join(standin.mlopsHome, "hosts.json")
          const hosts = JSON.parse(fs.readFileSync(hostsPath, "utf8"))
          hosts.hosts[login] = { ...hosts.hosts[alias], slurm: { time: "10:00" } }
          fs.writeFileSync(hostsPath, JSON.stringify(hosts))
          yield* Effect.addFinalizer(() =>
            Effect.sync(() => {
              fs.writeFileSync(sshd.sshConfigPath, sshConfig)
              standin.writeHostsFile(alias)
            })
          )
          const port = yield* freePort
          const name = `slurm-record-${process.pid}`
          const events = yield* Serving.launch({
            host: login,
            name,
            argv: fixedStory(standin.modelPath, port),
            env: { STANDIN_PHASE_SECONDS: "0.02" }
          }).pipe(Stream.runCollect)
          const last = Chunk.toReadonlyArray(events).at(-1)
          assert.strictEqual(last?._tag, "Launched", JSON.stringify(last))
          const job = (yield* SlurmPlacement.jobs(login)).find((j) => j.name === `mlops-${name}`)
          assert.deepStrictEqual([job?.slurmState, job?.gpus, job?.timeLimitSeconds], ["RUNNING", 2, 600])
          const spawned = Chunk.toReadonlyArray(events).find((e) => e._tag === "Spawned")
          const runDir = spawned?._tag === "Spawned" ? spawned.runDir : ""
          assert.strictEqual(fs.readFileSync(path.join(runDir, "job"), "utf8").trim(), job?.id)
          assert.strictEqual(spawned?._tag === "Spawned" ? spawned.job : undefined, job?.id)
          const meta = JSON.parse(fs.readFileSync(path.join(runDir, "meta.json"), "utf8"))
          assert.strictEqual(meta.placement, "slurm")

          // status from the record: alive by the job's state, healthy through the node; the
          // scheduler is asked for the job once (liveness, node and record from one answer)
          const { result: statuses, jobQueries } = yield* countingJobQueries(
            Serving.statusOfHost(login, { name })
          )
          assert.strictEqual(jobQueries, 1)
          const [running] = statuses
          assert.deepStrictEqual([running?.alive, running?.phase, running?.healthy], [true, "ready", true])
          assert.deepStrictEqual(
            [running?.job?.id, running?.job?.state, running?.job?.node, running?.job?.gpus],
            [job?.id, `RUNNING on ${slurm.node}`, slurm.node, 2]
          )

          // the cluster's mlops jobs, as `status` lists them under the deployments
          const listed = (yield* Status.clusterJobs(login)).find((j) => j.id === job?.id)
          assert.deepStrictEqual(
            [listed?.name, listed?.state, listed?.node, listed?.gpus],
            [name, `RUNNING on ${slurm.node}`, slurm.node, 2]
          )
          assert.deepStrictEqual(yield* Status.clusterJobs(alias), [], "not a login node: no jobs asked for")

          // stop: scancel, the job leaves the running states, recorded as a deliberate stop
          const stopped = yield* Stop.stop(login, name)
          assert.strictEqual(stopped.outcome, "terminated")
          const after = yield* slurm.client("scontrol", ["show", "job", "-o", job!.id])
          assert.include(after, "JobState=CANCELLED")
          const [ended] = yield* Serving.statusOfHost(login, { name })
          assert.deepStrictEqual(
            [ended?.alive, ended?.stopped, ended?.failure],
            [false, "terminated", undefined]
          )
        })
    )

    it.effect(
      "a launch whose job crashes: the classified failure with its fix, after the job's FAILED state",
      () =>
        Effect.gen(function* () {
          const { standin } = yield* Cluster
          const port = yield* freePort
          const states: Array<string> = []
          const failure = yield* Serving.launch({
            host: alias,
            name: `slurm-crash-${process.pid}`,
            argv: [...fixedStory(standin.modelPath, port), "--mem-fraction-static", "0.96"],
            env: { STANDIN_PHASE_SECONDS: "0.02" },
            // given here, the settings make the launch a Slurm job (the host's entry has none)
            slurm: { time: "5:00" }
          }).pipe(
            Stream.tap((event) => Effect.sync(() => event._tag === "Job" && states.push(event.state))),
            Stream.runDrain,
            Effect.flip
          )
          assert.strictEqual(failure._tag, "OOM", failure.message)
          assert.include(failure.message, "--mem-fraction-static")
          assert.match(states.at(-1) ?? "", /^FAILED ExitCode=\d+:\d+$/, states.join(" → "))
        })
    )

    it.effect(
      "an sbatch answer lost to a cut connection, before or after the job was queued: the job is found by its token or submitted once, never twice",
      () =>
        Effect.gen(function* () {
          const { slurm, sshd, standin } = yield* Cluster
          const pool = yield* ConnectionPool.ConnectionPool
          for (const when of ["after", "before"] as const) {
            const name = `lost-${when}`
            let cuts = 0
            // our own pool, whose first sbatch answer is lost: the connection is really cut
            // (its sshd session processes killed), after or before sbatch ran
            const cutting: typeof pool = {
              ...pool,
              get: (host) =>
                Effect.map(pool.get(host), (conn) => ({
                  ...conn,
                  exec: (command, options) => {
                    if (command.argv[0] !== "sbatch" || cuts > 0) return conn.exec(command, options)
                    cuts++
                    const lost = new ConnectionLost({ host, reason: "cut by the test" })
                    return when === "after"
                      ? conn
                          .exec(command, options)
                          .pipe(Effect.zipRight(sshd.killSessionProcesses), Effect.zipRight(lost))
                      : sshd.killSessionProcesses.pipe(Effect.zipRight(lost))
                  }
                }))
            }
            const placement = SlurmPlacement.make({ settings: {}, gpus: 1, jobName: `mlops-${name}` })
            const runDir = runDirFor(standin, name)
            const placed = yield* placement
              .spawn(alias, serverCommand(standin, yield* freePort), {
                runDir,
                logPath: path.join(runDir, "log"),
                token: `token-${name}`
              })
              .pipe(Effect.provideService(ConnectionPool.ConnectionPool, cutting))
            assert.strictEqual(cuts, 1, when)
            const queued = (yield* slurm.client("squeue", ["-h", `--name=mlops-${name}`, "-o", "%i"]))
              .split("\n")
              .filter((line) => line.trim() !== "")
            assert.deepStrictEqual(queued, [placed.job], `${when}: exactly the recorded job`)
            assert.strictEqual(fs.readFileSync(path.join(runDir, "job"), "utf8").trim(), placed.job)
            yield* slurm.client("scancel", [placed.job!])
          }
        })
    )

    it.effect(
      "more GPUs than any node has is refused before sbatch: nothing submitted, nothing written",
      () =>
        Effect.gen(function* () {
          const { slurm, standin } = yield* Cluster
          const before = yield* slurm.client("squeue", ["-h", "-o", "%i"])
          const placement = SlurmPlacement.make({ settings: {}, gpus: 3, jobName: "mlops-big" })
          const runDir = runDirFor(standin, "big")
          const refused = yield* Effect.flip(
            placement.spawn(alias, serverCommand(standin, 1), {
              runDir,
              logPath: path.join(runDir, "log"),
              token: "t"
            })
          )
          assert.strictEqual(refused._tag, "SlurmPreflightFailed")
          assert.include(
            refused.message,
            "3 GPUs of GRES gpu on one node requested; the largest node of partition debug has 2"
          )
          assert.strictEqual(yield* slurm.client("squeue", ["-h", "-o", "%i"]), before)
          assert.isFalse(fs.existsSync(runDir))
        })
    )
  }
)
