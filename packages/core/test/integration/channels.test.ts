import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Option, Stream } from "effect"
import type { Connection } from "../../src/Connection.js"
import { makeConnection } from "../../src/ConnectionPool.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import { failureOf, failureTag } from "../support/exits.js"
import * as Sshd from "../support/Sshd.js"

/** Wait until `file` exists (a remote command signalling that it started). */
const appeared = (file: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 200 && !fs.existsSync(file); i++) yield* Effect.sleep("25 millis")
    assert.isTrue(fs.existsSync(file), `${file} did not appear`)
  })

/** A forked stream that holds one session channel (and budget permit) until interrupted. */
const holdSlot = (conn: Connection, dir: string) =>
  Effect.gen(function* () {
    const started = path.join(dir, "holder-started")
    const holder = yield* conn
      .stream(cmd(["sh", "-c", `touch '${started}'; exec sleep 60`]))
      .pipe(Stream.runDrain, Effect.fork)
    yield* appeared(started)
    return holder
  })

/**
 * sshd's MaxSessions below our channel budget: sshd refuses the extra channels, and a refused
 * open is retried with jittered backoff while other commands free their slots. Commands all
 * succeed while slots keep freeing (however long the queue); a command that sees no slot free
 * for ~10 s fails typed with ChannelOpenFailed; a timeout or interruption stops the retrying and the
 * command never runs. These are about exec channels, so the remote helper (which needs no
 * session slot per command) is off.
 */
describe("live channel budget against a smaller MaxSessions", () => {
  it.scopedLive("MaxSessions 2 with budget 8: 40 concurrent commands all succeed thanks to the retry", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start({ maxSessions: 2 })
      const conn = yield* makeConnection(sshd.hostConfig, { maxChannels: 8, remoteHelper: false })
      const results = yield* Effect.forEach(
        Array.from({ length: 40 }, (_, i) => i),
        (i) => conn.exec(cmd(["sh", "-c", `sleep 0.05; echo ${i}`]), { timeout: "30 seconds" }),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(
        results.map((r) => r.stdout),
        results.map((_, i) => `${i}\n`)
      )
    })
  )

  it.scopedLive("no slot frees up before the retries run out: ChannelOpenFailed naming the host", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start({ maxSessions: 1 })
      const conn = yield* makeConnection(sshd.hostConfig, { maxChannels: 8, remoteHelper: false })
      const holder = yield* holdSlot(conn, sshd.dir)
      const exit = yield* conn.exec(cmd(["true"]), { timeout: "20 seconds" }).pipe(Effect.exit)
      assert.strictEqual(failureTag(exit), "ChannelOpenFailed")
      const refused = failureOf(exit)
      if (refused?._tag === "ChannelOpenFailed") {
        assert.strictEqual(refused.host, "testhost")
        assert.include(refused.fix ?? "", "MaxSessions")
      }
      yield* Fiber.interrupt(holder)
      // the holder's slot is free again once it is interrupted
      assert.strictEqual((yield* conn.exec(cmd(["echo", "free"]))).stdout, "free\n")
    })
  )

  it.scopedLive("a timeout while sshd refuses the channel stops the retries: the command never runs", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start({ maxSessions: 1 })
      const conn = yield* makeConnection(sshd.hostConfig, { maxChannels: 8, remoteHelper: false })
      const started = path.join(sshd.dir, "holder-started")
      const marker = path.join(sshd.dir, "must-not-exist")
      // holds the only slot for 2 s, well inside the ~10 s of retries
      const holder = yield* conn.exec(cmd(["sh", "-c", `touch '${started}'; sleep 2`])).pipe(Effect.fork)
      yield* appeared(started)
      const exit = yield* conn.exec(cmd(["touch", marker]), { timeout: "200 millis" }).pipe(Effect.exit)
      assert.strictEqual(failureTag(exit), "CommandTimeout")
      // the timeout did not wait for a slot: the holder still runs
      assert.isTrue(Option.isNone(yield* Fiber.poll(holder)))
      yield* Fiber.join(holder)
      // had the retries gone on, the open would have succeeded once the holder ended
      yield* Effect.sleep("1 second")
      assert.isFalse(fs.existsSync(marker))
    })
  )

  it.scopedLive("interrupting a stream that waits for a budget permit does not wait for the permit", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start()
      const conn = yield* makeConnection(sshd.hostConfig, { maxChannels: 1, remoteHelper: false })
      const holder = yield* holdSlot(conn, sshd.dir)
      const waiter = yield* conn.stream(cmd(["echo", "never"])).pipe(Stream.runCollect, Effect.fork)
      yield* Effect.sleep("100 millis")
      yield* Fiber.interrupt(waiter)
      // the interruption returned while the holder still has the only permit
      assert.isTrue(Option.isNone(yield* Fiber.poll(holder)))
      yield* Fiber.interrupt(holder)
    })
  )
})
