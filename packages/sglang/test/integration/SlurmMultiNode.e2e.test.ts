/**
 * One Slurm job across two nodes: a real Slurm 22.05 (core's test support) whose two compute
 * nodes are hosts of their own (network namespaces, a slurmd in each, each with its own GPU
 * registry), the harness sshd as the login node, and the stand-in SGLang, whose ranks really
 * meet (node 0 listens on the rendezvous port at its node's address, the other connects to it;
 * anything wrong leaves them waiting silently, as NCCL does).
 *
 * Ready with one rank on each node (the head's address from the allocation, rank 0 reached at
 * the first node's `NodeAddr`); stop ends the job and leaves no GPU memory on either node. The
 * rank on the second node killed: every rank ends with the job, and the launch names the job's
 * end. Too few nodes for `--nodes`: refused before anything is submitted.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import type * as Launch from "@mlops/serve/Launch"
import * as SlurmPlacement from "@mlops/serve/SlurmPlacement"
import * as Stop from "@mlops/serve/Stop"
import { Effect, Exit, Fiber, Stream } from "effect"
import * as Cluster from "../../../core/test/support/Cluster.js"
import * as Serving from "../support/serving.js"
import * as Standin from "./standin/install.js"
import { alias, freePort } from "./support.js"

const env = { STANDIN_PHASE_SECONDS: "0.02" }

const twoNodeCluster = Effect.flatMap(Standin.install, (standin) => Cluster.slurmNodes(2, standin, alias))

type TwoNodes = Effect.Effect.Success<typeof twoNodeCluster>

/** On each node, the live processes holding stand-in GPU memory. */
const gpuHolders = (cluster: TwoNodes) => Cluster.registryHolders(cluster.gpuDirs)

const argvOf = (cluster: TwoNodes, port: number) => [
  "--model-path",
  cluster.standin.modelPath,
  "--tp",
  "4",
  "--host",
  "0.0.0.0",
  "--port",
  String(port)
]

/** The launch of a job across the two nodes (rank 0 serving on `port`), its phases paced by `phaseSeconds`. */
const twoNodes = (cluster: TwoNodes, name: string, port: number, phaseSeconds = "0.02") => ({
  host: alias,
  name,
  argv: argvOf(cluster, port),
  env: { STANDIN_PHASE_SECONDS: phaseSeconds },
  placement: SlurmPlacement.spec({ nodes: 2 })
})

const jobField = (cluster: TwoNodes, job: string, field: string): string | undefined => {
  const text = execFileSync("scontrol", ["show", "job", job], {
    encoding: "utf8",
    env: { ...process.env, ...cluster.slurm.env }
  })
  return new RegExp(`\\b${field}=(\\S+)`).exec(text)?.[1]
}

describe("a Slurm job across two nodes (a slurmd in each of two network namespaces, stand-in SGLang)", () => {
  it.live(
    "ready with one rank on each node, meeting at the first node's address; status shows the job on both, the same launch is the running job; stop ends it and frees every node's GPUs",
    () =>
      Effect.gen(function* () {
        const cluster = yield* twoNodeCluster
        yield* Effect.gen(function* () {
          const port = yield* freePort
          const events: Array<Launch.LaunchProgress> = []
          yield* Serving.launch(twoNodes(cluster, "spread", port)).pipe(
            Stream.runForEach((e) => Effect.sync(() => events.push(e)))
          )
          const launched = events.at(-1)
          assert.strictEqual(launched?._tag, "Launched", JSON.stringify(launched))
          if (launched?._tag !== "Launched") return
          const job = String(launched.deployment.server.ids.job)
          assert.strictEqual(jobField(cluster, job, "NumNodes"), "2")
          assert.strictEqual(jobField(cluster, job, "NodeList"), "node-a,node-b")
          // rank 0 serves on the first node
          assert.strictEqual(launched.deployment.url, `http://${cluster.hosts[0]!.address}:${port}`)
          // each rank runs on its own node (that node's network namespace), on its two GPUs
          assert.deepStrictEqual(Cluster.rankHosts(cluster.hosts, cluster.standin.modelPath), [
            { rank: 0, host: cluster.hosts[0]!.name },
            { rank: 1, host: cluster.hosts[1]!.name }
          ])
          assert.deepStrictEqual(
            gpuHolders(cluster).map((pids) => pids.length),
            [2, 2]
          )
          const log = fs.readFileSync(launched.deployment.logPath, "utf8")
          assert.include(log, `meet at ${cluster.hosts[0]!.address}`)

          // status: one deployment, the job running on both nodes, healthy through the first
          const [row] = yield* Serving.statusOfHost(alias, { name: "spread" })
          assert.isTrue(row?.alive)
          assert.isTrue(row?.healthy)
          assert.include(row?.state ?? "", "RUNNING on node-a,node-b")
          // the same launch again is the running job, not a second one
          const again: Array<Launch.LaunchProgress> = []
          yield* Serving.launch(twoNodes(cluster, "spread", port)).pipe(
            Stream.runForEach((e) => Effect.sync(() => again.push(e)))
          )
          assert.isTrue(
            again.some((e) => e._tag === "AlreadyRunning"),
            JSON.stringify(again.map((e) => e._tag))
          )
          assert.strictEqual(jobField(cluster, job, "JobState"), "RUNNING")

          yield* Stop.stop(alias, "spread")
          assert.strictEqual(jobField(cluster, job, "JobState"), "CANCELLED")
          assert.deepStrictEqual(
            gpuHolders(cluster).map((pids) => pids.length),
            [0, 0]
          )
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    180_000
  )

  it.live(
    "the rank on node-b killed while loading: every rank ends with the job, the launch names the job's end; three nodes asked of two: refused before anything is submitted",
    () =>
      Effect.gen(function* () {
        const cluster = yield* twoNodeCluster
        yield* Effect.gen(function* () {
          const port = yield* freePort
          let killed = false
          const fiber = yield* Serving.launch(twoNodes(cluster, "broken", port, "1")).pipe(
            Stream.tap((e) =>
              e._tag === "Log" &&
              e.event._tag === "PhaseStarted" &&
              e.event.phase === "weights-loading" &&
              !killed
                ? Effect.sync(() => {
                    const pid = Cluster.rankPid(1, cluster.standin.modelPath)
                    if (pid !== undefined) {
                      killed = true
                      process.kill(pid, "SIGKILL")
                    }
                  })
                : Effect.void
            ),
            Stream.runDrain,
            Effect.exit,
            Effect.fork
          )
          const exit = yield* Fiber.join(fiber)
          assert.isTrue(killed, "a rank on node-b was found and killed")
          if (!Exit.isFailure(exit) || exit.cause._tag !== "Fail") return assert.fail(String(exit))
          assert.strictEqual(exit.cause.error._tag, "SlurmJobEnded", exit.cause.error.message)
          // the rank that died is named, not the launcher's consequence
          assert.include(exit.cause.error.message, "task 1 on node-b")
          assert.include(exit.cause.error.message, "SIGKILL")
          assert.deepStrictEqual(
            gpuHolders(cluster).map((pids) => pids.length),
            [0, 0]
          )

          const refused = yield* Effect.exit(
            Serving.launchDeployment({
              host: alias,
              name: "toomany",
              argv: ["--model-path", cluster.standin.modelPath, "--tp", "6", "--port", String(port)],
              env,
              placement: SlurmPlacement.spec({ nodes: 3 })
            })
          )
          if (!Exit.isFailure(refused) || refused.cause._tag !== "Fail") return assert.fail(String(refused))
          assert.include(refused.cause.error.message, "3 nodes with 2 GPUs each requested")
          assert.isFalse(fs.existsSync(path.join(cluster.standin.stateDir, "deployments", "toomany", "job")))
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    180_000
  )
})
