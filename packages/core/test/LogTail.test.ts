import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Schedule, Stream, TestClock } from "effect"
import * as FakeHost from "../src/FakeHost.js"
import * as LogTail from "../src/LogTail.js"

const LOG = "~/run/log"

const fake = () => FakeHost.layer([{ alias: "gpu", files: { [LOG]: "" } }])

/** Move the TestClock forward in small steps so every sleeping fiber gets its turn. */
const advance = (totalMs: number, stepMs = 25) =>
  Effect.forEach(Array.from({ length: Math.ceil(totalMs / stepMs) }), () => TestClock.adjust(stepMs), {
    discard: true
  })

const texts = (lines: ReadonlyArray<LogTail.LogLine>) => lines.map((l) => l.text)

const assertContiguous = (lines: ReadonlyArray<LogTail.LogLine>, from = 0) => {
  let expected = from
  for (const line of lines) {
    assert.strictEqual(line.offset, expected, `line ${line.text} starts where the previous ended`)
    expected = line.nextOffset
  }
}

describe("LogTail.follow", () => {
  it.effect("every line exactly once, in order, while the connection drops at scripted times", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      const count = 120
      // The writer appends each line in two writes 20 ms apart (a partial line is visible between).
      const writer = Effect.forEach(
        Array.from({ length: count }, (_, i) => i + 1),
        (n) =>
          Effect.gen(function* () {
            yield* host.fs.append(LOG, `line ${n} `)
            yield* Effect.sleep("20 millis")
            yield* host.fs.append(LOG, `of ${count}\n`)
            yield* Effect.sleep("30 millis")
          }),
        { discard: true }
      )
      yield* Effect.fork(writer)
      // File operations take time, so some drops land while a stat/read is in flight.
      yield* host.setFileLatency("15 millis")
      for (const at of [700, 1_505, 1_510, 3_000, 3_020, 4_200, 4_210]) yield* host.dropConnectionAt(at)
      const collecting = yield* Effect.fork(Stream.runCollect(Stream.take(LogTail.follow("gpu", LOG), count)))
      yield* advance(2_000)
      yield* host.setDown(true)
      yield* advance(1_000)
      yield* host.setDown(false)
      yield* advance(5_000)
      const lines = Chunk.toReadonlyArray(yield* Fiber.join(collecting))
      assert.deepStrictEqual(
        texts(lines),
        Array.from({ length: count }, (_, i) => `line ${i + 1} of ${count}`)
      )
      assertContiguous(lines)
      assert.isAtLeast(yield* host.connects, 5)
    }).pipe(Effect.provide(fake()))
  )

  it.effect("a partial line is held until its newline; invalid UTF-8 and CRLF are decoded lossily", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      yield* host.fs.append(LOG, new Uint8Array([0x6f, 0x6b, 0xff, 0x0d, 0x0a])) // "ok\xff\r\n"
      yield* host.fs.append(LOG, "caf\u00e9 ha")
      const fiber = yield* Effect.fork(Stream.runCollect(Stream.take(LogTail.follow("gpu", LOG), 2)))
      yield* advance(500)
      assert.isNull(fiber.unsafePoll(), "the partial line is not emitted")
      yield* host.fs.append(LOG, "lf\n")
      yield* advance(200)
      const lines = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      assert.deepStrictEqual(texts(lines), ["ok\uFFFD", "caf\u00e9 half"])
      assert.deepStrictEqual(
        lines.map((l) => [l.offset, l.nextOffset]),
        [
          [0, 5],
          [5, 16]
        ]
      )
    }).pipe(Effect.provide(fake()))
  )

  it.effect("fromOffset resumes after a line already seen", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      yield* host.fs.write(LOG, "a\nbb\nccc\n")
      const lines = yield* Stream.runCollect(Stream.take(LogTail.follow("gpu", LOG, { fromOffset: 2 }), 2))
      assert.deepStrictEqual(texts(Chunk.toReadonlyArray(lines)), ["bb", "ccc"])
    }).pipe(Effect.provide(fake()))
  )

  it.effect("a file that shrinks fails with LogTruncated", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      yield* host.fs.write(LOG, "one\ntwo\n")
      const fiber = yield* Effect.fork(Stream.runCollect(LogTail.follow("gpu", LOG)))
      yield* advance(300)
      yield* host.fs.write(LOG, "x\n")
      yield* advance(300)
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(exit._tag === "Failure")
      const error = yield* Effect.flip(Fiber.join(fiber))
      assert.strictEqual(error._tag, "LogTruncated")
      assert.isTrue(error._tag === "LogTruncated" && error.offset === 8 && error.size === 2)
    }).pipe(Effect.provide(fake()))
  )

  it.effect("onTruncate: restart emits a marker and follows the new content from 0", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      yield* host.fs.write(LOG, "old 1\nold 2\n")
      const fiber = yield* Effect.fork(
        Stream.runCollect(Stream.take(LogTail.follow("gpu", LOG, { onTruncate: "restart" }), 4))
      )
      yield* advance(300)
      yield* host.fs.write(LOG, "new\n")
      yield* advance(300)
      const items = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      assert.deepStrictEqual(
        items.map((i) => (i._tag === "LogLine" ? `${i.offset}:${i.text}` : `restart@${i.offset}->${i.size}`)),
        ["0:old 1", "6:old 2", "restart@12->4", "0:new"]
      )
    }).pipe(Effect.provide(fake()))
  )

  it.effect("a host that stays down fails once the reconnect schedule is exhausted", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      yield* host.setDown(true)
      const fiber = yield* Effect.fork(
        Stream.runDrain(
          LogTail.follow("gpu", LOG, {
            reconnect: Schedule.spaced("1 second").pipe(Schedule.upTo("5 seconds"))
          })
        )
      )
      yield* advance(4_000, 100)
      assert.isNull(fiber.unsafePoll(), "still retrying within the cap")
      yield* advance(3_000, 100)
      const error = yield* Effect.flip(Fiber.join(fiber))
      assert.strictEqual(error._tag, "ConnectionRefused")
    }).pipe(Effect.provide(fake()))
  )

  it.effect("a changed host key is not retried: HostKeyMismatch", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      yield* host.changeHostKey
      const error = yield* Effect.flip(Stream.runDrain(LogTail.follow("gpu", LOG)))
      assert.strictEqual(error._tag, "HostKeyMismatch")
      assert.strictEqual(yield* host.connects, 0)
    }).pipe(Effect.provide(fake()))
  )
})

describe("LogTail.tail", () => {
  it.effect("the last n complete lines with offsets, reading backwards in small chunks", () =>
    Effect.gen(function* () {
      const host = yield* FakeHost.host("gpu")
      const body = Array.from({ length: 10 }, (_, i) => `l${i + 1}\n`).join("")
      yield* host.fs.write(LOG, `${body}partial`)
      const last = yield* LogTail.tail("gpu", LOG, { lines: 3, chunkBytes: 4 })
      assert.deepStrictEqual(texts(last), ["l8", "l9", "l10"])
      assert.strictEqual(last[2]!.nextOffset, body.length)
      assertContiguous(last, body.length - "l8\nl9\nl10\n".length)
      assert.deepStrictEqual(texts(yield* LogTail.tail("gpu", LOG, { lines: 50, chunkBytes: 7 })).length, 10)
      assert.deepStrictEqual(yield* LogTail.tail("gpu", "~/missing", { lines: 5 }), [])
    }).pipe(Effect.provide(fake()))
  )
})
