/**
 * The Slurm placement end to end: a real Slurm 22.05 cluster (core's test support), the harness
 * sshd as its login node, and the stand-in SGLang (written from SGLang's facts) as the job's
 * program, listening on the node's address (`NodeAddr` 127.0.0.2: not the login node's
 * loopback, as on a real cluster). Its log is read by the same classifier as on a plain host.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import { ConnectionLost } from "@mlops/core/Errors"
import * as Hosts from "@mlops/core/Hosts"
import * as HttpClient from "@mlops/core/HttpClient"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import type * as Deployment from "@mlops/serve/Deployment"
import type { GpuPlan } from "@mlops/serve/Engine"
import * as Follow from "@mlops/serve/Follow"
import * as Job from "@mlops/serve/Job"
import * as SlurmPlacement from "@mlops/serve/SlurmPlacement"
import * as Status from "@mlops/serve/Status"
import * as Stop from "@mlops/serve/Stop"
import * as Workload from "@mlops/serve/Workload"
import { Chunk, Context, Duration, Effect, Layer, Stream } from "effect"
import type * as TestSlurm from "../../../core/test/support/Slurm.js"
import type * as Sshd from "../../../core/test/support/Sshd.js"
import * as Check from "../../src/Check.js"
import { logs } from "../../src/internal/logs/index.js"
import * as Serving from "../support/serving.js"
import type * as Standin from "./standin/install.js"
import { alias, deploymentDir, fixedStory, freePort, startCluster } from "./support.js"

const SECRET = "hf_slurm_s3cret"

/** The stand-in training run (`mlops run`'s jobs). */
const TRAIN = path.join(import.meta.dirname, "standin", "train.py")

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

/** The stand-in listens where the login node reaches a server on the node: the node's address. */
const onNode = (slurm: TestSlurm.SlurmCluster) => ["--host", slurm.nodeAddress]

/** A command on the host, as a runtime hands it to a placement. */
const onHost = (command: RemoteCommand.RemoteCommand) => ({
  _tag: "OnHost" as const,
  command,
  shown: "sglang"
})

/** A server that mounts nothing (a Slurm job reads the cluster's shared files). */
const noPaths = { model: undefined, caches: [] }

/** The stand-in's launch command (its environment carries a secret, as an HF token would). */
const serverCommand = (
  standin: Standin.Standin,
  slurm: TestSlurm.SlurmCluster,
  port: number,
  extra: ReadonlyArray<string> = [],
  phaseSeconds = "0.02"
) =>
  RemoteCommand.make(
    [
      path.join(standin.venv, "bin", "python"),
      "-m",
      "sglang.launch_server",
      "--model-path",
      standin.modelPath,
      "--port",
      String(port),
      ...onNode(slurm),
      ...extra
    ],
    { env: { STANDIN_PHASE_SECONDS: phaseSeconds, HF_TOKEN: SECRET } }
  )

/** `program`, with the remote commands it ran whose words match `pattern` counted. */
const counting = <A, E, R>(pattern: RegExp, program: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const pool = yield* ConnectionPool.ConnectionPool
    let count = 0
    const countingPool = ConnectionPool.ConnectionPool.of({
      get: (host) =>
        Effect.map(pool.get(host), (conn) => ({
          ...conn,
          exec: (command, options) => {
            if (pattern.test(RemoteCommand.describe(command))) count++
            return conn.exec(command, options)
          }
        })),
      invalidate: pool.invalidate
    })
    const result = yield* Effect.provideService(program, ConnectionPool.ConnectionPool, countingPool)
    return { result, count }
  })

/** The scheduler's job lookups (`squeue -j`, `scontrol show job`, `sacct -j`). */
const JOB_QUERY = /^(squeue .*-j |scontrol show job |sacct .*-j )/

/** The GPUs a launch needs: `count` on one node. */
const plan = (count: number): GpuPlan => ({
  total: count,
  nodes: 1,
  perNode: count,
  first: 0,
  step: 1,
  elsewhere: "",
  fewer: (n) => `--tp-size ${n}`
})

/** The Slurm placement for the login node `alias`, with these settings over its entry's. */
const slurmPlacement = (settings: Parameters<typeof SlurmPlacement.spec>[0] = {}) =>
  Effect.gen(function* () {
    const conn = yield* (yield* ConnectionPool.ConnectionPool).get(alias)
    return yield* SlurmPlacement.makeKind({ poll: "250 millis" }).make(
      SlurmPlacement.spec(settings),
      conn.host
    )
  })

let deployments = 0
const runDirFor = (standin: Standin.Standin, name: string) =>
  path.join(standin.stateDir, "deployments", `${name}-${++deployments}`)

const spawnServer = (
  name: string,
  gpus: number,
  port: number,
  extra: ReadonlyArray<string> = [],
  phaseSeconds?: string
) =>
  Effect.gen(function* () {
    const { standin, slurm } = yield* Cluster
    const placement = yield* slurmPlacement()
    const runDir = runDirFor(standin, name)
    const placed = yield* placement.spawn(
      alias,
      [onHost(serverCommand(standin, slurm, port, extra, phaseSeconds))],
      {
        runDir,
        logPath: path.join(runDir, "log"),
        token: `token-${name}`,
        name,
        paths: noPaths,
        gpus: plan(gpus)
      }
    )
    return { placement, placed }
  })

const jobOf = (placed: { readonly server: { readonly ids: Readonly<Record<string, string | number>> } }) =>
  String(placed.server.ids.job)

/** A second alias for the test sshd whose hosts.json entry makes it a Slurm login node (for the scope). */
const loginNode = (entry: Record<string, unknown> = { time: "10:00" }) =>
  Effect.gen(function* () {
    const { standin, sshd } = yield* Cluster
    const login = "cluster-login"
    const sshConfig = fs.readFileSync(sshd.sshConfigPath, "utf8")
    fs.writeFileSync(
      sshd.sshConfigPath,
      `${sshConfig}\n${sshConfig.replace("Host testhost", `Host ${login}`)}`
    )
    const hostsPath = path.join(standin.mlopsHome, "hosts.json")
    const hosts = JSON.parse(fs.readFileSync(hostsPath, "utf8"))
    hosts.hosts[login] = { ...hosts.hosts[alias], slurm: entry }
    fs.writeFileSync(hostsPath, JSON.stringify(hosts))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        fs.writeFileSync(sshd.sshConfigPath, sshConfig)
        standin.writeHostsFile(alias)
      })
    )
    return login
  })

layer(Layer.provideMerge(live, cluster), { excludeTestServices: true, timeout: Duration.minutes(3) })(
  "SGLang on Slurm (real cluster, stand-in engine)",
  (it) => {
    it.effect(
      "waits PENDING (Resources) behind a job holding both GPUs, then runs to ready, reached at its node's address through the login node",
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
          // ~3 s from its start to ready: the 1 s state poll sees it RUNNING first, also on a busy machine
          const { placement, placed } = yield* spawnServer("ready", 1, port, [], "0.3")
          const seen: Array<string> = []
          let released = false
          // followed until its ready line: the launch's own follow, as a stream
          const events = yield* Follow.follow(placed, Workload.server(logs, Effect.void)).pipe(
            Stream.tap((event) =>
              Effect.gen(function* () {
                if (event._tag !== "State") return
                seen.push(event.state)
                // once it waits for the GPUs, the holder leaves
                if (event.state === "PENDING (Resources)" && !released) {
                  released = true
                  yield* slurm.client("scancel", [holder])
                }
              })
            ),
            Stream.runCollect
          )
          assert.include(seen, "PENDING (Resources)")
          assert.include(seen, `RUNNING on ${slurm.node}`)
          assert.strictEqual(
            Chunk.last(events).pipe((last) => last._tag === "Some" && last.value._tag),
            "Log"
          )

          // reached through the login node at the node's address (not the login node's loopback)
          const conn = yield* (yield* ConnectionPool.ConnectionPool).get(alias)
          const address = yield* placed.address(conn)
          assert.strictEqual(address, slurm.nodeAddress, "the node's NodeAddr")
          const client = yield* HttpClient.make(conn, { port, target: address })
          assert.strictEqual((yield* client.request({ method: "GET", path: "/health" })).status, 200)
          assert.include(
            (yield* client.request({ method: "GET", path: "/v1/models" })).body,
            standin.modelPath
          )
          const generated = yield* client.request({
            method: "POST",
            path: "/generate",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ text: "Hello", sampling_params: { max_new_tokens: 4 } })
          })
          assert.strictEqual(generated.status, 200)

          // the placement's word on it, from one scheduler query
          const seenNow = yield* placed.inspect(conn)
          assert.deepStrictEqual(
            [seenNow.alive, seenNow.state, seenNow.address, seenNow.details.job],
            [true, `RUNNING on ${slurm.node}, 1 GPUs`, slurm.nodeAddress, jobOf(placed)]
          )
          // every user's mlops jobs, as the login node's placement lists them
          const others = yield* placement.neighbours(conn)
          const row = others?.records.find((record) => record.id === jobOf(placed))
          assert.deepStrictEqual(
            [row?.state, row?.node, row?.gpus],
            [`RUNNING on ${slurm.node}`, slurm.node, 1]
          )

          // the secret went through the 0600 env file only
          const script = fs.readFileSync(path.join(placed.runDir, "job.sh"), "utf8")
          assert.notInclude(script, SECRET)
          assert.match(script.trimEnd().split("\n").pop()!, /^exec /)
          assert.strictEqual(fs.statSync(path.join(placed.runDir, "env")).mode & 0o777, 0o600)
          assert.strictEqual(fs.statSync(placed.logPath).mode & 0o777, 0o600)
          assert.strictEqual(fs.statSync(placed.runDir).mode & 0o777, 0o700)
          assert.notInclude(yield* slurm.client("scontrol", ["show", "job", "-o", jobOf(placed)]), SECRET)

          // stop = scancel, then the job has left the running states
          assert.strictEqual(yield* placed.stop(conn), "terminated")
          assert.include(
            yield* slurm.client("scontrol", ["show", "job", "-o", jobOf(placed)]),
            "JobState=CANCELLED"
          )
          assert.isFalse(yield* placed.isAlive(conn))
          assert.strictEqual(yield* placed.stop(conn), "exited-before", "stopping again is a no-op")
        }).pipe(Effect.scoped)
    )

    it.effect("a crash is classified with its fix and named with the job's FAILED state", () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const { placed } = yield* spawnServer("oom", 2, port, [
          "--tp-size",
          "2",
          "--mem-fraction-static",
          "0.96"
        ])
        const ended = yield* Follow.follow(placed, Workload.server(logs, Effect.void)).pipe(
          Stream.runDrain,
          Effect.flip
        )
        assert.strictEqual(ended._tag, "SlurmJobEnded")
        if (!(ended instanceof SlurmPlacement.SlurmJobEnded)) return
        assert.match(ended.state, /^FAILED ExitCode=\d+:\d+$/)
        assert.strictEqual(ended.failure?._tag, "OOM")
        assert.include(ended.message, "--mem-fraction-static")
        assert.include(ended.message, `Slurm job ${jobOf(placed)}`)
      })
    )

    it.scoped(
      "the launch program with the Slurm placement: queued past its stall timeout, then ready; --tunnel reaches the server on the node",
      () =>
        Effect.gen(function* () {
          const { standin, slurm } = yield* Cluster
          const port = yield* freePort
          const name = `slurm-launch-${process.pid}`
          // both GPUs held for 8 s: the launch waits in the queue longer than its stall timeout
          const holder = (yield* slurm.client("sbatch", [
            "--parsable",
            "--gres=gpu:2",
            "--output=/dev/null",
            "--wrap",
            "sleep 300"
          ])).trim()
          yield* Effect.forkScoped(Effect.delay(slurm.client("scancel", [holder]), "8 seconds"))
          // a failed assertion must not leave the job holding the GPUs the next tests ask for
          yield* Effect.addFinalizer(() => Effect.ignore(Stop.stop(alias, name)))
          const states: Array<string> = []
          let health: number | undefined
          let launched: Deployment.Deployment | undefined
          // the stream keeps the tunnel open until it is no longer read: use it from the stream
          yield* Serving.launch({
            host: alias,
            name,
            argv: [...fixedStory(standin.modelPath, port), ...onNode(slurm)],
            // ~3 s from its start to ready: several 1 s state polls see it RUNNING first, also on a busy machine
            env: { STANDIN_PHASE_SECONDS: "0.3" },
            stallTimeout: "2 seconds",
            placement: SlurmPlacement.spec(),
            tunnel: true
          }).pipe(
            Stream.tap((event) =>
              Effect.gen(function* () {
                if (event._tag === "PlacementState") states.push(event.state)
                if (event._tag !== "Launched") return
                launched = event.deployment
                const response = yield* Effect.promise(() => fetch(`${event.deployment.url}/health`))
                health = response.status
              })
            ),
            Stream.takeUntil((event) => event._tag === "Launched"),
            Stream.runDrain
          )
          // the job's states reach the caller as events: queued behind the holder, then running
          assert.include(states, "PENDING (Resources)")
          assert.include(states, `RUNNING on ${slurm.node}`)
          assert.match(launched?.url ?? "", /^http:\/\/127\.0\.0\.1:\d+$/, "the local end of the tunnel")
          assert.strictEqual(health, 200, "the tunnel reaches the server on the node")
          assert.strictEqual(launched?.server.placement, "slurm")
          assert.strictEqual((yield* Stop.stop(alias, name)).outcome, "terminated")
        })
    )

    it.scoped(
      "a login node whose hosts.json entry has slurm: preflight asks the cluster, not the login node's GPUs; status and stop work from the record",
      () =>
        Effect.gen(function* () {
          const { standin, slurm } = yield* Cluster
          const login = yield* loginNode()
          const port = yield* freePort
          const name = `slurm-record-${process.pid}`
          const { result: events, count: gpuProbes } = yield* counting(
            /^nvidia-smi /,
            Serving.launch({
              host: login,
              name,
              argv: [...fixedStory(standin.modelPath, port), ...onNode(slurm)],
              env: { STANDIN_PHASE_SECONDS: "0.02" }
            }).pipe(Stream.runCollect)
          )
          const all = Chunk.toReadonlyArray(events)
          const last = all.at(-1)
          assert.strictEqual(last?._tag, "Launched", JSON.stringify(last))
          if (last?._tag !== "Launched") return
          // the login node's GPUs are not the job's: none probed, the cluster's partition checked
          assert.strictEqual(gpuProbes, 0, "no nvidia-smi on the login node")
          const preflight = all.find((e) => e._tag === "Preflight")
          assert.isTrue(preflight?._tag === "Preflight" && preflight.facts.gpus === undefined)
          assert.include(
            preflight?._tag === "Preflight" ? (preflight.facts.placement.summary ?? "") : "",
            `Slurm partition ${slurm.partition}`
          )
          // where it answers: the node's address, as the login node reaches it
          assert.strictEqual(last.deployment.url, `http://${slurm.nodeAddress}:${port}`)
          const spawned = all.find((e) => e._tag === "Spawned")
          const job = spawned?._tag === "Spawned" ? String(spawned.server.ids.job) : ""
          const runDir = spawned?._tag === "Spawned" ? spawned.runDir : ""
          assert.strictEqual(fs.readFileSync(path.join(runDir, "job"), "utf8").trim(), job)
          assert.strictEqual(
            spawned?._tag === "Spawned" ? spawned.server.started : "",
            `submitted Slurm job ${job}`
          )
          const meta = JSON.parse(fs.readFileSync(path.join(runDir, "meta.json"), "utf8"))
          assert.deepStrictEqual(meta.placement, { kind: "slurm", settings: { time: "10:00" } })
          assert.include(yield* slurm.client("scontrol", ["show", "job", "-o", job]), "TimeLimit=00:10:00")

          // status from the record: alive by the job's state, healthy through the node; the
          // scheduler is asked for the job once (liveness, node and record from one answer)
          const { result: statuses, count: jobQueries } = yield* counting(
            JOB_QUERY,
            Serving.statusOfHost(login, { name })
          )
          assert.strictEqual(jobQueries, 1)
          const [running] = statuses
          assert.deepStrictEqual([running?.alive, running?.phase, running?.healthy], [true, "ready", true])
          assert.deepStrictEqual(
            [running?.server?.label, running?.state, running?.details.node, running?.details.gpus],
            [`Slurm job ${job}`, `RUNNING on ${slurm.node}, 2 GPUs`, slurm.node, 2]
          )

          // the cluster's mlops jobs, as `status` lists them under the deployments
          const listed = (yield* Status.neighbours(login))?.records.find((j) => j.id === job)
          assert.deepStrictEqual(
            [listed?.name, listed?.state, listed?.node, listed?.gpus],
            [name, `RUNNING on ${slurm.node}`, slurm.node, 2]
          )
          assert.isUndefined(yield* Status.neighbours(alias), "not a login node: nothing asked")

          // stop: scancel, the job leaves the running states, recorded as a deliberate stop
          const stopped = yield* Stop.stop(login, name)
          assert.deepStrictEqual([stopped.outcome, stopped.server.label], ["terminated", `Slurm job ${job}`])
          assert.include(yield* slurm.client("scontrol", ["show", "job", "-o", job]), "JobState=CANCELLED")
          const [ended] = yield* Serving.statusOfHost(login, { name })
          assert.deepStrictEqual(
            [ended?.alive, ended?.stopped, ended?.failure],
            [false, "terminated", undefined]
          )
          assert.isFalse(yield* Stop.isRunning(login, name))
        })
    )

    it.scoped(
      "check --host on a login node: the cluster's checks (partition, GPUs of a node) instead of the login node's nvidia-smi",
      () =>
        Effect.gen(function* () {
          const { standin, slurm } = yield* Cluster
          const login = yield* loginNode()
          const { result, count } = yield* counting(
            /^nvidia-smi /,
            Check.host({ host: login, argv: fixedStory(standin.modelPath, 30000) })
          )
          assert.strictEqual(count, 0, "no nvidia-smi on the login node")
          assert.include(result.placement?.description ?? "", `a Slurm job from ${login}`)
          assert.include(result.placement?.summary ?? "", `Slurm partition ${slurm.partition}`)
          assert.strictEqual(result.version, "0.5.11")
          // the cluster cannot take 4 GPUs on one node: refused like a launch, before anything runs
          const refused = yield* Effect.flip(
            Check.host({ host: login, argv: [...fixedStory(standin.modelPath, 30000), "--tp", "4"] })
          )
          assert.strictEqual(refused._tag, "SlurmPreflightFailed", refused.message)
        })
    )

    it.effect(
      "a launch whose job crashes fails with SlurmJobEnded: the classified failure with its fix and the job's FAILED state, as Follow reports it",
      () =>
        Effect.gen(function* () {
          const { standin, slurm } = yield* Cluster
          const port = yield* freePort
          const states: Array<string> = []
          const name = `slurm-crash-${process.pid}`
          const failure = yield* Serving.launch({
            host: alias,
            name,
            argv: [...fixedStory(standin.modelPath, port), ...onNode(slurm), "--mem-fraction-static", "0.96"],
            env: { STANDIN_PHASE_SECONDS: "0.02" },
            // asked for here, the settings make the launch a Slurm job (the host's entry has none)
            placement: SlurmPlacement.spec({ time: "5:00" })
          }).pipe(
            Stream.tap((event) =>
              Effect.sync(() => event._tag === "PlacementState" && states.push(event.state))
            ),
            Stream.runDrain,
            Effect.flip
          )
          assert.strictEqual(failure._tag, "SlurmJobEnded", failure.message)
          if (!(failure instanceof SlurmPlacement.SlurmJobEnded)) return
          assert.strictEqual(failure.failure?._tag, "OOM")
          assert.include(failure.message, "--mem-fraction-static")
          assert.deepStrictEqual(failure.fix, failure.failure?.fix)
          assert.match(failure.state, /^FAILED ExitCode=\d+:\d+$/)
          assert.strictEqual(states.at(-1), failure.state, states.join(" → "))
          // status says the same of it, from its record
          const [ended] = yield* Serving.statusOfHost(alias, { name })
          assert.deepStrictEqual([ended?.alive, ended?.failure?._tag], [false, "SlurmJobEnded"])
          assert.include(ended?.failure?.message ?? "", "--mem-fraction-static")
        })
    )

    it.effect(
      "a launch Slurm's preflight refuses (a time limit over the partition's): nothing submitted, no record left for status to list",
      () =>
        Effect.gen(function* () {
          const { standin, slurm } = yield* Cluster
          const before = yield* slurm.client("squeue", ["-h", "-o", "%i"])
          const name = `slurm-refused-${process.pid}`
          const refused = yield* Effect.flip(
            Serving.launch({
              host: alias,
              name,
              argv: [...fixedStory(standin.modelPath, yield* freePort), ...onNode(slurm)],
              placement: SlurmPlacement.spec({ partition: slurm.shortPartition, time: "20:00" })
            }).pipe(Stream.runDrain)
          )
          assert.strictEqual(refused._tag, "SlurmPreflightFailed", refused.message)
          assert.include(refused.message, "exceeds partition short's MaxTime")
          assert.strictEqual(yield* slurm.client("squeue", ["-h", "-o", "%i"]), before)
          assert.isFalse(fs.existsSync(deploymentDir(standin, name)), "no record written")
          assert.deepStrictEqual(yield* Serving.statusOfHost(alias, { name }), [])
        })
    )

    it.effect("more GPUs than any node has is refused by the placement's preflight: nothing submitted", () =>
      Effect.gen(function* () {
        const { slurm } = yield* Cluster
        const before = yield* slurm.client("squeue", ["-h", "-o", "%i"])
        const placement = yield* slurmPlacement()
        const conn = yield* (yield* ConnectionPool.ConnectionPool).get(alias)
        const refused = yield* Effect.flip(placement.preflight(conn, { name: "big", gpus: plan(3), port: 1 }))
        assert.strictEqual(refused._tag, "SlurmPreflightFailed")
        assert.include(
          refused.message,
          "3 GPUs of GRES gpu on one node requested; the largest node of partition debug has 2"
        )
        assert.strictEqual(yield* slurm.client("squeue", ["-h", "-o", "%i"]), before)
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
            const placement = yield* slurmPlacement()
            const runDir = runDirFor(standin, name)
            const placed = yield* placement
              .spawn(alias, [onHost(serverCommand(standin, slurm, yield* freePort))], {
                runDir,
                logPath: path.join(runDir, "log"),
                token: `token-${name}`,
                name,
                paths: noPaths,
                gpus: plan(1)
              })
              .pipe(Effect.provideService(ConnectionPool.ConnectionPool, cutting))
            assert.strictEqual(cuts, 1, when)
            const queued = (yield* slurm.client("squeue", ["-h", `--name=mlops-${name}`, "-o", "%i"]))
              .split("\n")
              .filter((line) => line.trim() !== "")
            assert.deepStrictEqual(queued, [jobOf(placed)], `${when}: exactly the recorded job`)
            assert.strictEqual(fs.readFileSync(path.join(runDir, "job"), "utf8").trim(), jobOf(placed))
            yield* slurm.client("scancel", [jobOf(placed)])
          }
        })
    )

    it.effect(
      "a job (mlops run) as a Slurm batch job: Slurm queues it and binds its GPU, it is followed to its exit; a crash is classified",
      () =>
        Effect.gen(function* () {
          const { standin } = yield* Cluster
          const python = path.join(standin.venv, "bin", "python")
          const name = `slurm-job-${process.pid}`
          const events = yield* Stream.runCollect(
            Job.run({
              host: alias,
              name,
              // ~2 s: the 1 s state poll sees it RUNNING
              argv: [python, TRAIN, "--steps", "20", "--step-seconds", "0.1"],
              gpus: 1,
              placement: SlurmPlacement.spec({ time: "5:00" })
            })
          ).pipe(Effect.map(Chunk.toArray))
          const last = events.at(-1)
          assert.strictEqual(last?._tag === "Finished" ? last.job.state : last?._tag, "succeeded")
          assert.isTrue(events.some((e) => e._tag === "State" && e.state.startsWith("RUNNING")))
          const steps = events.filter((e) => e._tag === "Output" && e.line.includes("'step'"))
          assert.lengthOf(steps, 20)
          const submitted = events.find((e) => e._tag === "Submitted")
          assert.match(submitted?._tag === "Submitted" ? submitted.server.label : "", /job \d+/)
          const failed = yield* Effect.flip(
            Stream.runDrain(
              Job.run({
                host: alias,
                name: `${name}-oom`,
                argv: [python, TRAIN, "--steps", "4", "--fail", "oom", "--fail-at", "2"],
                gpus: 1,
                placement: SlurmPlacement.spec({ time: "5:00" })
              })
            )
          )
          assert.strictEqual(failed._tag, "JobFailed")
          if (failed._tag === "JobFailed") assert.strictEqual(failed.failure._tag, "OOM")
          // Slurm queues it: nothing of it waits in the host's own queue
          const queue = path.join(standin.stateDir, "jobs", ".queue")
          assert.isTrue(!fs.existsSync(queue) || fs.readdirSync(queue).every((t) => !t.includes(name)))
          yield* Job.remove(alias, name)
          yield* Job.remove(alias, `${name}-oom`)
        })
    )
  }
)
