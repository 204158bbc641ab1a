/**
 * `mlops` with one deployment across two hosts, end to end: two network-namespace hosts with
 * their own sshd and the stand-in SGLang, whose nodes really meet. `launch --hosts pair` (a group
 * named in hosts.json) brings it
 * up with one rank on each; `status` shows it once with both ranks; `logs --rank 1` reads rank
 * 1's log from its own host; `stop` stops both and says which rank held what. Refusals: a
 * rendezvous port taken on the head (exit 4, every problem named), a host given twice and a
 * rank that does not exist (exit 2).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Cluster from "../../../sglang/test/integration/cluster.js"
import { ExitCode } from "../../src/ExitCodes.js"
import { mlopsOn } from "../support/run.js"

describe("mlops launch --hosts (network-namespace hosts, stand-in SGLang)", () => {
  it.live(
    "launch across two hosts, status with both ranks, logs of rank 1, stop of both; refusals named",
    () =>
      Effect.gen(function* () {
        const cluster = yield* Cluster.make(2)
        const run = mlopsOn(cluster.sshConfig, cluster.standin.mlopsHome)
        const flags = ["--model-path", cluster.standin.modelPath, "--tp", "4"]

        // the pair as a named group in hosts.json
        const hostsFile = path.join(cluster.standin.mlopsHome, "hosts.json")
        fs.writeFileSync(
          hostsFile,
          JSON.stringify({
            ...JSON.parse(fs.readFileSync(hostsFile, "utf8")),
            groups: { pair: ["node-a", "node-b"] }
          })
        )
        const launched = yield* run(
          "launch",
          "--hosts",
          "pair",
          "--name",
          "pair",
          "--env",
          "STANDIN_PHASE_SECONDS=0.02",
          "--",
          ...flags
        )
        assert.strictEqual(launched.code, ExitCode.Ok, launched.text)
        assert.include(launched.text, `ranks meet at ${cluster.hosts[0]!.address}:`)
        assert.include(launched.text, "rank 1: node-b")
        assert.include(launched.text, "pair is ready on node-a, node-b (2 ranks; rank 0 on node-a")

        const status = yield* run("status")
        assert.strictEqual(status.code, ExitCode.Ok, status.text)
        const rows = status.stdout.filter((line) => line.includes("pair"))
        assert.lengthOf(rows, 1, status.text)
        assert.include(rows[0]!, "0:node-a running, 1:node-b running")

        const logs = yield* run("logs", "--host", "node-a", "--name", "pair", "--rank", "1")
        assert.strictEqual(logs.code, ExitCode.Ok, logs.text)
        assert.isTrue(logs.stdout.some((line) => line.includes(" TP2] Load weight end")))
        const noRank = yield* run("logs", "--host", "node-a", "--name", "pair", "--rank", "5")
        assert.strictEqual(noRank.code, ExitCode.Usage, noRank.text)
        assert.include(noRank.text, "has no rank 5: it runs ranks 0-1 on node-a, node-b")

        const stopped = yield* run("stop", "--host", "node-a", "--name", "pair")
        assert.strictEqual(stopped.code, ExitCode.Ok, stopped.text)
        assert.include(stopped.text, "pair stopped on 2 hosts; no GPU memory held on any")
        assert.match(stopped.text, /rank 1 on node-b: pid \d+, terminated/)
        assert.deepStrictEqual(Cluster.processesOf(cluster, "pair"), [[], []])

        const twice = yield* run("launch", "--hosts", "node-a,node-a", "--", ...flags)
        assert.strictEqual(twice.code, ExitCode.Usage, twice.text)
        assert.include(twice.text, "node-a is given twice")

        // node-a's sshd holds its own port there
        const taken = yield* run(
          "launch",
          "--hosts",
          "node-a,node-b",
          "--name",
          "refused",
          "--rendezvous-port",
          String(cluster.sshds[0]!.port),
          "--",
          "--model-path",
          cluster.standin.modelPath,
          "--tp",
          "8"
        )
        assert.strictEqual(taken.code, ExitCode.Preflight, taken.text)
        assert.include(taken.text, "would not start together: 3 problems")
        assert.include(taken.text, "give node-b 4 GPUs, or lower --tp/--pp")
        assert.include(
          taken.text,
          `the rendezvous ${cluster.hosts[0]!.address}:${cluster.sshds[0]!.port} cannot be bound`
        )
      }).pipe(Effect.scoped),
    180_000
  )
})
