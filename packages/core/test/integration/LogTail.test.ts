import * as fs from "node:fs"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Chunk, Effect, Fiber, Layer, Schedule, Stream } from "effect"
import * as ConnectionPool from "../../src/ConnectionPool.js"
import { HostNotFound } from "../../src/Errors.js"
import { Hosts } from "../../src/Hosts.js"
import * as LogTail from "../../src/LogTail.js"
import * as Sshd from "../support/Sshd.js"

/** How many times the pool resolved the host: once per (re)connect. */
let resolves = 0

/** Hosts knowing only the harness's "testhost". */
const testHosts = Layer.effect(
  Hosts,
  Effect.map(Sshd.TestSshd, (sshd) => ({
    resolve: (alias: string) =>
      alias === sshd.hostConfig.alias
        ? Effect.sync(() => {
            resolves++
            return sshd.hostConfig
          })
        : Effect.fail(new HostNotFound({ alias, known: [sshd.hostConfig.alias], sources: ["test"] })),
    list: Effect.succeed([sshd.hostConfig]),
    groups: Effect.succeed(new Map())
  }))
)

const livePool = Layer.scoped(ConnectionPool.ConnectionPool, ConnectionPool.make()).pipe(
  Layer.provide(testHosts)
)

layer(Sshd.layer(), { excludeTestServices: true, timeout: "60 seconds" })("live LogTail", (it) => {
  it.scoped(
    "follows a growing log across cut connections: every line exactly once, in order",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.TestSshd
        const alias = sshd.hostConfig.alias
        const file = path.join(sshd.dir, `follow-${Date.now()}.log`)
        fs.writeFileSync(file, "")
        const count = 300
        // A local writer: numbered lines, some written in two halves.
        const writer = Effect.forEach(
          Array.from({ length: count }, (_, i) => i + 1),
          (n) =>
            Effect.gen(function* () {
              if (n % 7 === 0) {
                fs.appendFileSync(file, `line ${n} `)
                yield* Effect.sleep("3 millis")
                fs.appendFileSync(file, "(split)\n")
              } else fs.appendFileSync(file, `line ${n}\n`)
              yield* Effect.sleep("5 millis")
            }),
          { discard: true }
        )
        // each cut lands while the follower is reading (it has just received lines), however
        // slowly this machine reconnects: every cut forces a reconnect
        let received = 0
        const cutter = Effect.forEach(
          [40, 120, 200],
          (after) =>
            Effect.zipRight(
              Effect.repeat(Effect.sleep("5 millis"), { until: () => received >= after }),
              sshd.killSessionProcesses
            ),
          { discard: true }
        )
        const follow = LogTail.follow(alias, file, {
          pollInterval: "20 millis",
          reconnect: Schedule.exponential("50 millis").pipe(Schedule.jittered, Schedule.upTo("20 seconds"))
        }).pipe(
          Stream.tap(() =>
            Effect.sync(() => {
              received++
            })
          )
        )
        const resolvesBefore = resolves
        const collecting = yield* Effect.fork(Stream.runCollect(Stream.take(follow, count)))
        yield* Effect.fork(writer)
        yield* cutter
        const lines = Chunk.toReadonlyArray(yield* Fiber.join(collecting).pipe(Effect.timeout("40 seconds")))
        assert.deepStrictEqual(
          lines.map((l) => l.text),
          Array.from({ length: count }, (_, i) =>
            (i + 1) % 7 === 0 ? `line ${i + 1} (split)` : `line ${i + 1}`
          )
        )
        let offset = 0
        for (const line of lines) {
          assert.strictEqual(line.offset, offset)
          offset = line.nextOffset
        }
        assert.strictEqual(offset, fs.statSync(file).size)
        assert.isAtLeast(resolves - resolvesBefore, 4, "the first connect and one reconnect per cut")
      }).pipe(Effect.provide(livePool)),
    { timeout: 60_000 }
  )

  it.scoped("tail reads the last lines of a real file", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.TestSshd
      const file = path.join(sshd.dir, `tail-${Date.now()}.log`)
      fs.writeFileSync(file, Array.from({ length: 1000 }, (_, i) => `row ${i}\n`).join(""))
      const last = yield* LogTail.tail(sshd.hostConfig.alias, file, { lines: 3, chunkBytes: 100 })
      assert.deepStrictEqual(
        last.map((l) => l.text),
        ["row 997", "row 998", "row 999"]
      )
      assert.strictEqual(last[2]!.nextOffset, fs.statSync(file).size)
    }).pipe(Effect.provide(livePool))
  )
})
