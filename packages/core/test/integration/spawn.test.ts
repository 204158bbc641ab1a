/**
 * Detached starts on the real sshd: the recorded pid is the program's own, one process per
 * run directory (the lock, AlreadyRunning, concurrent starts), a fresh log per start, and
 * signals only to a group that is still ours.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Effect, Either } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import { parseStartTime } from "../../src/internal/procStat.js"
import * as RemoteCommand from "../../src/RemoteCommand.js"
import * as RemoteProcess from "../../src/RemoteProcess.js"
import { isAlive, pgrep, selfExcluding, unique } from "../support/local.js"
import * as Sshd from "../support/Sshd.js"
import { transports } from "../support/transports.js"

const cmd = RemoteCommand.make
const cmdline = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\u0000").slice(0, -1)

for (const transport of transports)
  layer(Sshd.layer(), { excludeTestServices: true, timeout: "90 seconds" })(
    `live detached starts (${transport.name})`,
    (it) => {
      const connect = Effect.flatMap(Sshd.TestSshd, (sshd) =>
        makeConnection(sshd.hostConfig, transport.options)
      )
      const freshDir = Effect.map(Sshd.TestSshd, (sshd) => path.join(sshd.dir, unique("run")))

      it.scoped("the pid file holds the program's own pid; pgid and start time are its supervisor's", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["sleep", "300"]), {
            runDir: yield* freshDir
          })
          yield* Effect.addFinalizer(() => Effect.ignore(RemoteProcess.kill(conn, proc)))
          assert.deepStrictEqual(cmdline(proc.pid), ["sleep", "300"])
          assert.deepStrictEqual(cmdline(proc.pgid).slice(0, 2), ["sh", "-c"])
          assert.strictEqual(
            proc.startTime,
            parseStartTime(fs.readFileSync(`/proc/${proc.pgid}/stat`, "utf8"))
          )
          assert.isTrue(yield* RemoteProcess.isOurs(conn, proc))
          assert.deepStrictEqual(yield* RemoteProcess.attach(conn, proc.runDir), proc)
        })
      )

      it.scoped("one process per run directory: AlreadyRunning, SpawnLocked, and concurrent starts", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const marker = unique("mlops-one")
          const runDir = yield* freshDir
          const start = cmd(["sh", "-c", `sleep 300; : ${marker}`])
          const first = yield* RemoteProcess.spawnDetached(conn, start, { runDir })
          yield* Effect.addFinalizer(() => Effect.ignore(RemoteProcess.kill(conn, first)))
          const again = yield* Effect.flip(RemoteProcess.spawnDetached(conn, start, { runDir }))
          assert.strictEqual(again._tag, "AlreadyRunning")
          assert.isFalse(fs.existsSync(path.join(runDir, "spawn.lock")), "the lock is released")

          const locked = yield* freshDir
          fs.mkdirSync(path.join(locked, "spawn.lock"), { recursive: true })
          fs.writeFileSync(path.join(locked, "spawn.lock", "pid"), "999999\n")
          const error = yield* Effect.flip(RemoteProcess.spawnDetached(conn, start, { runDir: locked }))
          assert.strictEqual(error._tag, "SpawnLocked")
          if (error._tag === "SpawnLocked") {
            assert.deepStrictEqual(
              [error.lockPath, error.holderPid],
              [path.join(locked, "spawn.lock"), 999999]
            )
            assert.include(error.message, `rm -r ${path.join(locked, "spawn.lock")}`)
          }

          const racing = yield* freshDir
          const other = unique("mlops-race")
          const results = yield* Effect.all(
            Array.from({ length: 4 }, () =>
              Effect.either(
                RemoteProcess.spawnDetached(conn, cmd(["sh", "-c", `sleep 300; : ${other}`]), {
                  runDir: racing
                })
              )
            ),
            { concurrency: 4 }
          )
          const started = results.filter(Either.isRight).map((r) => r.right)
          for (const proc of started)
            yield* Effect.addFinalizer(() => Effect.ignore(RemoteProcess.kill(conn, proc)))
          assert.strictEqual(started.length, 1)
          for (const refused of results.filter(Either.isLeft))
            assert.include(["SpawnLocked", "AlreadyRunning"], refused.left._tag)
          // the program and its supervisor (whose argv holds the command line): one group
          assert.deepStrictEqual(
            pgrep(selfExcluding(other)).map(Number).sort(),
            [started[0]!.pgid, started[0]!.pid].sort()
          )
        })
      )

      it.scoped("a relaunch starts a fresh log; the previous run's is log.1", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const runDir = yield* freshDir
          const run = (word: string) =>
            Effect.flatMap(
              RemoteProcess.spawnDetached(conn, cmd(["sh", "-c", `echo ${word}`]), { runDir }),
              (proc) => RemoteProcess.wait(conn, proc, { poll: "50 millis", timeout: "10 seconds" })
            )
          yield* run("first")
          yield* run("second")
          assert.strictEqual(fs.readFileSync(path.join(runDir, "log"), "utf8"), "second\n")
          assert.strictEqual(fs.readFileSync(path.join(runDir, "log.1"), "utf8"), "first\n")
        })
      )

      it.scoped("stop and kill do not signal a group that is no longer ours", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["sleep", "300"]), {
            runDir: yield* freshDir
          })
          yield* Effect.addFinalizer(() => Effect.ignore(RemoteProcess.kill(conn, proc)))
          // the pgid as a reused one would look: its leader started at another time
          const reused = { ...proc, startTime: String(Number(proc.startTime) + 1) }
          assert.isFalse(yield* RemoteProcess.isAlive(conn, reused))
          assert.strictEqual(yield* RemoteProcess.stop(conn, reused, { grace: "1 second" }), "exited-before")
          assert.strictEqual(yield* RemoteProcess.kill(conn, reused), "gone")
          assert.isTrue(isAlive(proc.pid), "left alone")
          assert.strictEqual(
            yield* RemoteProcess.stop(conn, proc, { grace: "5 seconds", poll: "50 millis" }),
            "terminated"
          )
          assert.isFalse(isAlive(proc.pid))
        })
      )
    }
  )
