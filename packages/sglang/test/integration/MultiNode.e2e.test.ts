/**
 * The multi-node preflight across two real hosts with networks of their own (network
 * namespaces, each with its own sshd) and the stand-in SGLang found on each as a launch finds
 * it: hosts that agree pass with the head's address on their shared network; a rendezvous port
 * taken on the head and too few GPUs per node are each named with host and fix, all at once.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import * as MultiNodePreflight from "@mlops/serve/MultiNodePreflight"
import { Effect, Layer } from "effect"
import * as NetHosts from "../../../core/test/support/NetHosts.js"
import * as Sshd from "../../../core/test/support/Sshd.js"
import * as Serving from "../support/serving.js"
import * as Standin from "./standin/install.js"

describe("multi-node preflight (network-namespace hosts, stand-in SGLang)", () => {
  it.live("agreeing hosts pass; a taken rendezvous port and too few GPUs per node are all named", () =>
    Effect.gen(function* () {
      const standin = yield* Standin.install
      const [a, b] = yield* NetHosts.make(2)
      const sshds = [
        yield* Sshd.start({ alias: "node-a", namespace: a!, extraConfig: standin.sshdConfig }),
        yield* Sshd.start({ alias: "node-b", namespace: b!, extraConfig: standin.sshdConfig })
      ]
      // both hosts run the same venv (one machine's disk), each its own state directory
      fs.writeFileSync(
        path.join(standin.mlopsHome, "hosts.json"),
        JSON.stringify({
          hosts: {
            "node-a": { python: standin.venv, stateDir: path.join(standin.stateDir, "a") },
            "node-b": { python: standin.venv, stateDir: path.join(standin.stateDir, "b") }
          }
        })
      )
      const config = path.join(sshds[0]!.dir, "ssh_config.all")
      fs.writeFileSync(config, sshds.map((s) => fs.readFileSync(s.sshConfigPath, "utf8")).join("\n"))
      const live = ConnectionPool.layer().pipe(
        Layer.provideMerge(Hosts.layer({ sshConfig: config, mlopsHome: standin.mlopsHome }))
      )
      yield* Effect.gen(function* () {
        const request = {
          hosts: ["node-a", "node-b"],
          engines: Serving.engines,
          argv: ["--model-path", standin.modelPath, "--tp", "4", "--nnodes", "2"],
          rendezvousPort: 29500
        }
        const passed = yield* MultiNodePreflight.run(request)
        assert.strictEqual(passed.headAddress, a!.address)
        assert.deepStrictEqual(
          passed.nodes.map((n) => [n.host, n.install, n.gpus]),
          [
            ["node-a", "sglang 0.5.11", 2],
            ["node-b", "sglang 0.5.11", 2]
          ]
        )
        assert.deepStrictEqual(passed.suggestions, [])

        // the head's sshd holds its port there; 8 ranks on 2 nodes need 4 GPUs each
        const refused = yield* Effect.flip(
          MultiNodePreflight.run({
            ...request,
            argv: ["--model-path", standin.modelPath, "--tp", "8", "--nnodes", "2"],
            rendezvousPort: sshds[0]!.port
          })
        )
        assert.strictEqual(refused._tag, "CrossNodeProblems")
        if (refused._tag !== "CrossNodeProblems") return
        assert.deepStrictEqual(
          refused.problems.map((p) => [p.kind, p.host]),
          [
            ["TooFewGpus", "node-a"],
            ["TooFewGpus", "node-b"],
            ["PortTaken", "node-a"]
          ]
        )
        assert.include(refused.message, "give node-b 4 GPUs, or lower --tp/--pp")
      }).pipe(Effect.provide(live))
    }).pipe(Effect.scoped)
  )
})
