import { execFileSync } from "node:child_process"
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

/** The members of group `pgid` on this machine (the test sshd runs here). */
const groupMembers = (pgid: number): Array<{ pid: number; ppid: number; stat: string }> =>
  execFileSync("ps", ["-A", "-o", "pid=", "-o", "ppid=", "-o", "pgid=", "-o", "stat="], { encoding: "utf8" })
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter((row) => row[2] === String(pgid))
    .map(([pid, ppid, , stat]) => ({ pid: Number(pid), ppid: Number(ppid), stat: stat ?? "" }))

const isZombie = (member: { readonly stat: string }) => member.stat.startsWith("Z")

/** What `kill -s 0 -- -pgid` says: true while any member exists, zombies included. */
const groupExists = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

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

  it.scoped(
    "a group whose members are all zombies is not alive, and stop says exited-before at once",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.TestSshd
        const conn = yield* connect
        // The command forks `sleep 0.2` (it stays in the group), then moves itself to a session
        // of its own and becomes `sleep 100`: a parent outside the group that never reaps, so the
        // child stays a zombie member whatever this machine's init does.
        const proc = yield* RemoteProcess.spawnDetached(
          conn,
          cmd(["sh", "-c", "sleep 0.2 & exec setsid sleep 100"]),
          { runDir: path.join(sshd.dir, unique("mlops-zombie")) }
        )
        assert.isTrue(yield* eventually(() => groupMembers(proc.pgid).some(isZombie)))
        const zombie = groupMembers(proc.pgid).find(isZombie)!
        yield* Effect.addFinalizer(() => Effect.sync(() => process.kill(zombie.ppid, "SIGKILL")))
        assert.isTrue(yield* RemoteProcess.isAlive(conn, proc), "the supervisor and shell still run")

        // SIGKILL every running member (the supervisor and the command's shell)
        for (const member of groupMembers(proc.pgid))
          if (!isZombie(member)) process.kill(member.pid, "SIGKILL")
        assert.isTrue(yield* eventually(() => groupMembers(proc.pgid).every(isZombie)))
        assert.isFalse(yield* RemoteProcess.isAlive(conn, proc))
        assert.isTrue(groupExists(proc.pgid), "kill -0 still sees the zombie")
        assert.strictEqual(yield* RemoteProcess.stop(conn, proc, { grace: "1 second" }), "exited-before")
      }),
    { timeout: 60_000 }
  )

  it.scoped("kill ends a running group in one round trip and confirms it gone", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.TestSshd
      const marker = unique("mlops-kill")
      const conn = yield* connect
      const proc = yield* RemoteProcess.spawnDetached(
        conn,
        cmd(["sh", "-c", `trap '' TERM; sleep 300 & sleep 301; : ${marker}`]),
        { runDir: path.join(sshd.dir, marker) }
      )
      assert.isTrue(yield* RemoteProcess.isAlive(conn, proc))
      assert.strictEqual(yield* RemoteProcess.kill(conn, proc), "gone")
      assert.isTrue(groupMembers(proc.pgid).every(isZombie))
      assert.deepStrictEqual(pgrep(selfExcluding(marker)), [])
    })
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
