/**
 * `CrossNodeCheck.gather` on real hosts with networks of their own (network namespaces, each
 * with its own sshd): a node's clock, the model config's hash and its interfaces, read over
 * SSH from the node; a node with a second interface gets the one on the head's subnet
 * suggested for NCCL and Gloo.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import { Effect, Layer } from "effect"
import * as NetHosts from "../../../core/test/support/NetHosts.js"
import * as Sshd from "../../../core/test/support/Sshd.js"
import * as CrossNodeCheck from "../../src/CrossNodeCheck.js"

describe("CrossNodeCheck on network-namespace hosts", () => {
  it.live(
    "reads each node's clock, model config and interfaces; suggests the interface that reaches the head",
    () =>
      Effect.gen(function* () {
        const [a, b] = yield* NetHosts.make(2)
        // a second interface on b (a documentation address, inside b only), on another subnet (as docker0 or a second NIC would be; a veth
        // pair inside b, as this kernel may have no dummy devices)
        execFileSync("ip", [
          "netns",
          "exec",
          b!.name,
          "ip",
          "link",
          "add",
          "extra0",
          "type",
          "veth",
          "peer",
          "name",
          "extra1"
        ])
        execFileSync("ip", [
          "netns",
          "exec",
          b!.name,
          "ip",
          "addr",
          "add",
          "198.51.100.5/24",
          "dev",
          "extra0"
        ])
        execFileSync("ip", ["netns", "exec", b!.name, "ip", "link", "set", "extra0", "up"])
        const sshdA = yield* Sshd.start({ alias: "node-a", namespace: a! })
        const sshdB = yield* Sshd.start({ alias: "node-b", namespace: b! })
        const config = path.join(sshdA.dir, "ssh_config.both")
        fs.writeFileSync(
          config,
          `${fs.readFileSync(sshdA.sshConfigPath, "utf8")}\n${fs.readFileSync(sshdB.sshConfigPath, "utf8")}`
        )
        const model = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-model-"))
        fs.writeFileSync(path.join(model, "config.json"), '{"architectures": ["DeepseekV3ForCausalLM"]}\n')
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => fs.rmSync(model, { recursive: true, force: true }))
        )
        const live = ConnectionPool.layer().pipe(
          Layer.provideMerge(Hosts.layer({ sshConfig: config, mlopsHome: path.join(sshdA.dir, "mlops") }))
        )
        yield* Effect.gen(function* () {
          const pool = yield* ConnectionPool.ConnectionPool
          const facts = yield* Effect.forEach(["node-a", "node-b"], (host) =>
            Effect.flatMap(pool.get(host), (conn) =>
              CrossNodeCheck.gather(conn, { modelPath: model, install: "sglang 0.5.11", gpus: 2 })
            )
          )
          const [fa, fb] = facts
          // the same file (one machine's disk): one hash; clocks are this machine's
          assert.match(fa!.modelConfig ?? "", /^[0-9a-f]{64}$/)
          assert.strictEqual(fb!.modelConfig, fa!.modelConfig)
          for (const f of facts) assert.isAtMost(Math.abs(f.clockOffsetMs ?? Number.POSITIVE_INFINITY), 2000)
          assert.deepStrictEqual(
            fa!.interfaces.map((i) => i.address),
            [a!.address]
          )
          assert.deepStrictEqual(
            fb!.interfaces.map((i) => i.address).sort(),
            ["198.51.100.5", b!.address].sort()
          )
          const problems = CrossNodeCheck.compare(facts, {
            modelPath: model,
            gpusPerNode: 2,
            headAddress: a!.address
          })
          assert.deepStrictEqual(
            problems.map((p) => (p._tag === "ChooseInterface" ? [p._tag, p.host, p.suggested] : [p._tag])),
            [["ChooseInterface", "node-b", fb!.interfaces.find((i) => i.address === b!.address)?.name]]
          )
          // a path no node has: missing on each
          const missing = yield* Effect.flatMap(pool.get("node-b"), (conn) =>
            CrossNodeCheck.gather(conn, {
              modelPath: path.join(model, "nope"),
              install: undefined,
              gpus: undefined
            })
          )
          assert.isUndefined(missing.modelConfig)
        }).pipe(Effect.provide(live))
      }).pipe(Effect.scoped)
  )

  it.live("a model that differs on one node and is missing on another, at the same path: each named", () =>
    Effect.gen(function* () {
      const hosts = yield* NetHosts.make(3)
      // each host's own files at /tmp/<shared>/model (a mount namespace per host)
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-models-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true })))
      const modelPath = path.join(root, "model")
      fs.mkdirSync(modelPath)
      const own = (label: string, config: string | undefined) => {
        const dir = path.join(root, label)
        fs.mkdirSync(dir)
        if (config !== undefined) fs.writeFileSync(path.join(dir, "config.json"), config)
        return dir
      }
      const same = '{"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61}\n'
      const dirs = [own("a", same), own("b", same.replace("61", "60")), own("c", undefined)]
      const sshds = yield* Effect.forEach(["a", "b", "c"], (label, i) =>
        Sshd.start({
          alias: `node-${label}`,
          namespace: hosts[i]!,
          binds: [{ from: dirs[i]!, to: modelPath }]
        })
      )
      const config = path.join(sshds[0]!.dir, "ssh_config.all")
      fs.writeFileSync(config, sshds.map((s) => fs.readFileSync(s.sshConfigPath, "utf8")).join("\n"))
      const live = ConnectionPool.layer().pipe(
        Layer.provideMerge(Hosts.layer({ sshConfig: config, mlopsHome: path.join(sshds[0]!.dir, "mlops") }))
      )
      const facts = yield* Effect.forEach(["node-a", "node-b", "node-c"], (host) =>
        Effect.flatMap(
          Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get(host)),
          (conn) => CrossNodeCheck.gather(conn, { modelPath, install: "sglang 0.5.11", gpus: 8 })
        )
      ).pipe(Effect.provide(live))
      const problems = CrossNodeCheck.compare(facts, {
        modelPath,
        gpusPerNode: 8,
        headAddress: hosts[0]!.address
      })
      assert.deepStrictEqual(
        problems.map((p) =>
          p._tag === "ModelMissing"
            ? [p._tag, p.host]
            : p._tag === "ModelsDiffer"
              ? [p._tag, Object.keys(p.byHost)]
              : [p._tag]
        ),
        [
          ["ModelMissing", "node-c"],
          ["ModelsDiffer", ["node-a", "node-b"]]
        ]
      )
      // this machine's own view of the path is untouched (the binds are the hosts' own)
      assert.deepStrictEqual(fs.readdirSync(modelPath), [])
    }).pipe(Effect.scoped)
  )
})
