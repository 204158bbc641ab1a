/**
 * vLLM across two hosts, end to end: two network-namespace hosts with their own sshd running the
 * stand-in vLLM, whose nodes really meet (node 0's engine core listens on the master port, the
 * headless node connects and compares the arguments that shape the model; anything wrong leaves
 * them waiting silently, as NCCL does). Ready with node 1 headless, in the tensor form and in
 * the data-parallel form; its death while loading ends the deployment, named with its rank and
 * host.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Launch from "@mlops/serve/Launch"
import * as Stop from "@mlops/serve/Stop"
import { Effect, Exit, Stream } from "effect"
import * as Cluster from "../../../core/test/support/Cluster.js"
import { VllmEngine } from "../../src/Engine.js"
import * as Standin from "./standin/install.js"

const cluster = (count: number) =>
  Effect.flatMap(Standin.install("node-a"), (standin) => Cluster.on(count, standin))

const request = (
  c: Effect.Effect.Success<ReturnType<typeof cluster>>,
  name: string,
  phaseSeconds: string
): Launch.LaunchRequest => ({
  host: "node-a",
  hosts: c.aliases,
  engine: VllmEngine,
  name,
  // the stand-in's host has one GPU: one rank per host
  argv: [c.standin.modelPath, "--tensor-parallel-size", "2"],
  env: { STANDIN_PHASE_SECONDS: phaseSeconds }
})

const startedArgv = (c: Effect.Effect.Success<ReturnType<typeof cluster>>, rank: number, name: string) =>
  JSON.parse(fs.readFileSync(path.join(c.stateDirs[rank]!, "deployments", name, "argv.json"), "utf8"))
    .argv as Array<string>

describe("vLLM across hosts (network-namespace hosts, stand-in vLLM)", () => {
  it.live(
    "ready on two hosts, node 1 headless; stop leaves nothing on either",
    () =>
      Effect.gen(function* () {
        const c = yield* cluster(2)
        yield* Effect.gen(function* () {
          const d = yield* Launch.launchDeployment(request(c, "pair", "0.02"))
          assert.deepStrictEqual(d.hosts, ["node-a", "node-b"])
          const head = startedArgv(c, 0, "pair")
          const worker = startedArgv(c, 1, "pair")
          assert.strictEqual(head[head.indexOf("--master-addr") + 1], c.hosts[0]!.address)
          assert.strictEqual(worker[worker.indexOf("--node-rank") + 1], "1")
          assert.isFalse(head.includes("--headless"))
          assert.isTrue(worker.includes("--headless"))
          const stopped = yield* Stop.stop("node-a", "pair")
          assert.lengthOf(stopped.ranks, 2)
          assert.deepStrictEqual(Cluster.processesOf(c, "pair"), [[], []])
        }).pipe(Effect.provide(c.layer))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "the data-parallel form: one replica on each of two hosts, node 1 headless from start rank 1, meeting at node-a's RPC port; stop leaves nothing",
    () =>
      Effect.gen(function* () {
        const c = yield* cluster(2)
        yield* Effect.gen(function* () {
          const d = yield* Launch.launchDeployment({
            ...request(c, "replicas", "0.02"),
            argv: [c.standin.modelPath, "--data-parallel-size", "2"]
          })
          assert.deepStrictEqual(d.hosts, ["node-a", "node-b"])
          const head = startedArgv(c, 0, "replicas")
          const worker = startedArgv(c, 1, "replicas")
          const at = (argv: ReadonlyArray<string>, flag: string) =>
            argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined
          assert.strictEqual(at(head, "--data-parallel-address"), c.hosts[0]!.address)
          assert.strictEqual(at(head, "--data-parallel-size-local"), "1")
          assert.strictEqual(at(worker, "--data-parallel-start-rank"), "1")
          assert.isTrue(worker.includes("--headless"))
          assert.isFalse(head.includes("--nnodes") || worker.includes("--nnodes"))
          yield* Stop.stop("node-a", "replicas")
          assert.deepStrictEqual(Cluster.processesOf(c, "replicas"), [[], []])
        }).pipe(Effect.provide(c.layer))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "the headless node killed while loading: every rank stopped, RankFailed names rank 1 on node-b",
    () =>
      Effect.gen(function* () {
        const c = yield* cluster(2)
        yield* Effect.gen(function* () {
          let killed = false
          const exit = yield* Launch.launch(request(c, "doomed", "1")).pipe(
            Stream.tap((e) =>
              !killed &&
              e._tag === "Log" &&
              e.rank?.rank === 1 &&
              e.event._tag === "PhaseStarted" &&
              e.event.phase === "weights-loading"
                ? Effect.sync(() => {
                    killed = true
                    Cluster.killRank(c, 1, "doomed")
                  })
                : Effect.void
            ),
            Stream.runDrain,
            Effect.exit
          )
          assert.isTrue(killed)
          if (!Exit.isFailure(exit) || exit.cause._tag !== "Fail") return assert.fail(String(exit))
          const error = exit.cause.error
          assert.strictEqual(error._tag, "RankFailed")
          if (error._tag !== "RankFailed") return
          assert.deepStrictEqual([error.rank, error.host], [1, "node-b"])
          assert.deepStrictEqual(Cluster.processesOf(c, "doomed"), [[], []])
        }).pipe(Effect.provide(c.layer))
      }).pipe(Effect.scoped),
    120_000
  )
})
