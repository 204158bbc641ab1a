/**
 * One deployment across several hosts, end to end: two and three hosts, each a network namespace
 * with its own address and sshd, running the stand-in SGLang, whose nodes really meet (node 0
 * listens on the rendezvous port, the others connect to the head's address and compare the
 * arguments that shape the model; anything wrong leaves them waiting silently, as NCCL does).
 *
 * Ready on two and three hosts (idempotent; status one row with every rank, logs per rank, stop
 * of every rank with nothing left on any host, rm of every rank's record); a rendezvous port
 * taken on the head refused before anything starts; a worker killed while loading ends the
 * whole deployment, named with its rank, host and cause, within seconds (rank 0 alone would wait
 * forever); a host unreachable for a while is waited out; a rank's OOM named (and auto-fixed)
 * where it happened, over the NCCL error it causes on rank 0.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import type * as Launch from "@mlops/serve/Launch"
import * as Logs from "@mlops/serve/Logs"
import * as Remove from "@mlops/serve/Remove"
import * as Stop from "@mlops/serve/Stop"
import { Chunk, Deferred, Effect, Exit, Fiber, Stream } from "effect"
import * as Serving from "../support/serving.js"
import * as Cluster from "./cluster.js"

const argvOf = (cluster: Cluster.Cluster, tp: number) => [
  "--model-path",
  cluster.standin.modelPath,
  "--tp",
  String(tp)
]

const env = { STANDIN_PHASE_SECONDS: "0.02" }

const runDir = (cluster: Cluster.Cluster, rank: number, name: string) =>
  path.join(cluster.stateDirs[rank]!, "deployments", name)

describe("a deployment across hosts (network-namespace hosts, stand-in SGLang)", () => {
  it.live(
    "ready on two hosts: one rank each, idempotent, status one row with both, logs per rank, stop leaves nothing on either, rm removes both records; a same-named deployment on node-b alone is left alone",
    () =>
      Effect.gen(function* () {
        const cluster = yield* Cluster.make(2)
        yield* Effect.gen(function* () {
          const name = "pair"
          const events: Array<Launch.LaunchProgress> = []
          yield* Serving.launch({
            host: "node-a",
            hosts: cluster.aliases,
            name,
            argv: argvOf(cluster, 4),
            env,
            // the host's own argument check, on rank 0's host with rank 0's command
            remoteCheck: true
          }).pipe(Stream.runForEach((e) => Effect.sync(() => events.push(e))))
          const launched = events.at(-1)
          assert.strictEqual(launched?._tag, "Launched")
          if (launched?._tag !== "Launched") return
          const d = launched.deployment
          assert.isTrue(events.some((e) => e._tag === "RemoteChecked"))
          assert.deepStrictEqual(d.hosts, ["node-a", "node-b"])
          assert.strictEqual(d.host, "node-a")
          // the flags were written for the whole deployment; each rank got its place and the head's address
          const planned = events.find((e) => e._tag === "RanksPlanned")
          assert.strictEqual(
            planned?._tag === "RanksPlanned" ? planned.rendezvous.address : "",
            cluster.hosts[0]!.address
          )
          const spawned = events.filter((e) => e._tag === "Spawned")
          assert.deepStrictEqual(
            spawned.map((e) => (e._tag === "Spawned" ? [e.rank?.rank, e.rank?.host] : [])).sort(),
            [
              [0, "node-a"],
              [1, "node-b"]
            ]
          )
          for (const rank of [0, 1]) {
            const argv = JSON.parse(
              fs.readFileSync(path.join(runDir(cluster, rank, name), "argv.json"), "utf8")
            ).argv as Array<string>
            const at = (flag: string) => argv[argv.indexOf(flag) + 1]
            assert.strictEqual(at("--nnodes"), "2")
            assert.strictEqual(at("--node-rank"), String(rank))
            assert.strictEqual(at("--dist-init-addr")?.split(":")[0], cluster.hosts[0]!.address)
          }
          // each host holds its own two ranks' GPU memory
          assert.deepStrictEqual(Cluster.gpuHolders(cluster), [2, 2])
          // the server answers through rank 0's host
          assert.strictEqual(d.url.startsWith("http://127.0.0.1:"), true)

          const rows = yield* Serving.statusOfHosts(cluster.aliases)
          assert.deepStrictEqual(
            rows.deployments.map((r) => [r.name, r.host, r.ranks.map((k) => [k.rank, k.host, k.alive])]),
            [
              [
                name,
                "node-a",
                [
                  [0, "node-a", true],
                  [1, "node-b", true]
                ]
              ]
            ]
          )
          // the same launch again: the running deployment is the result; other flags are refused
          const again = yield* Serving.launch({
            host: "node-a",
            hosts: cluster.aliases,
            name,
            argv: argvOf(cluster, 4),
            env
          }).pipe(Stream.runCollect)
          assert.deepStrictEqual(
            Chunk.toReadonlyArray(again).map((e) => e._tag),
            ["Connected", "AlreadyRunning", "Launched"]
          )
          const other = yield* Effect.flip(
            Serving.launchDeployment({
              host: "node-a",
              hosts: cluster.aliases,
              name,
              argv: [...argvOf(cluster, 4), "--context-length", "4096"],
              env
            })
          )
          assert.strictEqual(other._tag, "DeploymentExists")

          // rank 1's log is on node-b: its TP2/TP3 lines
          const rankHost = yield* Logs.hostOfRank("node-a", name, 1)
          assert.strictEqual(rankHost, "node-b")
          const lines = yield* Logs.tail(rankHost, name, { lines: 500 })
          assert.isTrue(lines.some((l) => l.text.includes(" TP3] Load weight end")))
          assert.isFalse(lines.some((l) => l.text.includes("fired up")))
          const noRank = yield* Effect.flip(Logs.hostOfRank("node-a", name, 2))
          assert.strictEqual(noRank._tag, "RankNotFound")

          // rm keeps every record while a rank runs
          const running = yield* Effect.flip(Remove.remove("node-a", [name]))
          assert.strictEqual(running._tag, "DeploymentRunning")

          const stopped = yield* Stop.stop("node-a", name)
          assert.deepStrictEqual(stopped.ranks.map((r) => [r.rank, r.host]).sort(), [
            [0, "node-a"],
            [1, "node-b"]
          ])
          assert.deepStrictEqual(Cluster.processesOf(cluster, name), [[], []])
          assert.deepStrictEqual(Cluster.gpuHolders(cluster), [0, 0])

          // once stopped, rm removes every rank's record on its own host
          const removed = yield* Remove.remove("node-a", [name])
          assert.deepStrictEqual(removed.map((r) => r.host).sort(), ["node-a", "node-b"])
          for (const rank of [0, 1]) assert.isFalse(fs.existsSync(runDir(cluster, rank, name)))

          // another deployment of the same name on node-b alone is not rank 1 of this one
          yield* Serving.launchDeployment({
            host: "node-a",
            hosts: cluster.aliases,
            name,
            argv: argvOf(cluster, 4),
            env
          })
          yield* Stop.stop("node-a", name)
          const alone = yield* Serving.launchDeployment({
            host: "node-b",
            name,
            argv: argvOf(cluster, 2),
            env,
            replace: true
          })
          assert.deepStrictEqual(alone.hosts, ["node-b"])
          const stoppedAgain = yield* Stop.stop("node-a", name)
          assert.deepStrictEqual(
            stoppedAgain.ranks.map((r) => [r.rank, r.host]),
            [[0, "node-a"]]
          )
          assert.isTrue(yield* Stop.isRunning("node-b", name))
          const aloneRows = yield* Serving.statusOfHost("node-b", { name })
          assert.deepStrictEqual(
            aloneRows.map((r) => [r.host, r.ranks.length, r.alive]),
            [["node-b", 1, true]]
          )
          yield* Stop.stop("node-b", name)
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "ready on three hosts (tp 6: two ranks on each); replaced on two of them (every old rank stopped, the third host's too); stopped everywhere",
    () =>
      Effect.gen(function* () {
        const cluster = yield* Cluster.make(3)
        yield* Effect.gen(function* () {
          const model = Cluster.sixWayModel(cluster)
          const d = yield* Serving.launchDeployment({
            host: "node-a",
            hosts: cluster.aliases,
            name: "trio",
            argv: ["--model-path", model, "--tp", "6"],
            env
          })
          assert.deepStrictEqual(d.hosts, ["node-a", "node-b", "node-c"])
          assert.deepStrictEqual(Cluster.gpuHolders(cluster), [2, 2, 2])

          // replaced by the same name on two of the hosts: every old rank goes, node-c's too
          const events: Array<Launch.LaunchProgress> = []
          yield* Serving.launch({
            host: "node-a",
            hosts: cluster.aliases.slice(0, 2),
            name: "trio",
            argv: ["--model-path", model, "--tp", "4"],
            env,
            replace: true
          }).pipe(Stream.runForEach((e) => Effect.sync(() => events.push(e))))
          assert.lengthOf(
            events.filter((e) => e._tag === "Replacing"),
            1
          )
          assert.strictEqual(events.at(-1)?._tag, "Launched")
          assert.deepStrictEqual(Cluster.processesOf(cluster, "trio")[2], [])
          assert.deepStrictEqual(Cluster.gpuHolders(cluster), [2, 2, 0])

          const stopped = yield* Stop.stop("node-b", "trio")
          assert.lengthOf(stopped.ranks, 2)
          assert.deepStrictEqual(Cluster.processesOf(cluster, "trio"), [[], [], []])
          assert.deepStrictEqual(Cluster.gpuHolders(cluster), [0, 0, 0])
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "a rendezvous port taken on the head and too few GPUs per node: refused before anything starts, every problem named",
    () =>
      Effect.gen(function* () {
        const cluster = yield* Cluster.make(2)
        yield* Effect.gen(function* () {
          // node-a's sshd holds its own port: the rendezvous cannot bind there
          const taken = cluster.sshds[0]!.port
          const exit = yield* Effect.exit(
            Serving.launchDeployment({
              host: "node-a",
              hosts: cluster.aliases,
              name: "refused",
              argv: argvOf(cluster, 8),
              env,
              rendezvousPort: taken
            })
          )
          assert.isTrue(Exit.isFailure(exit))
          if (!Exit.isFailure(exit) || exit.cause._tag !== "Fail") return assert.fail(String(exit))
          const error = exit.cause.error
          assert.strictEqual(error._tag, "CrossNodeProblems")
          if (error._tag !== "CrossNodeProblems") return
          assert.deepStrictEqual(
            error.problems.map((p) => [p.kind, p.host]),
            [
              ["TooFewGpus", "node-a"],
              ["TooFewGpus", "node-b"],
              ["PortTaken", "node-a"]
            ]
          )
          // nothing was written or started on either host
          for (const rank of [0, 1]) assert.isFalse(fs.existsSync(runDir(cluster, rank, "refused")))
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "a worker killed while loading: the deployment stopped on every host, the failure names rank 1, node-b and the kill",
    () =>
      Effect.gen(function* () {
        const cluster = yield* Cluster.make(2)
        yield* Effect.gen(function* () {
          const name = "doomed"
          // slow phases: the kill lands while rank 1 loads its weights
          const fiber = yield* Serving.launch({
            host: "node-a",
            hosts: cluster.aliases,
            name,
            argv: argvOf(cluster, 4),
            env: { STANDIN_PHASE_SECONDS: "1" }
          }).pipe(
            Stream.tap((e) =>
              e._tag === "Log" &&
              e.rank?.rank === 1 &&
              e.event._tag === "PhaseStarted" &&
              e.event.phase === "weights-loading"
                ? Effect.sync(() => {
                    killedAt = Cluster.killRank(cluster, 1, name)
                  })
                : Effect.void
            ),
            Stream.runDrain,
            Effect.exit,
            Effect.fork
          )
          let killedAt = 0
          const exit = yield* Fiber.join(fiber)
          const failedAt = Date.now()
          assert.isTrue(Exit.isFailure(exit))
          if (!Exit.isFailure(exit) || exit.cause._tag !== "Fail") return assert.fail(String(exit))
          const error = exit.cause.error
          assert.strictEqual(error._tag, "RankFailed")
          if (error._tag !== "RankFailed") return
          assert.strictEqual(error.rank, 1)
          assert.strictEqual(error.host, "node-b")
          assert.strictEqual(error.failure._tag, "ProcessExited")
          assert.include(error.failure.message, "KILL")
          assert.isAbove(killedAt, 0)
          // named within seconds of the kill, not after a rendezvous or NCCL timeout
          assert.isBelow(failedAt - killedAt, 10_000)
          assert.lengthOf(error.stopped, 2)
          assert.deepStrictEqual(Cluster.processesOf(cluster, name), [[], []])
          assert.deepStrictEqual(Cluster.gpuHolders(cluster), [0, 0])
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "node-b unreachable for a while mid-launch: the launch waits it out and comes up, the outage named with rank 1",
    () =>
      Effect.gen(function* () {
        const cluster = yield* Cluster.make(2)
        yield* Effect.gen(function* () {
          const name = "cut"
          const events: Array<Launch.LaunchProgress> = []
          let cut = false
          yield* Serving.launch({
            host: "node-a",
            hosts: cluster.aliases,
            name,
            argv: argvOf(cluster, 4),
            env: { STANDIN_PHASE_SECONDS: "0.3" }
          }).pipe(
            Stream.tap((e) =>
              Effect.gen(function* () {
                events.push(e)
                // node-b's listener stopped and its connections cut while its ranks load
                if (
                  !cut &&
                  e._tag === "Log" &&
                  e.rank?.rank === 1 &&
                  e.event._tag === "PhaseStarted" &&
                  e.event.phase === "weights-loading"
                ) {
                  cut = true
                  yield* cluster.sshds[1]!.pause
                  yield* Effect.fork(Effect.delay(cluster.sshds[1]!.resume, "1500 millis"))
                }
              })
            ),
            Stream.runDrain
          )
          assert.isTrue(cut)
          assert.strictEqual(events.at(-1)?._tag, "Launched")
          const outage = events.filter((e) => e._tag === "Disconnected" || e._tag === "Reconnected")
          assert.isNotEmpty(outage)
          assert.isTrue(
            outage.every(
              (e) => (e._tag === "Disconnected" || e._tag === "Reconnected") && e.rank?.host === "node-b"
            )
          )
          assert.isTrue(outage.some((e) => e._tag === "Reconnected"))
          yield* Stop.stop("node-a", name)
          assert.deepStrictEqual(Cluster.processesOf(cluster, name), [[], []])
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "a CUDA OOM on the last rank (node-b) is named there; with auto-fix every rank starts again with the fix and comes up",
    () =>
      Effect.gen(function* () {
        const cluster = yield* Cluster.make(2)
        yield* Effect.gen(function* () {
          const argv = [...argvOf(cluster, 4), "--mem-fraction-static", "0.97"]
          const failed = yield* Effect.flip(
            Serving.launchDeployment({ host: "node-a", hosts: cluster.aliases, name: "oom", argv, env })
          )
          assert.strictEqual(failed._tag, "RankFailed")
          if (failed._tag !== "RankFailed") return
          assert.deepStrictEqual([failed.rank, failed.host, failed.failure._tag], [1, "node-b", "OOM"])
          assert.include(failed.fix, "--mem-fraction-static")
          assert.deepStrictEqual(Cluster.processesOf(cluster, "oom"), [[], []])

          const events: Array<Launch.LaunchProgress> = []
          yield* Serving.launch({
            host: "node-a",
            hosts: cluster.aliases,
            name: "oom",
            argv,
            env,
            autoFix: 1
          }).pipe(Stream.runForEach((e) => Effect.sync(() => events.push(e))))
          const retried = events.find((e) => e._tag === "AttemptFailed")
          assert.strictEqual(retried?._tag, "AttemptFailed")
          if (retried?._tag !== "AttemptFailed") return
          assert.deepStrictEqual(retried.rank, { rank: 1, host: "node-b" })
          const next = retried.nextArgv ?? []
          assert.isBelow(Number(next[next.indexOf("--mem-fraction-static") + 1]), 0.97)
          const launched = events.at(-1)
          assert.strictEqual(launched?._tag, "Launched")
          if (launched?._tag !== "Launched") return
          assert.deepStrictEqual(launched.deployment.argv, next)
          // the second start's ranks carry the fix on both hosts
          for (const rank of [0, 1]) {
            const started = JSON.parse(
              fs.readFileSync(path.join(runDir(cluster, rank, "oom"), "argv.json"), "utf8")
            ).argv as Array<string>
            assert.strictEqual(
              started[started.indexOf("--mem-fraction-static") + 1],
              next[next.indexOf("--mem-fraction-static") + 1]
            )
          }
          // the same command again (without auto-fix) is the running, fixed deployment
          const again = yield* Serving.launch({
            host: "node-a",
            hosts: cluster.aliases,
            name: "oom",
            argv,
            env
          }).pipe(Stream.runCollect)
          assert.deepStrictEqual(
            Chunk.toReadonlyArray(again).map((e) => e._tag),
            ["Connected", "AlreadyRunning", "Launched"]
          )
          yield* Stop.stop("node-a", "oom")
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "node-b's OOM also breaks rank 0's collective (an NCCL error there): the failure named is node-b's OOM, the cause, not rank 0's consequence",
    () =>
      Effect.gen(function* () {
        const cluster = yield* Cluster.make(2)
        yield* Effect.gen(function* () {
          for (let run = 0; run < 3; run++) {
            const failed = yield* Effect.flip(
              Serving.launchDeployment({
                host: "node-a",
                hosts: cluster.aliases,
                name: `peer-loss-${run}`,
                argv: [...argvOf(cluster, 4), "--mem-fraction-static", "0.97"],
                // node-b's group takes 0.4 s to go after its OOM, while node-a's error is at once
                env: { ...env, STANDIN_PEER_LOSS: "error", STANDIN_TEARDOWN_SECONDS: "0.4" }
              })
            )
            assert.strictEqual(failed._tag, "RankFailed")
            if (failed._tag !== "RankFailed") return
            assert.deepStrictEqual([failed.rank, failed.host, failed.failure._tag], [1, "node-b", "OOM"])
            // rank 0 did fail, of the consequence
            const head = yield* Logs.tail("node-a", `peer-loss-${run}`, { lines: 200 })
            assert.isTrue(head.some((l) => l.text.includes("ncclRemoteError")))
          }
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "interrupted while the ranks load, with stopOnInterrupt: every rank stopped on every host",
    () =>
      Effect.gen(function* () {
        const cluster = yield* Cluster.make(2)
        yield* Effect.gen(function* () {
          const loading = yield* Deferred.make<void>()
          const fiber = yield* Serving.launch({
            host: "node-a",
            hosts: cluster.aliases,
            name: "interrupted",
            argv: argvOf(cluster, 4),
            env: { STANDIN_PHASE_SECONDS: "1" },
            stopOnInterrupt: true
          }).pipe(
            Stream.tap((e) =>
              e._tag === "Log" && e.event._tag === "PhaseStarted" && e.event.phase === "weights-loading"
                ? Deferred.succeed(loading, undefined)
                : Effect.void
            ),
            Stream.runDrain,
            Effect.fork
          )
          yield* Deferred.await(loading)
          assert.isTrue(Cluster.processesOf(cluster, "interrupted").every((p) => p.length > 0))
          yield* Fiber.interrupt(fiber)
          assert.deepStrictEqual(Cluster.processesOf(cluster, "interrupted"), [[], []])
          assert.isFalse(yield* Stop.isRunning("node-a", "interrupted"))
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    120_000
  )
})
