/**
 * File operations when sshd has no session left for sftp. Under `MaxSessions 1` an attached
 * remote helper holds the one session (its commands need none), so sftp is refused and the
 * files go as commands through the helper, with the same contract; a persistent helper leaves
 * its exec channel once started, so sftp gets the session; without the helper the refusal says
 * how to get past it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schedule, Stream } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import { filesContract } from "../support/filesContract.js"
import * as Sshd from "../support/Sshd.js"
import { launcherOf } from "../support/transports.js"

describe("files without an sftp session (MaxSessions 1)", () => {
  it.scopedLive(
    "with an attached helper holding the one session, file operations run as commands through it, same contract",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.start({ maxSessions: 1 })
        const conn = yield* makeConnection(sshd.hostConfig, { remoteHelper: true, remoteHelperPersist: 0 })
        assert.match(yield* launcherOf(conn), /^python3/)
        yield* filesContract(conn, sshd.dir)
        // sshd did refuse the sftp session: the operations above went as commands
        assert.match(sshd.log(), /no more sessions/)
        // commands still run beside them
        assert.strictEqual((yield* conn.exec(cmd(["echo", "still"]))).stdout, "still\n")
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "a persistent helper leaves the one session to sftp: same contract, and sshd refused nothing",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.start({ maxSessions: 1 })
        const conn = yield* makeConnection(sshd.hostConfig, { remoteHelper: true })
        assert.match(yield* launcherOf(conn), /^python3/)
        yield* filesContract(conn, sshd.dir)
        assert.notMatch(sshd.log(), /no more sessions/)
        assert.strictEqual((yield* conn.exec(cmd(["echo", "still"]))).stdout, "still\n")
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "without the helper, a refused sftp session is a RemoteFileError naming the fix",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.start({ maxSessions: 1 })
        const conn = yield* makeConnection(sshd.hostConfig, { remoteHelper: false })
        const started = path.join(sshd.dir, "holder-started")
        const holder = yield* conn
          .stream(cmd(["sh", "-c", `touch '${started}'; exec sleep 60`]))
          .pipe(Stream.runDrain, Effect.fork)
        for (let i = 0; i < 200 && !fs.existsSync(started); i++) yield* Effect.sleep("25 millis")
        const refused = yield* conn.files.stat(sshd.dir).pipe(Effect.flip)
        assert.strictEqual(refused._tag, "RemoteFileError")
        if (refused._tag === "RemoteFileError") {
          assert.strictEqual(refused.host, "testhost")
          assert.include(refused.fix ?? "", "MaxSessions")
        }
        yield* Fiber.interrupt(holder)
        // the session is free again (once sshd has processed the holder's close): sftp opens
        const reopened = yield* conn.files
          .stat(sshd.dir)
          .pipe(Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("5 seconds"))))
        assert.isTrue(reopened?.isDirectory)
      }),
    { timeout: 60_000 }
  )
})
