/**
 * Following a detached process across dropped connections (fake host, TestClock): the death
 * watchers come back on a new connection, and a death during the outage is reported right
 * after reconnecting, with the recorded status.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream, TestClock } from "effect"
import { ConnectionPool } from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import * as RemoteCommand from "../src/RemoteCommand.js"
import * as RemoteProcess from "../src/RemoteProcess.js"

const cmd = RemoteCommand.make

const programs: ReadonlyArray<FakeHost.Program> = [
  {
    match: "crash-at",
    run: (ctx) =>
      Effect.gen(function* () {
        yield* Effect.sleep(`${Number(ctx.argv[1])} seconds`)
        yield* ctx.stderr.line("torch.OutOfMemoryError: CUDA out of memory.")
        return 1
      })
  }
]

const layer = () => FakeHost.layer([{ alias: "gpu", programs }])

describe("RemoteProcess.watch", () => {
  it.effect("a crash while the host is unreachable is reported at the first poll after reconnecting", () =>
    Effect.gen(function* () {
      const conn = yield* (yield* ConnectionPool).get("gpu")
      const host = yield* FakeHost.host("gpu")
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["crash-at", "10"]), { runDir: "~/d/w" })
      const seen: Array<readonly [string, number]> = []
      const watching = yield* Effect.fork(
        RemoteProcess.watch("gpu", proc).pipe(
          Stream.tap((event) =>
            Effect.flatMap(
              Effect.clockWith((c) => c.currentTimeMillis),
              (at) => Effect.sync(() => seen.push([event._tag, at]))
            )
          ),
          Stream.runCollect
        )
      )
      yield* TestClock.adjust("4 seconds")
      yield* host.setDown(true)
      // it crashes at 10 s, while nothing can connect
      yield* TestClock.adjust("11 seconds")
      assert.deepStrictEqual(
        seen.map(([tag]) => tag),
        ["Disconnected"]
      )
      yield* host.setDown(false)
      const upAt = 15_000
      yield* TestClock.adjust("3 seconds")
      const events = Chunk.toReadonlyArray(yield* Fiber.join(watching))
      assert.deepStrictEqual(
        events.map((e) => e._tag),
        ["Disconnected", "Reconnected", "Exited"]
      )
      assert.deepStrictEqual(events.at(-1), { _tag: "Exited", status: { exitCode: 1, signal: null } })
      const [, reconnectedAt] = seen.find(([tag]) => tag === "Reconnected")!
      const [, exitedAt] = seen.find(([tag]) => tag === "Exited")!
      // the reconnect schedule retries at most 2 s apart; the verdict is the first poll after it
      assert.isAtMost(reconnectedAt - upAt, 2_000)
      assert.isAtMost(exitedAt - reconnectedAt, 100)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("awaitExit without a drop: the exit file's status within one poll", () =>
    Effect.gen(function* () {
      const conn = yield* (yield* ConnectionPool).get("gpu")
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["crash-at", "2"]), { runDir: "~/d/a" })
      const waiting = yield* Effect.fork(RemoteProcess.awaitExit("gpu", proc))
      yield* TestClock.adjust("2050 millis")
      assert.deepStrictEqual(yield* Fiber.join(waiting), { exitCode: 1, signal: null })
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a group SIGKILLed with its supervisor ends the watch with no recorded status", () =>
    Effect.gen(function* () {
      const conn = yield* (yield* ConnectionPool).get("gpu")
      const host = yield* FakeHost.host("gpu")
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["crash-at", "100"]), { runDir: "~/d/k" })
      const waiting = yield* Effect.fork(RemoteProcess.awaitExit("gpu", proc))
      yield* TestClock.adjust("1 second")
      yield* host.signal({ pgid: proc.pgid }, "KILL")
      yield* TestClock.adjust("3 seconds")
      assert.isUndefined(yield* Fiber.join(waiting))
    }).pipe(Effect.provide(layer()))
  )

  it.effect(
    "a group killed whole is seen at the next look at its leader (250 ms), not at the 2 s liveness poll",
    () =>
      Effect.gen(function* () {
        const conn = yield* (yield* ConnectionPool).get("gpu")
        const host = yield* FakeHost.host("gpu")
        const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["crash-at", "100"]), { runDir: "~/d/l" })
        const waiting = yield* Effect.fork(RemoteProcess.awaitExit("gpu", proc))
        // just after a liveness poll: the next one is ~2 s away
        yield* TestClock.adjust("1 second")
        yield* host.signal({ pgid: proc.pgid }, "KILL")
        yield* TestClock.adjust("300 millis")
        const done = yield* Fiber.poll(waiting)
        assert.isTrue(done._tag === "Some", "the watch ended within 300 ms of the kill")
        assert.isUndefined(yield* Fiber.join(waiting))
      }).pipe(Effect.provide(layer()))
  )

  it.effect("a host key that changed while disconnected ends the watch with HostKeyMismatch", () =>
    Effect.gen(function* () {
      const conn = yield* (yield* ConnectionPool).get("gpu")
      const host = yield* FakeHost.host("gpu")
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["crash-at", "100"]), { runDir: "~/d/h" })
      const waiting = yield* Effect.fork(Effect.flip(RemoteProcess.awaitExit("gpu", proc)))
      yield* TestClock.adjust("1 second")
      yield* host.changeHostKey
      yield* host.dropConnection()
      yield* TestClock.adjust("3 seconds")
      assert.strictEqual((yield* Fiber.join(waiting))._tag, "HostKeyMismatch")
    }).pipe(Effect.provide(layer()))
  )
})
