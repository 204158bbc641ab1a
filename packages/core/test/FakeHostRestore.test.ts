/**
 * The FakeHost additions that let a caller save a fake host and restore it later: files
 * exported and imported with their mtime and mode, processes started with a given pid/pgid in
 * a run directory, and pids reserved so an earlier run's pids are never handed out again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, TestClock } from "effect"
import { ConnectionPool } from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import * as RemoteCommand from "../src/RemoteCommand.js"

const cmd = RemoteCommand.make

const worker: FakeHost.Program = {
  match: "worker",
  run: (ctx) =>
    Effect.gen(function* () {
      yield* ctx.stdout.line(`worker ${ctx.pid} in group ${ctx.pgid}`)
      return yield* Effect.never
    })
}

const twoHosts = FakeHost.layer([
  { alias: "old", programs: [worker] },
  { alias: "new", programs: [worker] }
])

describe("FakeHost save and restore", () => {
  it.effect("exportFiles → importFiles copies bytes, mtime and mode to another host", () =>
    Effect.gen(function* () {
      const old = yield* FakeHost.host("old")
      const fresh = yield* FakeHost.host("new")
      yield* TestClock.adjust("5 seconds")
      yield* old.fs.write("~/state/a.txt", "alpha\n")
      yield* old.fs.write("/opt/bin.dat", new Uint8Array([0, 255, 7]))
      const exported = (yield* old.exportFiles).filter((f) => f.path !== "/root")
      const a = exported.find((f) => f.path === "/root/state/a.txt")!
      assert.strictEqual(a.mtimeMs, 5000)
      assert.strictEqual(a.mode, 0o644)

      yield* TestClock.adjust("1 minute")
      yield* fresh.importFiles(exported)
      assert.strictEqual(yield* fresh.fs.readText("~/state/a.txt"), "alpha\n")
      assert.deepStrictEqual([...((yield* fresh.fs.read("/opt/bin.dat")) ?? [])], [0, 255, 7])
      assert.strictEqual((yield* fresh.fs.stat("~/state/a.txt"))?.mtimeMs, 5000)
      assert.deepStrictEqual(
        (yield* fresh.exportFiles).map((f) => [f.path, f.mtimeMs, f.mode]),
        exported.map((f) => [f.path, f.mtimeMs, f.mode])
      )
    }).pipe(Effect.provide(twoHosts))
  )

  it.effect("start with a pid, pgid, start time and run dir: a restored detached process", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("new")
      yield* TestClock.adjust("10 minutes")
      const proc = yield* host.start(cmd(["worker"]), {
        pid: 4242,
        pgid: 4242,
        startedAtMs: 60_000,
        runDir: "~/deployments/a"
      })
      assert.strictEqual(proc.pid, 4242)
      const [info] = yield* host.processes
      assert.deepStrictEqual(
        [info?.pid, info?.pgid, info?.startedAtMs, info?.detached, info?.runDir, info?.logPath],
        [4242, 4242, 60_000, true, "/root/deployments/a", "/root/deployments/a/log"]
      )
      assert.strictEqual(yield* host.fs.readText("~/deployments/a/pid"), "4242\n")
      assert.strictEqual(yield* host.fs.readText("~/deployments/a/pgid"), "4242\n")
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* host.fs.readText("~/deployments/a/log"), "worker 4242 in group 4242\n")
      // the next process gets a pid above the restored one
      assert.strictEqual(yield* host.nextPid, 4243)

      // it ends like a spawnDetached process: the exit file says how
      assert.strictEqual(yield* host.signal({ pgid: 4242 }, "TERM"), 1)
      assert.strictEqual(yield* host.fs.readText("~/deployments/a/exit"), "signal TERM\n")
      assert.deepStrictEqual(yield* host.processes, [])
    }).pipe(Effect.provide(twoHosts))
  )

  it.effect("spawnDetached records the run dir in the process table", () =>
    Effect.gen(function* () {
      const conn = yield* (yield* ConnectionPool).get("old")
      const host = yield* FakeHost.host("old")
      const info = yield* conn.spawnDetached(cmd(["worker"]), { runDir: "~/run" })
      const row = (yield* host.processes).find((p) => p.pid === info.pid)
      assert.deepStrictEqual(
        [row?.argv[0], row?.runDir, row?.logPath],
        ["worker", "/root/run", "/root/run/log"]
      )
    }).pipe(Effect.provide(twoHosts))
  )

  it.effect("reservePids keeps an earlier run's pids unique; a running pid cannot be reused", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("old")
      const first = yield* host.start(cmd(["worker"]))
      assert.strictEqual(first.pid, 1000)
      yield* host.reservePids(5000)
      assert.strictEqual((yield* host.start(cmd(["worker"]))).pid, 5000)
      // reserving below what is already handed out changes nothing
      yield* host.reservePids(10)
      assert.strictEqual(yield* host.nextPid, 5001)
      const clash = yield* Effect.exit(host.start(cmd(["worker"]), { pid: 1000 }))
      assert.isTrue(Exit.isFailure(clash))
    }).pipe(Effect.provide(twoHosts))
  )
})
