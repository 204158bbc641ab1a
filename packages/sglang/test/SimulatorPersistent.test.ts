/**
 * `Simulator.layerPersistent`: the sim saved to a state file when its scope closes and restored
 * by the next build, as consecutive `mlops` runs see it. Each `Effect.provide` below is one run.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool, Probes, RemoteCommand, Tunnel } from "@mlops/core"
import { FakeHost } from "@mlops/core/testing"
import { Effect } from "effect"
import * as Simulator from "../src/Simulator.js"
import { advance, drive, fixedArgv } from "./support/sim.js"

const python = `${Simulator.python}/bin/python`
const connect = Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get("sim"))
const runDir = "/root/.mlops/deployments/ok"

const tempStateFile = () =>
  path.join(fs.mkdtempSync(path.join(os.tmpdir(), "mlops-sim-state-")), "sim", "state.json")

const spawnServer = Effect.gen(function* () {
  const conn = yield* connect
  return yield* conn.spawnDetached(
    RemoteCommand.make([python, "-m", "sglang.launch_server", ...fixedArgv], {
      env: { SGLANG_ENABLE_SPEC_V2: "1" }
    }),
    { runDir }
  )
})

const readLog = Effect.flatMap(FakeHost.host("sim"), (h) => h.fs.readText(`${runDir}/log`))

/** What a server looks like from outside: pid/pgid, port holder, GPU memory per pid. */
const observe = Effect.gen(function* () {
  const conn = yield* connect
  const host = yield* FakeHost.host("sim")
  const processes = (yield* host.processes).map((p) => [p.pid, p.pgid, p.runDir])
  const holder = yield* Probes.portHolder(conn, 30000)
  const gpu = (yield* Probes.gpuProcesses(conn)).map((app) => [app.pid, app.usedMemoryMiB])
  return { processes, holder: holder?.pid, gpu }
})

describe("Simulator.layerPersistent", () => {
  it.effect(
    "a ready server is running and ready in the next run: same pid, port, GPU memory; quiet log",
    () =>
      Effect.gen(function* () {
        const sim = Simulator.layerPersistent({ stateFile: tempStateFile() })
        const first = yield* Effect.gen(function* () {
          const proc = yield* spawnServer
          yield* advance(6000)
          return { proc, seen: yield* observe, log: yield* readLog }
        }).pipe(Effect.provide(sim))
        assert.include(first.log, "The server is fired up and ready to roll!")
        assert.strictEqual(first.seen.holder, first.proc.pid)
        assert.isAbove(first.seen.gpu.length, 0)

        yield* Effect.gen(function* () {
          const conn = yield* connect
          const again = yield* observe
          assert.deepStrictEqual(again, first.seen)
          const health = yield* drive(Tunnel.request(conn, { port: 30000, method: "GET", path: "/health" }))
          assert.strictEqual(health.status, 200)
          const models = yield* drive(
            Tunnel.request(conn, { port: 30000, method: "GET", path: "/v1/models" })
          )
          assert.include(models.body, Simulator.modelPath)
          yield* advance(3000)
          assert.strictEqual(yield* readLog, first.log)
          // new processes never reuse a saved pid
          const host = yield* FakeHost.host("sim")
          assert.isAbove(yield* host.nextPid, first.proc.pid)
          // stop it: the stop is what the next run sees
          // the group: the server and its supervisor (which records how it ended)
          assert.strictEqual(yield* host.signal({ pgid: first.proc.pgid }, "TERM"), 2)
        }).pipe(Effect.provide(sim))

        yield* Effect.gen(function* () {
          const after = yield* observe
          assert.deepStrictEqual(after, { processes: [], holder: undefined, gpu: [] })
          const host = yield* FakeHost.host("sim")
          assert.strictEqual(yield* host.fs.readText(`${runDir}/exit`), "signal TERM\n")
          assert.strictEqual(yield* readLog, first.log)
        }).pipe(Effect.provide(sim))
      })
  )

  it.effect("a server still starting when the run ended starts over with its pid and gets ready", () =>
    Effect.gen(function* () {
      const sim = Simulator.layerPersistent({ stateFile: tempStateFile() })
      const proc = yield* Effect.gen(function* () {
        const proc = yield* spawnServer
        yield* advance(500)
        return proc
      }).pipe(Effect.provide(sim))

      yield* Effect.gen(function* () {
        const host = yield* FakeHost.host("sim")
        // the supervisor (pid = pgid) and the server, both with their saved pids
        assert.deepStrictEqual(
          (yield* host.processes).map((p) => [p.pid, p.pgid]),
          [
            [proc.pgid, proc.pgid],
            [proc.pid, proc.pgid]
          ]
        )
        yield* advance(6000)
        assert.include(yield* readLog, "The server is fired up and ready to roll!")
        assert.strictEqual((yield* observe).holder, proc.pid)
      }).pipe(Effect.provide(sim))
    })
  )

  it.effect("a run that changes nothing does not rewrite the state file", () =>
    Effect.gen(function* () {
      const stateFile = tempStateFile()
      const sim = Simulator.layerPersistent({ stateFile })
      yield* Effect.gen(function* () {
        yield* spawnServer
        yield* advance(6000)
      }).pipe(Effect.provide(sim))
      const saved = fs.readFileSync(stateFile, "utf8")
      fs.utimesSync(stateFile, new Date(1_000_000), new Date(1_000_000))

      yield* observe.pipe(Effect.provide(sim))
      assert.strictEqual(fs.statSync(stateFile).mtimeMs, 1_000_000)
      assert.strictEqual(fs.readFileSync(stateFile, "utf8"), saved)
      assert.deepStrictEqual(
        fs.readdirSync(path.dirname(stateFile)),
        ["state.json"],
        "no temp file left behind"
      )
    })
  )

  it.effect("Simulator.layer stays in memory: nothing carries over", () =>
    Effect.gen(function* () {
      yield* Effect.gen(function* () {
        yield* spawnServer
        yield* advance(6000)
      }).pipe(Effect.provide(Simulator.layer))
      const after = yield* observe.pipe(Effect.provide(Simulator.layer))
      assert.deepStrictEqual(after, { processes: [], holder: undefined, gpu: [] })
    })
  )
})
