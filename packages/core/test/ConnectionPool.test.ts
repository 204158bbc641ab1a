import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Fiber, Redacted, TestClock } from "effect"
import * as ConnectionPool from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import * as RemoteCommand from "../src/RemoteCommand.js"

const layer = () => FakeHost.layer([{ alias: "gpu" }])

describe("ConnectionPool", () => {
  it.effect("withConnection runs again on a fresh connection after a drop", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      let runs = 0
      const fiber = yield* Effect.fork(
        ConnectionPool.withConnection("gpu", (conn) =>
          Effect.gen(function* () {
            runs++
            if (runs === 1) yield* host.dropConnection("blip")
            return yield* conn.exec(RemoteCommand.make(["echo", "ok"]))
          })
        )
      )
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([runs, result.stdout, yield* host.connects], [2, "ok\n", 2])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("acquire keeps trying while the host refuses, and gets the connection once it is back", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      yield* host.setDown(true)
      const fiber = yield* Effect.fork(ConnectionPool.acquire("gpu"))
      yield* TestClock.adjust("10 seconds")
      assert.isNull(fiber.unsafePoll())
      yield* host.setDown(false)
      yield* TestClock.adjust("3 seconds")
      assert.strictEqual((yield* Fiber.join(fiber)).host.alias, "gpu")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("withConnection does not retry what another connection would not fix", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      yield* host.changeHostKey
      const error = yield* Effect.flip(ConnectionPool.withConnection("gpu", (conn) => Effect.succeed(conn)))
      assert.strictEqual(error._tag, "HostKeyMismatch")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("invalidate with a connection forgets it only while it is the current one", () =>
    Effect.gen(function* () {
      const pool = yield* ConnectionPool.ConnectionPool
      const host = yield* FakeHost.host("gpu")
      const first = yield* pool.get("gpu")
      yield* host.dropConnection()
      const second = yield* pool.get("gpu")
      yield* pool.invalidate("gpu", first)
      assert.strictEqual(yield* pool.get("gpu"), second, "a stale invalidate keeps the fresh connection")
      yield* pool.invalidate("gpu", second)
      assert.notStrictEqual(yield* pool.get("gpu"), second)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("MLOPS_SSH_PASSPHRASE is read redacted: the settings never show it", () =>
    Effect.gen(function* () {
      const settings = yield* ConnectionPool.config.pipe(
        Effect.withConfigProvider(
          ConfigProvider.fromMap(new Map([["MLOPS_SSH_PASSPHRASE", "hunter2-secret"]]))
        )
      )
      assert.isTrue(settings.passphrase !== undefined && Redacted.isRedacted(settings.passphrase))
      assert.strictEqual(Redacted.value(settings.passphrase!), "hunter2-secret")
      assert.notInclude(JSON.stringify(settings), "hunter2")
      assert.notInclude(String(settings.passphrase), "hunter2")
      const none = yield* ConnectionPool.config.pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
      )
      assert.isUndefined(none.passphrase)
    })
  )

  it.effect(
    "MLOPS_REMOTE_HELPER_PERSIST: a duration, 0 or off for none, 10 minutes by default; anything else names the variable",
    () =>
      Effect.gen(function* () {
        const read = (entries: ReadonlyArray<[string, string]>) =>
          ConnectionPool.config.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(entries))))
        const persistOf = (value?: string) =>
          Effect.map(read(value === undefined ? [] : [["MLOPS_REMOTE_HELPER_PERSIST", value]]), (s) =>
            Duration.toMillis(s.remoteHelperPersist)
          )
        assert.strictEqual(yield* persistOf(), 600_000)
        assert.strictEqual(yield* persistOf("90 seconds"), 90_000)
        assert.strictEqual(yield* persistOf("0"), 0)
        assert.strictEqual(yield* persistOf("off"), 0)
        const bad = yield* Effect.flip(persistOf("soon"))
        assert.include(String(bad), "MLOPS_REMOTE_HELPER_PERSIST")
        // the sockets are remembered under MLOPS_HOME
        const settings = yield* read([["MLOPS_HOME", "/tmp/somewhere"]])
        assert.strictEqual(settings.remoteHelperSockets, "/tmp/somewhere/helpers")
      })
  )
})
