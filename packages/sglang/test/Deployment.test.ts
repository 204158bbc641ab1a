import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool, FakeHost } from "@mlops/core"
import { Effect } from "effect"
import * as Deployment from "../src/Deployment.js"
import * as Simulator from "../src/Simulator.js"

const connect = Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get("sim"))

const files = (name: string): Parameters<typeof Deployment.writeLaunchFiles>[2] => ({
  argv: { argv: ["--model-path", "/m", "--tp", "2"], requestedArgv: ["--model-path", "/m"] },
  resolved: {
    effective: { tp_size: 2 },
    adjustments: ["Attention backend not specified. Use fa3 backend by default."]
  },
  meta: {
    name,
    port: 30000,
    sglangVersion: "0.5.11",
    python: "~/ml-env",
    env: { A: "1" },
    createdAt: 1000,
    mlopsVersion: Deployment.mlopsVersion,
    attempt: 1
  }
})

describe("Deployment", () => {
  it("names are directory names", () => {
    assert.isTrue(Deployment.isValidName("qwen3.6-27b"))
    assert.isFalse(Deployment.isValidName("../etc"))
    assert.isFalse(Deployment.isValidName("a b"))
    assert.isFalse(Deployment.isValidName(""))
  })

  it.effect("the launch files round-trip through the host, with pid files added by the spawner", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const runDir = yield* Deployment.writeLaunchFiles(conn, "one", files("one"))
      assert.strictEqual(runDir, "/root/.mlops/deployments/one")
      const handle = yield* FakeHost.host("sim")
      yield* handle.fs.write(`${runDir}/pid`, "41\n")
      yield* handle.fs.write(`${runDir}/pgid`, "40\n")
      yield* Deployment.writeReady(conn, "one", { readyAt: 5000, phases: [{ phase: "ready", atMs: 4000 }] })
      const state = yield* Deployment.read(conn, "one")
      assert.deepStrictEqual(state?.meta, files("one").meta)
      assert.deepStrictEqual(state?.argv, files("one").argv)
      assert.strictEqual(state?.pid, 41)
      assert.strictEqual(state?.pgid, 40)
      assert.isUndefined(state?.exit)
      const deployment = Deployment.fromState("sim", state!)
      assert.strictEqual(deployment?.url, "http://127.0.0.1:30000")
      assert.strictEqual(deployment?.readyAt, 5000)
      assert.deepStrictEqual(deployment?.phases, [{ phase: "ready", atMs: 4000 }])
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("list finds every deployment directory; a missing or foreign file reads as absent", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      assert.deepStrictEqual(yield* Deployment.list(conn), [])
      yield* Deployment.writeLaunchFiles(conn, "b", files("b"))
      yield* Deployment.writeLaunchFiles(conn, "a", files("a"))
      const handle = yield* FakeHost.host("sim")
      yield* handle.fs.write("/root/.mlops/deployments/a/meta.json", "{not json")
      const states = yield* Deployment.list(conn)
      assert.deepStrictEqual(
        states.map((s) => [s.name, s.meta?.name]),
        [
          ["a", undefined],
          ["b", "b"]
        ]
      )
      assert.isUndefined(yield* Deployment.read(conn, "nope"))
      // ready.json is reset by a new launch
      assert.isUndefined(states[1]!.ready)
    }).pipe(Effect.provide(Simulator.layer))
  )
})
