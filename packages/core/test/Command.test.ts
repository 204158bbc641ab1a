import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream, TestClock } from "effect"
import * as Command from "../src/Command.js"
import * as FakeHost from "../src/FakeHost.js"
import * as RemoteCommand from "../src/RemoteCommand.js"

const cmd = RemoteCommand.make

const layer = () =>
  FakeHost.layer([
    {
      alias: "gpu",
      programs: [
        {
          match: "fail",
          run: (ctx) =>
            Effect.gen(function* () {
              for (let i = 1; i <= 30; i++) yield* ctx.stderr.line(`err ${i}`)
              yield* ctx.stdout.line("partial output")
              return 3
            })
        },
        {
          match: "count",
          run: (ctx) =>
            Effect.gen(function* () {
              const n = Number(ctx.argv[1])
              for (let i = 1; i <= n; i++) {
                yield* ctx.stdout.line(`n${i}`)
                yield* Effect.sleep("1 second")
              }
              return 0
            })
        }
      ]
    }
  ])

describe("Command", () => {
  it.effect("run returns non-zero exits as results", () =>
    Effect.gen(function* () {
      const result = yield* Command.run("gpu", cmd(["fail"]))
      assert.strictEqual(result.exitCode, 3)
      assert.strictEqual(result.stdout, "partial output\n")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("runOrFail fails with CommandFailed carrying the stderr tail", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Command.runOrFail("gpu", cmd(["fail"])))
      assert.strictEqual(error._tag, "CommandFailed")
      if (error._tag !== "CommandFailed") return
      assert.strictEqual(error.exitCode, 3)
      const lines = error.stderr.split("\n")
      assert.deepStrictEqual([lines.length, lines[0], lines.at(-1)], [20, "err 11", "err 30"])
      assert.strictEqual((yield* Command.runOrFail("gpu", cmd(["true"]))).exitCode, 0)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("refused channels are not retried again by default (the connection already retried)", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      yield* host.refuseChannels(1)
      const refused = yield* Effect.flip(Command.run("gpu", cmd(["true"])))
      assert.strictEqual(refused._tag, "ChannelOpenFailed")
      assert.strictEqual((yield* Command.run("gpu", cmd(["echo", "ok"]))).stdout, "ok\n")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("channelRetries retries refused channels with backoff, then fails typed", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      yield* host.refuseChannels(2)
      const retried = yield* Effect.fork(Command.run("gpu", cmd(["echo", "ok"]), { channelRetries: 3 }))
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual((yield* Fiber.join(retried)).stdout, "ok\n")
      yield* host.refuseChannels(10)
      const refused = yield* Effect.fork(
        Effect.flip(Command.run("gpu", cmd(["true"]), { channelRetries: 2 }))
      )
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual((yield* Fiber.join(refused))._tag, "ChannelOpenFailed")
      assert.strictEqual((yield* host.journal).length, 1, "refused channels ran nothing")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a lost connection is not retried", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      const running = yield* Effect.fork(Effect.flip(Command.run("gpu", cmd(["sleep", "10"]))))
      yield* host.dropConnectionAfter("1 second")
      yield* TestClock.adjust("11 seconds")
      assert.strictEqual((yield* Fiber.join(running))._tag, "ConnectionLost")
      assert.strictEqual((yield* host.journal).length, 1)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("lines streams stdout lines as they come; a failing command fails the stream", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(Stream.runCollect(Command.lines("gpu", cmd(["count", "3"]))))
      yield* TestClock.adjust("3 seconds")
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Fiber.join(fiber)), ["n1", "n2", "n3"])
      const error = yield* Effect.flip(Stream.runDrain(Command.lines("gpu", cmd(["fail"]))))
      assert.isTrue(error._tag === "CommandFailed" && error.stderr.endsWith("err 30"))
    }).pipe(Effect.provide(layer()))
  )

  it.effect("runAll keeps input order and bounds concurrency", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      const fiber = yield* Effect.fork(
        Command.runAll(
          "gpu",
          [cmd(["count", "2"]), cmd(["count", "1"]), cmd(["count", "3"]), cmd(["echo", "d"])],
          {
            concurrency: 2
          }
        )
      )
      yield* TestClock.adjust("1 millis")
      // one process group per channel (the lifeline wrapper and its command)
      assert.strictEqual(new Set((yield* host.processes).map((p) => p.pgid)).size, 2, "at most 2 at a time")
      yield* TestClock.adjust("5 seconds")
      const results = yield* Fiber.join(fiber)
      assert.deepStrictEqual(
        results.map((r) => r.stdout),
        ["n1\nn2\n", "n1\n", "n1\nn2\nn3\n", "d\n"]
      )
    }).pipe(Effect.provide(layer()))
  )

  it.effect("an unknown host is HostNotFound", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Command.run("nope", cmd(["true"])))
      assert.strictEqual(error._tag, "HostNotFound")
    }).pipe(Effect.provide(layer()))
  )
})
