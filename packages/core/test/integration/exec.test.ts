import * as fs from "node:fs"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Chunk, Effect, Exit, FastCheck, Fiber, Runtime, Stream } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import { pgrep, selfExcluding, unique } from "../support/local.js"
import * as Sshd from "../support/Sshd.js"
import { launcherOf, transports } from "../support/transports.js"

/** No local process matches `marker` any more (the group is killed asynchronously: poll briefly). */
const gone = (marker: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 60 && pgrep(selfExcluding(marker)).length > 0; i++) yield* Effect.sleep("50 millis")
    return pgrep(selfExcluding(marker))
  })

const PRINT_ARGV = "import sys, json; print(json.dumps(sys.argv[1:]))"

for (const transport of transports)
  layer(Sshd.layer(), { excludeTestServices: true, timeout: "30 seconds" })(
    `live exec (${transport.name})`,
    (it) => {
      const connect = Effect.flatMap(Sshd.TestSshd, (sshd) =>
        makeConnection(sshd.hostConfig, transport.options)
      )

      it.scoped(`commands are launched by the ${transport.name}'s process`, () =>
        Effect.gen(function* () {
          const conn = yield* connect
          assert.match(yield* launcherOf(conn), transport.launcher)
        })
      )

      it.scoped("reports exit codes, and deaths by signal as signals", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const ok = yield* conn.exec(cmd(["sh", "-c", "echo out; echo err >&2"]))
          assert.deepStrictEqual(ok, { exitCode: 0, signal: null, stdout: "out\n", stderr: "err\n" })
          const three = yield* conn.exec(cmd(["sh", "-c", "exit 3"]))
          assert.deepStrictEqual([three.exitCode, three.signal], [3, null])
          const term = yield* conn.exec(cmd(["sh", "-c", "kill -TERM $$"]))
          assert.deepStrictEqual([term.exitCode, term.signal], [null, "TERM"])
          const killed = yield* conn.exec(cmd(["sh", "-c", "kill -KILL $$"]))
          assert.deepStrictEqual([killed.exitCode, killed.signal], [null, "KILL"])
          const missing = yield* conn.exec(cmd(["no-such-program-mlops"]))
          assert.strictEqual(missing.exitCode, 127)
        })
      )

      it.scoped("the command keeps the default action for SIGINT and SIGQUIT (not ignored)", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const result = yield* conn.exec(cmd(["grep", "SigIgn", "/proc/self/status"]))
          const ignored = BigInt(`0x${result.stdout.trim().split(/\s+/)[1]}`)
          const bit = (signal: number) => (ignored >> BigInt(signal - 1)) & 1n
          assert.deepStrictEqual([bit(2), bit(3)], [0n, 0n])
          // and the command can be interrupted with SIGINT, reported as a signal
          const interrupted = yield* conn.exec(cmd(["sh", "-c", "kill -INT $$; sleep 5"]))
          assert.deepStrictEqual([interrupted.exitCode, interrupted.signal], [null, "INT"])
        })
      )

      it.scoped("gives stdin to the command, then EOF", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const result = yield* conn.exec(cmd(["sh", "-c", "cat; echo; echo end"]), {
            stdin: "line 1\nline 2"
          })
          assert.strictEqual(result.stdout, "line 1\nline 2\nend\n")
        })
      )

      it.scoped("drains 5 MB of stdout and 5 MB of stderr written at the same time", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const script =
            "(head -c 5000000 /dev/zero | tr '\\0' e >&2) & head -c 5000000 /dev/zero | tr '\\0' o; wait"
          const result = yield* conn.exec(cmd(["sh", "-c", script]), { timeout: "20 seconds" })
          assert.strictEqual(result.exitCode, 0)
          assert.strictEqual(result.stdout.length, 5_000_000)
          assert.strictEqual(result.stderr.length, 5_000_000)
          assert.isTrue(/^o+$/.test(result.stdout) && /^e+$/.test(result.stderr))
        })
      )

      it.scoped(
        "runs 200 concurrent commands on one connection under MaxSessions 10",
        () =>
          Effect.gen(function* () {
            const conn = yield* connect
            const results = yield* Effect.forEach(
              Array.from({ length: 200 }, (_, i) => i),
              (i) => conn.exec(cmd(["echo", String(i)]), { timeout: "50 seconds" }),
              { concurrency: "unbounded" }
            )
            assert.deepStrictEqual(
              results.map((r) => r.stdout),
              results.map((_, i) => `${i}\n`)
            )
            assert.isTrue(results.every((r) => r.exitCode === 0))
          }),
        { timeout: 60_000 }
      )

      it.scoped("a command timeout kills the remote process group", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const marker = unique("mlops-timeout")
          // a child in the background too: the whole group must die, not just the shell
          const exit = yield* conn
            .exec(cmd(["sh", "-c", `sleep 30 & sleep 31; : ${marker}`]), { timeout: "700 millis" })
            .pipe(Effect.exit)
          assert.isTrue(Exit.isFailure(exit))
          if (Exit.isFailure(exit))
            assert.strictEqual(exit.cause._tag === "Fail" && exit.cause.error._tag, "CommandTimeout")
          assert.deepStrictEqual(yield* gone(marker), [])
          // and the connection is still usable
          assert.strictEqual((yield* conn.exec(cmd(["true"]))).exitCode, 0)
        })
      )

      it.scoped("env values and a cwd with spaces and quotes arrive intact", () =>
        Effect.gen(function* () {
          const sshd = yield* Sshd.TestSshd
          const conn = yield* connect
          const dir = path.join(sshd.dir, "a dir with 'quotes' and $dollar")
          fs.mkdirSync(dir, { recursive: true })
          const value = `two  spaces, 'single' "double" $HOME \`tick\` \\ ünï 😀\nnewline`
          const result = yield* conn.exec(
            cmd(
              ["python3", "-c", "import os, json; print(json.dumps([os.environ['MLOPS_V'], os.getcwd()]))"],
              {
                env: { MLOPS_V: value },
                cwd: dir
              }
            )
          )
          assert.deepStrictEqual(JSON.parse(result.stdout), [value, dir])
        })
      )

      it.scoped(
        "arbitrary argv strings arrive byte-for-byte (property, 100 runs)",
        () =>
          Effect.gen(function* () {
            const conn = yield* connect
            const runtime = yield* Effect.runtime<never>()
            const special = FastCheck.constantFrom(
              "'",
              '"',
              "$",
              "`",
              "\\",
              "\n",
              "\r",
              "\t",
              " ",
              "-",
              "--",
              "!",
              "*",
              "~",
              "é",
              "😀",
              "$(x)",
              "%"
            )
            const word = FastCheck.string({
              unit: FastCheck.oneof(
                special,
                FastCheck.char(),
                FastCheck.string({ unit: "grapheme", maxLength: 1 })
              ),
              maxLength: 12
            }).map((s) => s.replaceAll("\0", ""))
            yield* Effect.promise(() =>
              FastCheck.assert(
                FastCheck.asyncProperty(FastCheck.array(word, { maxLength: 5 }), async (args) => {
                  const result = await Runtime.runPromise(runtime)(
                    conn.exec(cmd(["python3", "-c", PRINT_ARGV, ...args]))
                  )
                  assert.strictEqual(result.stderr, "")
                  assert.deepStrictEqual(JSON.parse(result.stdout), args)
                }),
                { numRuns: 100 }
              )
            )
          }),
        { timeout: 120_000 }
      )

      it.scoped("streams lines from both pipes, then the exit", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const items = yield* conn
            .stream(cmd(["sh", "-c", "echo a; echo b >&2; printf 'c\\r\\nd'; exit 4"]))
            .pipe(Stream.runCollect, Effect.map(Chunk.toReadonlyArray))
          const last = items[items.length - 1]
          assert.deepStrictEqual(last, { _tag: "Exited", exitCode: 4, signal: null })
          const out = items
            .filter((i) => i._tag === "Output" && i.stream === "stdout")
            .map((i) => i._tag === "Output" && i.line)
          const err = items
            .filter((i) => i._tag === "Output" && i.stream === "stderr")
            .map((i) => i._tag === "Output" && i.line)
          assert.deepStrictEqual(out, ["a", "c", "d"])
          assert.deepStrictEqual(err, ["b"])
        })
      )

      it.scoped("interrupting a stream kills the remote process group", () =>
        Effect.gen(function* () {
          const conn = yield* connect
          const marker = unique("mlops-stream")
          const fiber = yield* conn
            .stream(cmd(["sh", "-c", `echo started; sleep 30; : ${marker}`]))
            .pipe(Stream.take(1), Stream.runCollect, Effect.fork)
          const first = yield* Fiber.join(fiber)
          assert.deepStrictEqual(Chunk.toReadonlyArray(first), [
            { _tag: "Output", stream: "stdout", line: "started" }
          ])
          assert.deepStrictEqual(yield* gone(marker), [])
        })
      )
    }
  )
