/**
 * vLLM as one Slurm job across two nodes: a real Slurm 22.05 whose two compute nodes are network
 * namespaces with a slurmd each (core's `Cluster.slurmNodes`), the harness sshd as the login
 * node, and the stand-in vLLM, whose nodes really meet (node 0's engine core listens on the
 * master port at the first node's address, the headless node connects to it). Ready with node
 * 1 headless, each rank on its own node; stop ends the job and leaves no rank running.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Launch from "@mlops/serve/Launch"
import * as SlurmPlacement from "@mlops/serve/SlurmPlacement"
import * as Stop from "@mlops/serve/Stop"
import { Effect } from "effect"
import * as Cluster from "../../../core/test/support/Cluster.js"
import { VllmEngine } from "../../src/Engine.js"
import * as Standin from "./standin/install.js"
import { alias, freePort } from "./support.js"

describe("vLLM as a Slurm job across two nodes (a slurmd in each of two network namespaces, stand-in vLLM)", () => {
  it.live(
    "ready with node 1 headless, meeting at the first node's address; each rank on its own node; stop ends the job and leaves no rank running",
    () =>
      Effect.gen(function* () {
        const standin = yield* Standin.install(alias)
        const c = yield* Cluster.slurmNodes(2, standin, alias)
        yield* Effect.gen(function* () {
          const port = yield* freePort
          const d = yield* Launch.launchDeployment({
            host: alias,
            engine: VllmEngine,
            name: "spread",
            // one GPU per node, two nodes
            argv: [
              standin.modelPath,
              "--tensor-parallel-size",
              "2",
              "--host",
              "0.0.0.0",
              "--port",
              String(port)
            ],
            env: { STANDIN_PHASE_SECONDS: "0.02" },
            placement: SlurmPlacement.spec({ nodes: 2 })
          })
          assert.strictEqual(d.url, `http://${c.hosts[0]!.address}:${port}`)
          const script = fs.readFileSync(path.join(d.runDir, "job.sh"), "utf8")
          const rank = (n: number) =>
            script.split("\n").find((line) => line.trimStart().startsWith(`${n})`)) ?? ""
          assert.include(rank(0), '--master-addr "$MLOPS_HEAD"')
          assert.notInclude(rank(0), "--headless")
          assert.include(rank(1), "--node-rank 1")
          assert.include(rank(1), "--headless")
          assert.include(fs.readFileSync(d.logPath, "utf8"), `meet at ${c.hosts[0]!.address}`)
          // each rank runs on its own node (that node's network namespace)
          assert.deepStrictEqual(Cluster.rankHosts(c.hosts, standin.modelPath), [
            { rank: 0, host: c.hosts[0]!.name },
            { rank: 1, host: c.hosts[1]!.name }
          ])
          yield* Stop.stop(alias, "spread")
          assert.deepStrictEqual(Cluster.rankHosts(c.hosts, standin.modelPath), [])
        }).pipe(Effect.provide(c.layer))
      }).pipe(Effect.scoped),
    180_000
  )
})
