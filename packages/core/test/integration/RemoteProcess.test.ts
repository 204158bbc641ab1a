import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import * as RemoteProcess from "../../src/RemoteProcess.js"
import { isAlive, pgrep, selfExcluding, unique } from "../support/local.js"
import * as Sshd from "../support/Sshd.js"

/** Poll until `check` holds (real time), at most ~5 s. */
const eventually = (check: () => boolean) =>
  Effect.sync(check).pipe(
    Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (ok) => ok, times: 100 }),
    Effect.map(() => check())
  )

layer(Sshd.layer(), { excludeTestServices: true, timeout: "60 seconds" })("live RemoteProcess", (it) => {
  const connect = Effect.flatMap(Sshd.TestSshd, (sshd) => makeConnection(sshd.hostConfig))

  it.scoped(
    "a detached process survives the client disconnecting; stop kills its whole group (a child too)",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.TestSshd
        const marker = unique("mlops-detached")
        const runDir = path.join(sshd.dir, marker)
        const first = yield* connect
        // `sleep 300 &` is a child in the same group; the shell itself waits on another sleep.
        const proc = yield* RemoteProcess.spawnDetached(
          first,
          cmd(["sh", "-c", `sleep 300 & sleep 301; : ${marker}`]),
          { runDir }
        )
        assert.isTrue(isAlive(proc.pid))
        yield* sshd.killSessionProcesses
        yield* Effect.sleep("300 millis")
        assert.isTrue(isAlive(proc.pid), "the detached process outlived the connection")

        const second = yield* connect
        const attached = yield* RemoteProcess.attach(second, runDir)
        assert.deepStrictEqual([attached.pid, attached.pgid], [proc.pid, proc.pgid])
        assert.isTrue(yield* RemoteProcess.isAlive(second, attached))
        const outcome = yield* RemoteProcess.stop(second, attached, {
          grace: "5 seconds",
          poll: "100 millis"
        })
        assert.strictEqual(outcome, "terminated")
        assert.isFalse(yield* RemoteProcess.isAlive(second, attached))
        assert.isTrue(yield* eventually(() => pgrep(selfExcluding(marker)).length === 0))
        assert.isTrue(yield* eventually(() => !isAlive(proc.pid)))
      }),
    { timeout: 60_000 }
  )

  it.scoped(
    "stop escalates to SIGKILL when the group ignores SIGTERM",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.TestSshd
        const marker = unique("mlops-stubborn")
        const runDir = path.join(sshd.dir, marker)
        const conn = yield* connect
        // An ignored signal stays ignored across exec: the child sleeps ignore TERM too.
        const proc = yield* RemoteProcess.spawnDetached(
          conn,
          cmd(["sh", "-c", `trap '' TERM; sleep 300 & sleep 301; : ${marker}`]),
          { runDir }
        )
        const outcome = yield* RemoteProcess.stop(conn, proc, { grace: "1 second", poll: "100 millis" })
        assert.strictEqual(outcome, "killed")
        assert.isTrue(yield* eventually(() => pgrep(selfExcluding(marker)).length === 0))
      }),
    { timeout: 60_000 }
  )

  it.scoped("wait returns the exit status the run directory recorded", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.TestSshd
      const conn = yield* connect
      const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["sh", "-c", "echo hi; exit 5"]), {
        runDir: path.join(sshd.dir, unique("mlops-wait"))
      })
      const status = yield* RemoteProcess.wait(conn, proc, { poll: "50 millis", timeout: "10 seconds" })
      assert.deepStrictEqual(status, { exitCode: 5, signal: null })
      assert.strictEqual(yield* RemoteProcess.stop(conn, proc), "exited-before")
    })
  )
})
