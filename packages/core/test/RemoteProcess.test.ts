import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { ConnectionPool } from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import * as RemoteCommand from "../src/RemoteCommand.js"
import * as RemoteProcess from "../src/RemoteProcess.js"

const cmd = RemoteCommand.make

const programs: ReadonlyArray<FakeHost.Program> = [
  // Ignores SIGTERM, and has a child in its group.
  {
    match: "stubborn",
    run: (ctx) =>
      Effect.gen(function* () {
        yield* ctx.onSignal("TERM", ctx.stdout.line("TERM ignored"))
        yield* ctx.spawn(cmd(["sleep", "infinity"]))
        return yield* Effect.never
      })
  },
  // Exits 0 two seconds after SIGTERM.
  {
    match: "polite",
    run: (ctx) =>
      Effect.gen(function* () {
        yield* ctx.onSignal("TERM", Effect.zipRight(Effect.sleep("2 seconds"), ctx.exit(0)))
        return yield* Effect.never
      })
  },
  {
    match: "quick",
    run: (ctx) => Effect.as(Effect.zipRight(Effect.sleep("3 seconds"), ctx.stdout.line("bye")), 7)
  }
]

const layer = () => FakeHost.layer([{ alias: "gpu", programs }])

const setup = Effect.gen(function* () {
  const conn = yield* (yield* ConnectionPool).get("gpu")
  const host = yield* FakeHost.host("gpu")
  return { conn, host }
})

describe("RemoteProcess", () => {
  it.effect("spawnDetached, isAlive, exitStatus and wait for a process that exits by itself", () =>
    Effect.gen(function* () {
      const { conn } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["quick"]), { runDir: "~/d/quick" })
      assert.strictEqual(proc.host, "gpu")
      assert.strictEqual(proc.logPath, "/root/d/quick/log")
      assert.isTrue(yield* RemoteProcess.isAlive(conn, proc))
      assert.isUndefined(yield* RemoteProcess.exitStatus(conn, proc))
      const waiting = yield* Effect.fork(RemoteProcess.wait(conn, proc, { poll: "500 millis" }))
      yield* TestClock.adjust("4 seconds")
      assert.deepStrictEqual(yield* Fiber.join(waiting), { exitCode: 7, signal: null })
      assert.isFalse(yield* RemoteProcess.isAlive(conn, proc))
    }).pipe(Effect.provide(layer()))
  )

  it.effect("wait gives up with ProcessError after its timeout", () =>
    Effect.gen(function* () {
      const { conn } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["sleep", "100"]), { runDir: "/tmp/w" })
      const waiting = yield* Effect.fork(
        Effect.flip(RemoteProcess.wait(conn, proc, { timeout: "5 seconds" }))
      )
      yield* TestClock.adjust("6 seconds")
      const error = yield* Fiber.join(waiting)
      assert.strictEqual(error._tag, "ProcessError")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a detached process survives a dropped connection; attach finds it from the run directory", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["sleep", "infinity"]), { runDir: "~/d/s" })
      yield* host.dropConnection()
      const again = yield* (yield* ConnectionPool).get("gpu")
      const attached = yield* RemoteProcess.attach(again, "~/d/s")
      assert.deepStrictEqual(attached, proc)
      assert.isTrue(yield* RemoteProcess.isAlive(again, attached))
      const missing = yield* Effect.flip(RemoteProcess.attach(again, "~/d/none"))
      assert.strictEqual(missing._tag, "ProcessError")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("stop escalates TERM → KILL when TERM is ignored, and kills the whole group", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["stubborn"]), { runDir: "~/d/x" })
      yield* TestClock.adjust("1 millis")
      // the supervisor, stubborn and its child
      assert.strictEqual((yield* host.processes).length, 3)
      const stopping = yield* Effect.fork(RemoteProcess.stop(conn, proc, { grace: "3 seconds" }))
      yield* TestClock.adjust("2 seconds")
      assert.isNull(stopping.unsafePoll(), "still within the grace period")
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual(yield* Fiber.join(stopping), "killed")
      assert.deepStrictEqual(yield* host.processes, [])
      assert.strictEqual(yield* host.fs.readText("~/d/x/stopped"), "killed\n")
      assert.strictEqual(yield* host.fs.readText("~/d/x/log"), "TERM ignored\n")
      // SIGKILL took the supervisor too: no exit was recorded
      assert.isUndefined(yield* RemoteProcess.exitStatus(conn, proc))
      const signals = (yield* host.journal)
        .map((e) => e.command.argv.slice(0, 3).join(" "))
        .filter((c) => c !== "ps -A -o")
      assert.deepStrictEqual(signals, ["stubborn", "kill -s TERM", "kill -s KILL"])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("stop returns terminated when the program exits on TERM within the grace period", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["polite"]), { runDir: "~/d/p" })
      yield* TestClock.adjust("1 millis")
      const stopping = yield* Effect.fork(RemoteProcess.stop(conn, proc))
      yield* TestClock.adjust("3 seconds")
      assert.strictEqual(yield* Fiber.join(stopping), "terminated")
      assert.deepStrictEqual(yield* RemoteProcess.exitStatus(conn, proc), { exitCode: 0, signal: null })
      assert.isFalse((yield* host.journal).some((e) => e.command.argv[2] === "KILL"))
    }).pipe(Effect.provide(layer()))
  )

  it.effect("stop of a process that already ended says exited-before", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["true"]), { runDir: "~/d/t" })
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* RemoteProcess.stop(conn, proc), "exited-before")
      assert.strictEqual(yield* host.fs.readText("~/d/t/stopped"), "exited-before\n")
      assert.isFalse(
        (yield* host.journal).some((e) => e.command.argv[0] === "kill"),
        "no signal sent"
      )
    }).pipe(Effect.provide(layer()))
  )

  it.effect("isAlive is one ps exec; without ps it falls back to kill -s 0", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["sleep", "infinity"]), { runDir: "~/d/a" })
      const journalled = Effect.map(host.journal, (entries) => entries.map((e) => e.command.argv[0]))
      const before = (yield* journalled).length
      assert.isTrue(yield* RemoteProcess.isAlive(conn, proc))
      assert.deepStrictEqual((yield* journalled).slice(before), ["ps"])
      yield* host.register({
        match: "ps",
        run: (ctx) => Effect.as(ctx.stderr.line("sh: 1: ps: not found"), 127)
      })
      assert.isTrue(yield* RemoteProcess.isAlive(conn, proc))
      assert.deepStrictEqual((yield* journalled).slice(before + 1), ["ps", "kill"])
      yield* host.signal({ pgid: proc.pgid }, "KILL")
      assert.isFalse(yield* RemoteProcess.isAlive(conn, proc))
    }).pipe(Effect.provide(layer()))
  )

  it.effect("kill SIGKILLs a running group at once (TERM handlers do not matter) and reports it gone", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["stubborn"]), { runDir: "~/d/k" })
      yield* TestClock.adjust("1 millis")
      assert.strictEqual((yield* host.processes).length, 3)
      assert.strictEqual(yield* RemoteProcess.kill(conn, proc), "gone")
      assert.deepStrictEqual(yield* host.processes, [])
      assert.isUndefined(yield* RemoteProcess.exitStatus(conn, proc))
      assert.isFalse((yield* host.journal).some((e) => e.command.argv.includes("TERM")))
    }).pipe(Effect.provide(layer()))
  )

  it.effect("kill of a group that is already gone reports it gone", () =>
    Effect.gen(function* () {
      const { conn } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["true"]), { runDir: "~/d/g" })
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* RemoteProcess.kill(conn, proc), "gone")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("kill reports still-running when the group outlives `within`", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["sleep", "infinity"]), { runDir: "~/d/u" })
      // a `kill` that reaches nothing: the group survives SIGKILL
      yield* host.register({ match: "kill", run: () => Effect.succeed(0) })
      const killing = yield* Effect.fork(RemoteProcess.kill(conn, proc, { within: "1 second" }))
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual(yield* Fiber.join(killing), "still-running")
      assert.deepStrictEqual(
        (yield* host.processes).map((p) => p.pgid),
        [proc.pgid, proc.pgid]
      )
    }).pipe(Effect.provide(layer()))
  )

  it("parseExitFile reads code, signal and bare numbers", () => {
    assert.deepStrictEqual(RemoteProcess.parseExitFile("code 3\n"), { exitCode: 3, signal: null })
    assert.deepStrictEqual(RemoteProcess.parseExitFile("signal SIGTERM"), { exitCode: null, signal: "TERM" })
    assert.deepStrictEqual(RemoteProcess.parseExitFile("0"), { exitCode: 0, signal: null })
    assert.isUndefined(RemoteProcess.parseExitFile("garbage"))
  })
})
