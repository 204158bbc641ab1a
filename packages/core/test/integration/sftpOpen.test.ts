import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import * as Sshd from "../support/Sshd.js"

describe("live sftp channel", () => {
  it.scopedLive(
    "a step timeout while the sftp channel opens strands neither the channel nor its permit",
    () =>
      Effect.gen(function* () {
        // an sftp server that takes 1.5 s to start: longer than the connection's step timeout
        const sshd = yield* Sshd.start({ sftpSubsystem: "sleep 1.5; exec /usr/lib/openssh/sftp-server" })
        const conn = yield* makeConnection(sshd.hostConfig, { maxChannels: 2, commandTimeout: "300 millis" })
        const file = path.join(sshd.dir, "authorized_keys")
        for (let i = 0; i < 3; i++) {
          const error = yield* conn.files.stat(file).pipe(Effect.flip)
          assert.strictEqual(error._tag, "RemoteFileError")
        }
        // the channel those calls waited for is the one used once it is up: one permit, not three
        yield* Effect.sleep("2 seconds")
        assert.isTrue((yield* conn.files.stat(file))?.size !== undefined)
        const both = yield* Effect.all(
          [
            conn.exec(cmd(["echo", "a"]), { timeout: "5 seconds" }),
            conn.exec(cmd(["echo", "b"]), { timeout: "5 seconds" })
          ],
          { concurrency: 2 }
        ).pipe(Effect.exit)
        assert.strictEqual(both._tag, "Success")
      })
  )
})
