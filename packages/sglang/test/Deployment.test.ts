import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool } from "@mlops/core"
import { FakeHost } from "@mlops/core/testing"
import * as Deployment from "@mlops/serve/Deployment"
import * as Logs from "@mlops/serve/Logs"
import * as Placements from "@mlops/serve/Placements"
import * as Stop from "@mlops/serve/Stop"
import { Effect } from "effect"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"
import { drive, fixedArgv } from "./support/sim.js"

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
    engine: "sglang",
    engineVersion: "0.5.11",
    placement: { kind: "detached-group" },
    runtime: { kind: "python-env" },
    python: "~/ml-env",
    envNames: ["A"],
    secrets: { salt: "00", sha256: "00" },
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

  it("rootOf/dirOf place deployments under a state directory (default ~/.mlops)", () => {
    assert.strictEqual(Deployment.dirOf("a"), "~/.mlops/deployments/a")
    assert.strictEqual(Deployment.root, "~/.mlops/deployments")
    assert.strictEqual(Deployment.dirOf("a", "/scratch/mlops/"), "/scratch/mlops/deployments/a")
    assert.strictEqual(Deployment.rootOf("/"), "/deployments")
  })

  it.effect("a host's stateDir holds its deployments: launch, status, logs and stop all use it", () =>
    Effect.gen(function* () {
      const launched = yield* drive(
        Serving.launchDeployment({ host: "scratch", name: "s1", argv: fixedArgv, env: {} })
      )
      assert.strictEqual(launched.runDir, "/scratch/mlops/deployments/s1")
      const handle = yield* FakeHost.host("scratch")
      assert.isTrue(yield* handle.fs.exists("/scratch/mlops/deployments/s1/meta.json"))
      assert.isFalse(yield* handle.fs.exists("/root/.mlops"))
      const [status] = yield* drive(Serving.statusOfHost("scratch"))
      assert.deepStrictEqual([status?.name, status?.alive], ["s1", true])
      assert.isAbove((yield* drive(Logs.tail("scratch", "s1"))).length, 0)
      const stopped = yield* drive(Stop.stop("scratch", "s1"))
      assert.strictEqual(stopped.outcome, "terminated")
      assert.strictEqual(yield* handle.fs.readText("/scratch/mlops/deployments/s1/stopped"), "terminated\n")
    }).pipe(
      Effect.provide(
        FakeHost.layer([{ ...Simulator.makeHostSpec({ alias: "scratch" }), stateDir: "/scratch/mlops/" }])
      )
    )
  )

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
      // the record names its placement, which reads its own files back
      const { placed } = yield* Placements.ofDeployment(conn, state!)
      assert.deepStrictEqual(placed?.server.ids, { pid: 41, pgid: 40 })
      assert.strictEqual(placed?.server.label, "pid 41")
      const deployment = Deployment.fromState("sim", state!, placed!, "127.0.0.1")
      assert.strictEqual(deployment?.url, "http://127.0.0.1:30000")
      assert.strictEqual(deployment?.readyAt, 5000)
      assert.deepStrictEqual(deployment?.phases, [{ phase: "ready", atMs: 4000 }])
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "a record written before engines were named reads as SGLang's, its version from sglangVersion",
    () =>
      Effect.gen(function* () {
        const conn = yield* connect
        const runDir = yield* Deployment.writeLaunchFiles(conn, "old", files("old"))
        const handle = yield* FakeHost.host("sim")
        // meta.json as mlops wrote it before this version: no engine, no placement
        yield* handle.fs.write(
          `${runDir}/meta.json`,
          JSON.stringify({
            name: "old",
            port: 30000,
            sglangVersion: "0.5.9",
            python: "~/ml-env",
            envNames: [],
            secrets: { salt: "00", sha256: "00" },
            createdAt: 1000,
            mlopsVersion: "0.1.0",
            attempt: 1
          })
        )
        yield* handle.fs.write(`${runDir}/pid`, "41\n")
        yield* handle.fs.write(`${runDir}/pgid`, "40\n")
        const state = yield* Deployment.read(conn, "old")
        assert.strictEqual(state?.meta?.engine, "sglang")
        assert.deepStrictEqual(Deployment.placementOf(state!.meta!), { kind: "detached-group" })
        assert.deepStrictEqual(Deployment.runtimeOf(state!.meta!), { kind: "python-env" })
        const { placed } = yield* Placements.ofDeployment(conn, state!)
        assert.strictEqual(placed?.server.label, "pid 41")
        const deployment = Deployment.fromState("sim", state!, placed!, "127.0.0.1")
        assert.deepStrictEqual([deployment?.engine, deployment?.engineVersion], ["sglang", "0.5.9"])
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
