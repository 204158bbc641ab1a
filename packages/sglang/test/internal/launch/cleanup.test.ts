import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool, RemoteCommand, RemoteProcess } from "@mlops/core"
import { Effect } from "effect"
import * as Cleanup from "../../../src/internal/launch/cleanup.js"
import * as Simulator from "../../../src/Simulator.js"
import { advance, fixedArgv } from "../../support/sim.js"

const connect = Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get("sim"))

/** A simulated server that hangs while loading weights (so it holds its group until killed). */
const hanging = (name: string) =>
  Effect.flatMap(connect, (conn) =>
    RemoteProcess.spawnDetached(
      conn,
      RemoteCommand.make([`${Simulator.python}/bin/python`, "-m", "sglang.launch_server", ...fixedArgv], {
        env: { MLOPS_SIM_HANG: "weights-loading" }
      }),
      { runDir: `/root/runs/${name}` }
    )
  )

describe("Launch cleanup (killGroup)", () => {
  it.effect("kills a running group at once (no grace) and reports it gone", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const proc = yield* hanging("alive")
      yield* advance(2000)
      assert.isTrue(yield* RemoteProcess.isAlive(conn, proc))
      const outcome = yield* Cleanup.killGroup(conn, proc)
      assert.strictEqual(outcome, "gone")
      assert.isFalse(yield* RemoteProcess.isAlive(conn, proc))
      assert.deepStrictEqual(yield* RemoteProcess.exitStatus(conn, proc), { exitCode: null, signal: "KILL" })
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("a group that is already gone is reported gone", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const proc = yield* hanging("gone")
      yield* advance(500)
      yield* conn.exec(RemoteCommand.make(["kill", "-s", "KILL", "--", `-${proc.pgid}`]))
      assert.strictEqual(yield* Cleanup.killGroup(conn, proc), "gone")
    }).pipe(Effect.provide(Simulator.layer))
  )
})
