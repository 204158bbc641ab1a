/**
 * Starting detached processes on the fake host, which runs the same start script text the
 * live layer sends: the program's own pid, no environment value on any command line, private
 * files, the per-directory lock, one process per directory, a fresh log per start, settling a
 * start whose answer was lost, and signals only to a group that is still ours.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, TestClock } from "effect"
import { ConnectionPool } from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import * as RemoteCommand from "../src/RemoteCommand.js"
import * as RemoteProcess from "../src/RemoteProcess.js"

const cmd = RemoteCommand.make
const SECRET = "hf_5ecr3tT0ken"

const programs: ReadonlyArray<FakeHost.Program> = [
  {
    match: "server",
    run: (ctx) =>
      Effect.gen(function* () {
        yield* ctx.stdout.line(`server ${ctx.argv.slice(1).join(" ")} token=${ctx.env.HF_TOKEN === SECRET}`)
        return yield* Effect.never
      })
  },
  {
    match: "crash",
    run: (ctx) => Effect.as(Effect.zipRight(Effect.sleep("1 second"), ctx.stderr.line("boom")), 3)
  }
]

const layer = () => FakeHost.layer([{ alias: "gpu", programs }])

const setup = Effect.gen(function* () {
  const conn = yield* (yield* ConnectionPool).get("gpu")
  const host = yield* FakeHost.host("gpu")
  return { conn, host }
})

describe("RemoteProcess start", () => {
  it.effect("the recorded pid is the program's own (the line execs it); the group is its supervisor's", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["server", "--port", "1"]), {
        runDir: "~/d/a"
      })
      const table = yield* host.processes
      assert.deepStrictEqual(table.find((p) => p.pid === proc.pid)?.argv, ["server", "--port", "1"])
      const supervisor = table.find((p) => p.pid === proc.pgid)
      assert.strictEqual(supervisor?.argv[0], "sh")
      assert.notStrictEqual(proc.pid, proc.pgid)
      assert.strictEqual(yield* host.fs.readText("~/d/a/pid"), `${proc.pid}\n`)
      assert.strictEqual(yield* host.fs.readText("~/d/a/token"), `${proc.token}\n`)
      assert.strictEqual(proc.startTime, String(supervisor?.startedAtMs))
    }).pipe(Effect.provide(layer()))
  )

  it.effect("an environment value reaches the program but no command line and no file", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      yield* RemoteProcess.spawnDetached(conn, cmd(["server"], { env: { HF_TOKEN: SECRET } }), {
        runDir: "~/d/s"
      })
      yield* conn.exec(cmd(["true"], { env: { HF_TOKEN: SECRET } }))
      assert.include(yield* host.fs.readText("~/d/s/log"), "token=true")
      for (const entry of yield* host.journal) assert.notInclude(entry.line, SECRET, "exec-request text")
      for (const p of yield* host.processes) assert.notInclude(p.argv.join(" "), SECRET, "a process's argv")
      for (const file of yield* host.exportFiles)
        assert.notInclude(new TextDecoder().decode(file.data), SECRET, file.path)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("what a start creates is private: directories 0700, files 0600", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["crash"]), {
        runDir: "~/state/deployments/x"
      })
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual(yield* host.fs.readText("~/state/deployments/x/exit"), "code 3\n")
      for (const dir of ["~/state", "~/state/deployments", "~/state/deployments/x"])
        assert.strictEqual((yield* host.fs.stat(dir))?.mode, 0o700, dir)
      for (const name of ["pid", "pgid", "start", "token", "exit", "log"])
        assert.strictEqual((yield* host.fs.stat(`${proc.runDir}/${name}`))?.mode, 0o600, name)
      yield* conn.files.write("~/state/meta.json", "{}")
      assert.strictEqual((yield* host.fs.stat("~/state/meta.json"))?.mode, 0o600)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a held lock refuses the start with SpawnLocked naming the lock and how to clear it", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      yield* host.fs.write("~/d/l/spawn.lock/pid", "4242\n")
      const error = yield* Effect.flip(
        RemoteProcess.spawnDetached(conn, cmd(["server"]), { runDir: "~/d/l" })
      )
      assert.strictEqual(error._tag, "SpawnLocked")
      if (error._tag !== "SpawnLocked") return
      assert.strictEqual(error.lockPath, "/root/d/l/spawn.lock")
      assert.strictEqual(error.holderPid, 4242)
      assert.include(error.fix, "rm -r /root/d/l/spawn.lock")
      assert.deepStrictEqual(yield* host.processes, [], "nothing started")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("one process per run directory: a second start while it runs is AlreadyRunning", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const first = yield* RemoteProcess.spawnDetached(conn, cmd(["server", "one"]), { runDir: "~/d/r" })
      const again = yield* Effect.flip(
        RemoteProcess.spawnDetached(conn, cmd(["server", "two"]), { runDir: "~/d/r" })
      )
      assert.strictEqual(again._tag, "AlreadyRunning")
      if (again._tag === "AlreadyRunning") assert.strictEqual(again.pgid, first.pgid)
      assert.isFalse(yield* host.fs.exists("~/d/r/spawn.lock"), "the lock is released")
      // two starts at once: exactly one runs
      const both = yield* Effect.all(
        [
          Effect.either(RemoteProcess.spawnDetached(conn, cmd(["server", "a"]), { runDir: "~/d/c" })),
          Effect.either(RemoteProcess.spawnDetached(conn, cmd(["server", "b"]), { runDir: "~/d/c" }))
        ],
        { concurrency: 2 }
      )
      assert.strictEqual(both.filter(Either.isRight).length, 1)
      const refused = both.find(Either.isLeft)
      assert.include(["SpawnLocked", "AlreadyRunning"], refused?.left._tag)
      assert.strictEqual((yield* host.processes).filter((p) => p.runDir === "/root/d/c").length, 2)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a relaunch in the same directory starts a fresh log and keeps the previous one as log.1", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const first = yield* RemoteProcess.spawnDetached(conn, cmd(["server", "first"]), { runDir: "~/d/f" })
      assert.strictEqual(yield* RemoteProcess.kill(conn, first), "gone")
      yield* RemoteProcess.spawnDetached(conn, cmd(["server", "second"]), { runDir: "~/d/f" })
      assert.strictEqual(yield* host.fs.readText("~/d/f/log"), "server second token=false\n")
      assert.strictEqual(yield* host.fs.readText("~/d/f/log.1"), "server first token=false\n")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a start whose answer was lost (connection dropped) is settled from the run directory", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      yield* host.dropWhenReached("detached", "cut mid-start")
      const lost = yield* Effect.flip(
        RemoteProcess.spawnDetached(conn, cmd(["server", "x"]), { runDir: "~/d/u" })
      )
      assert.strictEqual(lost._tag, "ConnectionLost", "one connection cannot settle a drop")
      const first = (yield* host.processes).filter((p) => p.argv[0] === "server")
      assert.strictEqual(first.length, 1, "the start ran on to its end on the host")

      yield* host.dropWhenReached("detached", "cut mid-start")
      // the retry waits on the Clock
      const spawning = yield* Effect.fork(
        RemoteProcess.spawn("gpu", cmd(["server", "y"]), { runDir: "~/d/v" })
      )
      yield* TestClock.adjust("5 seconds")
      const proc = yield* Fiber.join(spawning)
      const servers = (yield* host.processes).filter(
        (p) => p.runDir === "/root/d/v" && p.argv[0] === "server"
      )
      assert.deepStrictEqual(
        servers.map((p) => p.pid),
        [proc.pid],
        "exactly the one that started is returned"
      )
      assert.strictEqual(yield* host.connects, 3)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("stop and kill leave a group alone once it is no longer ours (a reused pgid)", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["server"]), { runDir: "~/d/o" })
      // the same pgid, led by a process that started at another time: someone else's group
      const reused = { ...proc, startTime: "123456789" }
      const before = (yield* host.journal).length
      assert.isFalse(yield* RemoteProcess.isAlive(conn, reused))
      assert.strictEqual(yield* RemoteProcess.stop(conn, reused), "exited-before")
      assert.strictEqual(yield* RemoteProcess.kill(conn, reused), "gone")
      assert.isFalse(
        (yield* host.journal)
          .slice(before)
          .some((e) => e.command.argv[0] === "kill" || e.line.includes("mlops-kill")),
        "no signal sent"
      )
      assert.strictEqual((yield* host.processes).length, 2, "still running")
      // the recorded one is ours
      assert.isTrue(yield* RemoteProcess.isAlive(conn, proc))
      assert.strictEqual(yield* RemoteProcess.kill(conn, proc), "gone")
      assert.deepStrictEqual(yield* host.processes, [])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("attach reads the token and the start time back", () =>
    Effect.gen(function* () {
      const { conn } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["server"]), { runDir: "~/d/t" })
      assert.deepStrictEqual(yield* RemoteProcess.attach(conn, "~/d/t"), proc)
    }).pipe(Effect.provide(layer()))
  )
})
