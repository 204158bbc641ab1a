/**
 * Faults on real connections, cut by killing the harness sshd's session processes by pid:
 * during a detached start (after its supervisor was started, before the answer came back),
 * while a process is followed (its log and its death), and while the host is unreachable
 * when the process dies.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Chunk, Clock, Effect, Fiber, Stream } from "effect"
import * as LogTail from "../../src/LogTail.js"
import * as RemoteCommand from "../../src/RemoteCommand.js"
import * as RemoteProcess from "../../src/RemoteProcess.js"
import * as LivePool from "../support/LivePool.js"
import { pgrep, selfExcluding, unique } from "../support/local.js"
import * as Sshd from "../support/Sshd.js"

const cmd = RemoteCommand.make

/** Poll the local file system (the sshd's host is this machine) every millisecond. */
const until = (check: () => boolean, timeoutMs: number) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    while (!check()) {
      if (Date.now() > deadline) return false
      yield* Effect.sleep("1 millis")
    }
    return true
  })

layer(Sshd.layer(), { excludeTestServices: true, timeout: "120 seconds" })("live faults", (it) => {
  it.scoped("a start cut after its supervisor started is settled: exactly one process, tracked", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.TestSshd
      const alias = sshd.hostConfig.alias
      let cutMidStart = 0
      for (let attempt = 0; attempt < 6 && cutMidStart < 2; attempt++) {
        const runDir = path.join(sshd.dir, unique("cut-start"))
        const marker = unique("mlops-cut")
        const spawning = yield* Effect.fork(
          RemoteProcess.spawn(alias, cmd(["sh", "-c", `sleep 300; : ${marker}`]), { runDir })
        )
        // the supervisor has written pgid, the start still holds its lock: the answer is not back
        const inWindow = yield* until(
          () => fs.existsSync(path.join(runDir, "pgid")) && fs.existsSync(path.join(runDir, "spawn.lock")),
          10_000
        )
        if (inWindow) {
          yield* sshd.killSessionProcesses
          cutMidStart++
        }
        const proc = yield* Fiber.join(spawning)
        const running = pgrep(selfExcluding(marker)).map(Number)
        assert.deepStrictEqual(running.sort(), [proc.pgid, proc.pid].sort(), "the one started, nothing else")
        assert.strictEqual(fs.readFileSync(path.join(runDir, "token"), "utf8").trim(), proc.token)
        for (const pid of running) process.kill(pid, "SIGKILL")
      }
      assert.isAtLeast(cutMidStart, 1, "at least one cut landed inside the start")
    }).pipe(Effect.provide(LivePool.layer()))
  )

  it.scoped("log follow and death watch both resume across cuts; the crash is reported with its status", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.TestSshd
      const alias = sshd.hostConfig.alias
      const runDir = path.join(sshd.dir, unique("cut-follow"))
      const script = "for i in 1 2 3 4 5 6 7 8; do echo line $i; sleep 0.2; done; echo boom >&2; exit 3"
      const proc = yield* RemoteProcess.spawn(alias, cmd(["sh", "-c", script]), { runDir })
      const follow = yield* Effect.fork(
        LogTail.follow(alias, proc.logPath, { pollInterval: "20 millis" }).pipe(
          Stream.map((line) => line.text),
          Stream.takeUntil((text) => text === "boom"),
          Stream.runCollect
        )
      )
      const watching = yield* Effect.fork(
        Stream.runCollect(RemoteProcess.watch(alias, proc, { alivePoll: "200 millis" }))
      )
      for (const ms of [300, 500, 400]) {
        yield* Effect.sleep(`${ms} millis`)
        yield* sshd.killSessionProcesses
      }
      const events = Chunk.toReadonlyArray(yield* Fiber.join(watching))
      const lines = Chunk.toReadonlyArray(yield* Fiber.join(follow))
      assert.deepStrictEqual(lines, [...Array.from({ length: 8 }, (_, i) => `line ${i + 1}`), "boom"])
      assert.deepStrictEqual(events.at(-1), { _tag: "Exited", status: { exitCode: 3, signal: null } })
      assert.include(
        events.map((e) => e._tag),
        "Reconnected"
      )
    }).pipe(Effect.provide(LivePool.layer()))
  )

  it.scoped("a crash while the host is unreachable is reported right after it is back", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.TestSshd
      const alias = sshd.hostConfig.alias
      const runDir = path.join(sshd.dir, unique("cut-down"))
      const proc = yield* RemoteProcess.spawn(
        alias,
        cmd(["sh", "-c", "sleep 1; echo 'torch.OutOfMemoryError: CUDA out of memory.' >&2; exit 1"]),
        { runDir }
      )
      const seen: Array<readonly [string, number]> = []
      const watching = yield* Effect.fork(
        RemoteProcess.watch(alias, proc).pipe(
          Stream.tap((event) =>
            Effect.flatMap(Clock.currentTimeMillis, (at) => Effect.sync(() => seen.push([event._tag, at])))
          ),
          Stream.runCollect
        )
      )
      yield* Effect.sleep("300 millis")
      yield* sshd.pause
      // it dies at about 1 s, while nothing can connect
      yield* until(() => fs.existsSync(path.join(runDir, "exit")), 10_000)
      yield* Effect.sleep("500 millis")
      yield* sshd.resume
      const events = Chunk.toReadonlyArray(yield* Fiber.join(watching))
      assert.deepStrictEqual(events.at(-1), { _tag: "Exited", status: { exitCode: 1, signal: null } })
      const reconnected = seen.find(([tag]) => tag === "Reconnected")
      const exited = seen.find(([tag]) => tag === "Exited")
      assert.isDefined(reconnected)
      assert.isBelow(exited![1] - reconnected![1], 2_000, "verdict within 2 s of reconnecting")
    }).pipe(Effect.provide(LivePool.layer()))
  )
})
