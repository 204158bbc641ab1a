import * as Http from "node:http"
import type { Duplex } from "node:stream"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Chunk, Effect, Exit, Fiber, Layer, Scope, Stream, TestClock } from "effect"
import type { Connection } from "../src/Connection.js"
import { ConnectionPool } from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import { Hosts } from "../src/Hosts.js"
import * as RemoteCommand from "../src/RemoteCommand.js"

const cmd = RemoteCommand.make

const fake = (programs: ReadonlyArray<FakeHost.Program> = []) =>
  FakeHost.layer([{ alias: "gpu", files: { "~/hello.txt": "hi\n" }, programs, env: { LANG: "C.UTF-8" } }])

const withHost = <A, E>(
  f: (conn: Connection, host: FakeHost.FakeHostHandle) => Effect.Effect<A, E, ConnectionPool>,
  programs: ReadonlyArray<FakeHost.Program> = []
) =>
  Effect.gen(function* () {
    const pool = yield* ConnectionPool
    const conn = yield* pool.get("gpu")
    const host = yield* FakeHost.host("gpu")
    return yield* f(conn, host)
  }).pipe(Effect.provide(fake(programs)))

describe("FakeHost", () => {
  it.effect("exec returns exit codes and output of built-in and registered programs", () =>
    withHost(
      (conn, host) =>
        Effect.gen(function* () {
          assert.strictEqual((yield* conn.exec(cmd(["true"]))).exitCode, 0)
          assert.strictEqual((yield* conn.exec(cmd(["false"]))).exitCode, 1)
          const echoed = yield* conn.exec(cmd(["echo", "a", "b"]))
          assert.deepStrictEqual([echoed.exitCode, echoed.stdout], [0, "a b\n"])
          const cat = yield* conn.exec(cmd(["cat", "hello.txt"]))
          assert.strictEqual(cat.stdout, "hi\n")
          // a program named by a path runs only where that path exists, as on a real host
          const missing = yield* conn.exec(cmd(["/opt/bin/greet", "x"]))
          assert.deepStrictEqual(
            [missing.exitCode, missing.stderr],
            [127, "sh: 1: exec: /opt/bin/greet: not found\n"]
          )
          yield* host.fs.write("/opt/bin/greet", "#!/bin/sh\n")
          const custom = yield* conn.exec(cmd(["/opt/bin/greet", "x"], { env: { WHO: "w" } }))
          assert.deepStrictEqual(
            [custom.exitCode, custom.stdout, custom.stderr],
            [3, "hello w x\n", "warn\n"]
          )
        }),
      [
        {
          match: "greet",
          run: (ctx) =>
            Effect.gen(function* () {
              yield* ctx.stdout.line(`hello ${ctx.env.WHO} ${ctx.argv[1]}`)
              yield* ctx.stderr.line("warn")
              return 3
            })
        }
      ]
    )
  )

  it.effect("an unknown program exits 127 like a shell", () =>
    withHost((conn) =>
      Effect.gen(function* () {
        const result = yield* conn.exec(cmd(["nvidia-smi"]))
        assert.strictEqual(result.exitCode, 127)
        assert.strictEqual(result.stderr, "sh: 1: exec: nvidia-smi: not found\n")
      })
    )
  )

  it.effect("a command that never ends hits its timeout and its process group is gone", () =>
    withHost(
      (conn, host) =>
        Effect.gen(function* () {
          const fiber = yield* Effect.fork(Effect.either(conn.exec(cmd(["hang"]), { timeout: "5 seconds" })))
          yield* TestClock.adjust("1 second")
          // the lifeline wrapper and the command, in one group
          assert.deepStrictEqual(
            (yield* host.processes).map((p) => p.argv[0]),
            ["/bin/sh", "hang"]
          )
          yield* TestClock.adjust("4 seconds")
          const result = yield* Fiber.join(fiber)
          assert.isTrue(result._tag === "Left" && result.left._tag === "CommandTimeout")
          assert.deepStrictEqual(yield* host.processes, [])
          const [ended] = yield* host.exited
          assert.strictEqual(ended?.signal, "KILL")
        }),
      [FakeHost.hang("hang")]
    )
  )

  it.effect("the default exec timeout is 30 seconds", () =>
    withHost((conn) =>
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(Effect.either(conn.exec(cmd(["sleep", "infinity"]))))
        yield* TestClock.adjust("29 seconds")
        assert.isNull(fiber.unsafePoll())
        yield* TestClock.adjust("1 second")
        const result = yield* Fiber.join(fiber)
        assert.isTrue(result._tag === "Left" && result.left._tag === "CommandTimeout")
      })
    )
  )

  it.effect("stream emits lines then Exited; lossy UTF-8 and CRLF handled", () =>
    withHost(
      (conn) =>
        Effect.gen(function* () {
          const items = Chunk.toReadonlyArray(yield* Stream.runCollect(conn.stream(cmd(["talk"]))))
          assert.deepStrictEqual(items, [
            { _tag: "Output", stream: "stdout", line: "one" },
            { _tag: "Output", stream: "stderr", line: "bad \uFFFD" },
            { _tag: "Output", stream: "stdout", line: "two" },
            { _tag: "Output", stream: "stdout", line: "tail" },
            { _tag: "Exited", exitCode: 0, signal: null }
          ])
        }),
      [
        {
          match: "talk",
          run: (ctx) =>
            Effect.gen(function* () {
              yield* ctx.stdout.write("one\r\ntw")
              yield* ctx.stderr.write(new Uint8Array([0x62, 0x61, 0x64, 0x20, 0xff, 0x0a]))
              yield* ctx.stdout.write("o\ntail")
              return 0
            })
        }
      ]
    )
  )

  it.effect("kill signals groups; exit 1 and 'No such process' when none", () =>
    withHost(
      (conn, host) =>
        Effect.gen(function* () {
          const info = yield* conn.spawnDetached(cmd(["parent"]), { runDir: "~/run" })
          yield* TestClock.adjust("1 millis")
          // the supervisor, the program and its child
          assert.strictEqual((yield* host.processes).length, 3)
          assert.strictEqual((yield* conn.exec(cmd(["kill", "-s", "0", "--", `-${info.pgid}`]))).exitCode, 0)
          // like dash: `--` after the -SIG form is rejected, so only `-s SIG --` is portable
          const dashStyle = yield* conn.exec(cmd(["kill", "-0", "--", `-${info.pgid}`]))
          assert.deepStrictEqual(
            [dashStyle.exitCode, dashStyle.stderr],
            [2, "sh: 1: kill: Illegal number: -\n"]
          )
          assert.strictEqual(
            (yield* conn.exec(cmd(["kill", "-s", "KILL", "--", `-${info.pgid}`]))).exitCode,
            0
          )
          assert.deepStrictEqual(yield* host.processes, [])
          const gone = yield* conn.exec(cmd(["kill", "-s", "0", "--", `-${info.pgid}`]))
          assert.deepStrictEqual([gone.exitCode, gone.stderr], [1, "sh: 1: kill: No such process\n"])
          // the supervisor died with its group: nothing recorded how it ended
          assert.isUndefined(yield* host.fs.readText("~/run/exit"))
        }),
      [
        {
          match: "parent",
          run: (ctx) => Effect.zipRight(ctx.spawn(cmd(["sleep", "infinity"])), Effect.never)
        }
      ]
    )
  )

  it.effect("ps prints the process table (pgid and state columns, header only when named)", () =>
    withHost(
      (conn) =>
        Effect.gen(function* () {
          const info = yield* conn.spawnDetached(cmd(["parent"]), { runDir: "~/run" })
          yield* TestClock.adjust("1 millis")
          const table = yield* conn.exec(cmd(["ps", "-A", "-o", "pgid=", "-o", "stat="]))
          assert.strictEqual(table.exitCode, 0)
          const rows = table.stdout.trim().split("\n")
          // the supervisor, parent and its child; then the lifeline shell and ps (their own group)
          assert.deepStrictEqual(rows.slice(0, 3), [`${info.pgid} S`, `${info.pgid} S`, `${info.pgid} S`])
          assert.strictEqual(rows.length, 5)
          const named = yield* conn.exec(cmd(["ps", "-e", "-o", "pid,pgid=GROUP"]))
          assert.deepStrictEqual(named.stdout.split("\n")[0], "PID GROUP")
          assert.strictEqual((yield* conn.exec(cmd(["ps", "-o", "nope="]))).exitCode, 1)
        }),
      [
        {
          match: "parent",
          run: (ctx) => Effect.zipRight(ctx.spawn(cmd(["sleep", "infinity"])), Effect.never)
        }
      ]
    )
  )

  it.effect("spawnDetached writes pid/pgid/log/exit and survives a dropped connection", () =>
    withHost(
      (conn, host) =>
        Effect.gen(function* () {
          const info = yield* conn.spawnDetached(cmd(["worker"]), { runDir: "~/run" })
          assert.strictEqual(info.runDir, "/root/run")
          assert.strictEqual(info.logPath, "/root/run/log")
          assert.strictEqual(yield* host.fs.readText("~/run/pid"), `${info.pid}\n`)
          yield* host.dropConnection()
          const lost = yield* Effect.either(conn.exec(cmd(["true"])))
          assert.isTrue(lost._tag === "Left" && lost.left._tag === "ConnectionLost")
          yield* TestClock.adjust("10 seconds")
          assert.strictEqual(yield* host.fs.readText("~/run/log"), "started\ndone\n")
          assert.strictEqual(yield* host.fs.readText("~/run/exit"), "code 4\n")
          const again = yield* (yield* ConnectionPool).get("gpu")
          assert.strictEqual((yield* again.exec(cmd(["true"]))).exitCode, 0)
          assert.strictEqual(yield* host.connects, 2)
        }),
      [
        {
          match: "worker",
          run: (ctx) =>
            Effect.gen(function* () {
              yield* ctx.stdout.line("started")
              yield* Effect.sleep("10 seconds")
              yield* ctx.stderr.line("done")
              return 4
            })
        }
      ]
    )
  )

  it.effect("a dropped connection fails in-flight exec with ConnectionLost and fires closed", () =>
    withHost((conn, host) =>
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(Effect.either(conn.exec(cmd(["sleep", "20"]))))
        yield* host.dropConnectionAfter("2 seconds", "cable cut")
        yield* TestClock.adjust("2 seconds")
        const result = yield* Fiber.join(fiber)
        assert.isTrue(result._tag === "Left" && result.left._tag === "ConnectionLost")
        assert.strictEqual((yield* conn.closed).reason, "cable cut")
        assert.deepStrictEqual(yield* host.processes, [])
      })
    )
  )

  it.effect("refused channels fail with ChannelOpenFailed, then channels open again", () =>
    withHost((conn, host) =>
      Effect.gen(function* () {
        yield* host.refuseChannels(1)
        const refused = yield* Effect.either(conn.exec(cmd(["true"])))
        assert.isTrue(refused._tag === "Left" && refused.left._tag === "ChannelOpenFailed")
        assert.strictEqual((yield* conn.exec(cmd(["true"]))).exitCode, 0)
      })
    )
  )

  it.effect("a changed host key fails the next connect with HostKeyMismatch; a down host refuses", () =>
    Effect.gen(function* () {
      const pool = yield* ConnectionPool
      const host = yield* FakeHost.host("gpu")
      yield* host.changeHostKey
      yield* host.dropConnection()
      const mismatch = yield* Effect.either(pool.get("gpu"))
      assert.isTrue(mismatch._tag === "Left" && mismatch.left._tag === "HostKeyMismatch")
      yield* host.restoreHostKey
      yield* host.setDown(true)
      const refused = yield* Effect.either(pool.get("gpu"))
      assert.isTrue(refused._tag === "Left" && refused.left._tag === "ConnectionRefused")
      const unknown = yield* Effect.either(pool.get("nope"))
      assert.isTrue(unknown._tag === "Left" && unknown.left._tag === "HostNotFound")
    }).pipe(Effect.provide(fake()))
  )

  it.effect("SIGTERM interrupts by default; a program may handle it", () =>
    withHost(
      (conn, host) =>
        Effect.gen(function* () {
          const plain = yield* conn.spawnDetached(cmd(["sleep", "100"]), { runDir: "/tmp/a" })
          const stubborn = yield* conn.spawnDetached(cmd(["stubborn"]), { runDir: "/tmp/b" })
          yield* TestClock.adjust("1 millis")
          yield* host.signal({ pgid: plain.pgid }, "TERM")
          yield* host.signal({ pgid: stubborn.pgid }, "SIGTERM")
          yield* TestClock.adjust("1 millis")
          // the supervisor traps TERM, outlives its program and records how it ended
          assert.strictEqual(yield* host.fs.readText("/tmp/a/exit"), "signal TERM\n")
          assert.deepStrictEqual(
            (yield* host.processes).map((p) => p.pid),
            [stubborn.pgid, stubborn.pid]
          )
          assert.strictEqual(yield* host.fs.readText("/tmp/b/log"), "ignoring TERM\n")
        }),
      [
        {
          match: "stubborn",
          run: (ctx) => Effect.zipRight(ctx.onSignal("TERM", ctx.stdout.line("ignoring TERM")), Effect.never)
        }
      ]
    )
  )

  it.effect("the journal records every command in order with its connection", () =>
    withHost((conn, host) =>
      Effect.gen(function* () {
        yield* conn.exec(cmd(["echo", "1"]))
        yield* Stream.runDrain(conn.stream(cmd(["echo", "2"])))
        yield* host.dropConnection()
        const next = yield* (yield* ConnectionPool).get("gpu")
        yield* next.exec(cmd(["echo", "3"]))
        const journal = yield* host.journal
        assert.deepStrictEqual(
          journal.map((e) => [e.kind, e.command.argv.join(" "), e.connection]),
          [
            ["exec", "echo 1", 1],
            ["stream", "echo 2", 1],
            ["exec", "echo 3", 2]
          ]
        )
      })
    )
  )

  it.effect("files: write/read/stat with Clock mtimes and ~ paths; missing file is typed", () =>
    withHost((conn) =>
      Effect.gen(function* () {
        yield* TestClock.adjust("5 seconds")
        yield* conn.files.write("~/a/b.txt", "abcdef")
        const stat = yield* conn.files.stat("/root/a/b.txt")
        assert.deepStrictEqual(stat, { size: 6, mtimeMs: 5000, isDirectory: false, mode: 0o600 })
        assert.isTrue((yield* conn.files.stat("~/a"))?.isDirectory)
        const part = yield* conn.files.read("~/a/b.txt", { offset: 2, length: 3 })
        assert.strictEqual(new TextDecoder().decode(part), "cde")
        const missing = yield* Effect.either(conn.files.read("~/nope"))
        assert.isTrue(
          missing._tag === "Left" && missing.left._tag === "RemoteFileError" && missing.left.notFound
        )
        assert.isUndefined(yield* conn.files.stat("~/nope"))
        assert.strictEqual(yield* conn.files.resolvePath("~/x/../y"), "/root/y")
      })
    )
  )

  it.effect("Hosts resolves fake aliases to HostConfig", () =>
    Effect.gen(function* () {
      const hosts = yield* Hosts
      const config = yield* hosts.resolve("gpu")
      assert.deepStrictEqual([config.alias, config.user, config.port], ["gpu", "root", 22])
      assert.strictEqual((yield* hosts.list).length, 1)
    }).pipe(Effect.provide(fake()))
  )

  it.effect("nvidia-smi and ss helpers print what the probes parse", () =>
    withHost(
      (conn) =>
        Effect.gen(function* () {
          const gpus = yield* conn.exec(
            cmd(["nvidia-smi", "--query-gpu=index,name,memory.total,uuid", "--format=csv,noheader,nounits"])
          )
          assert.strictEqual(gpus.stdout, "0, NVIDIA A10, 23028, GPU-aaa\n")
          const withHeader = yield* conn.exec(cmd(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv"]))
          assert.strictEqual(withHeader.stdout, "compute_cap\n8.6\n")
          const ss = yield* conn.exec(cmd(["ss", "-ltnpH", "sport = :30000"]))
          assert.strictEqual(ss.stdout, "")
        }),
      [
        FakeHost.nvidiaSmi([
          {
            index: 0,
            name: "NVIDIA A10",
            memoryTotalMiB: 23028,
            memoryUsedMiB: 0,
            uuid: "GPU-aaa",
            computeCapability: "8.6"
          }
        ]),
        FakeHost.ss
      ]
    )
  )
})

describe("FakeHost forward", () => {
  const request = (socket: Duplex, path: string) =>
    Effect.async<{ status: number; body: string }>((resume) => {
      const req = Http.request({ path, createConnection: () => socket as never }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () =>
          resume(Effect.succeed({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }))
        )
      })
      req.end()
    })

  it.live("forward reaches a program's HTTP handler; ss lists it; nothing listening → ForwardFailed", () =>
    Effect.gen(function* () {
      const pool = yield* ConnectionPool
      const conn = yield* pool.get("gpu")
      const host = yield* FakeHost.host("gpu")
      const refused = yield* Effect.either(Effect.scoped(conn.forward(30000)))
      assert.isTrue(refused._tag === "Left" && refused.left._tag === "ForwardFailed")
      const server = yield* conn.spawnDetached(cmd(["serve"]), { runDir: "/tmp/s" })
      while ((yield* host.ports).length === 0) yield* Effect.sleep("5 millis")
      const response = yield* Effect.scoped(Effect.flatMap(conn.forward(30000), (s) => request(s, "/health")))
      assert.deepStrictEqual(response, { status: 200, body: '{"path":"/health"}' })
      const ss = yield* conn.exec(cmd(["ss", "-ltnpH", "sport = :30000"]))
      assert.include(ss.stdout, `users:(("serve",pid=${server.pid},fd=3))`)
      yield* host.signal({ pgid: server.pgid }, "KILL")
      while ((yield* host.ports).length > 0) yield* Effect.sleep("5 millis")
      const after = yield* Effect.exit(Effect.scoped(conn.forward(30000)))
      assert.isTrue(Exit.isFailure(after))
    }).pipe(
      Effect.provide(
        Layer.fresh(
          fake([
            {
              match: "serve",
              run: (ctx) =>
                Effect.zipRight(
                  ctx.listen(30000, (req) =>
                    Effect.succeed({ status: 200, body: JSON.stringify({ path: req.path }) })
                  ),
                  Effect.never
                )
            },
            FakeHost.ss
          ])
        )
      )
    )
  )

  it.effect("a handle kept past its layer's close can start nothing more", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(fake(), scope)
      const host = yield* Effect.provide(FakeHost.host("gpu"), context)
      yield* Scope.close(scope, Exit.void)
      const late = yield* Effect.exit(host.start(cmd(["true"])))
      assert.isTrue(
        Exit.isFailure(late) && Cause.pretty(late.cause).includes("used after its layer was closed")
      )
    })
  )
})
