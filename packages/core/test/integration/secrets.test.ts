/**
 * Against the real sshd (on this machine, so its process table is ours to read): environment
 * values never appear on a command line on the host, neither for a command nor for a detached
 * process and its supervisor, and reach the program; what mlops creates is 0600/0700.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import * as RemoteCommand from "../../src/RemoteCommand.js"
import * as RemoteProcess from "../../src/RemoteProcess.js"
import { unique } from "../support/local.js"
import * as Sshd from "../support/Sshd.js"
import { transports } from "../support/transports.js"

const cmd = RemoteCommand.make

/** Every process's command line on this machine, as `ps` would show it. */
const commandLines = (): Array<string> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return []
    try {
      return [fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\u0000", " ")]
    } catch {
      return []
    }
  })

const modeOf = (file: string) => fs.statSync(file).mode & 0o777

for (const transport of transports)
  layer(Sshd.layer(), { excludeTestServices: true, timeout: "60 seconds" })(
    `live secrets and modes (${transport.name})`,
    (it) => {
      const connect = Effect.flatMap(Sshd.TestSshd, (sshd) =>
        makeConnection(sshd.hostConfig, transport.options)
      )

      it.scoped("an env value is on no command line while a command and a detached process run", () =>
        Effect.gen(function* () {
          const sshd = yield* Sshd.TestSshd
          const conn = yield* connect
          const secret = unique("hf_secret")
          const env = { HF_TOKEN: secret, OTHER: "it's $x" }
          // a foreground command that runs long enough to be looked at
          const running = yield* Effect.fork(
            conn.exec(cmd(["sh", "-c", 'sleep 1; printf "%s|%s" "$HF_TOKEN" "$OTHER"'], { env }))
          )
          const runDir = path.join(sshd.dir, unique("secret-run"))
          const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["sleep", "30"], { env }), { runDir })
          yield* Effect.addFinalizer(() => Effect.ignore(RemoteProcess.kill(conn, proc)))
          let looks = 0
          while (running.unsafePoll() === null) {
            looks++
            for (const line of commandLines()) assert.notInclude(line, secret)
            yield* Effect.sleep("20 millis")
          }
          assert.isAbove(looks, 5, "looked while the command ran")
          const result = yield* Fiber.join(running)
          assert.strictEqual(result.stdout, `${secret}|it's $x`)
          // the program got it
          assert.include(fs.readFileSync(`/proc/${proc.pid}/environ`, "utf8"), `HF_TOKEN=${secret}`)
          // and no file of the run directory holds it
          for (const name of fs.readdirSync(runDir)) {
            const file = path.join(runDir, name)
            if (fs.statSync(file).isFile()) assert.notInclude(fs.readFileSync(file, "utf8"), secret, name)
          }
        })
      )

      it.scoped("what a start and RemoteFiles create is private: directories 0700, files 0600", () =>
        Effect.gen(function* () {
          const sshd = yield* Sshd.TestSshd
          const conn = yield* connect
          const base = path.join(sshd.dir, unique("modes"))
          const runDir = path.join(base, "deployments", "x")
          const proc = yield* RemoteProcess.spawnDetached(conn, cmd(["sh", "-c", "echo hi; exit 4"]), {
            runDir
          })
          assert.deepStrictEqual(
            yield* RemoteProcess.wait(conn, proc, { poll: "50 millis", timeout: "10 seconds" }),
            {
              exitCode: 4,
              signal: null
            }
          )
          for (const dir of [base, path.dirname(runDir), runDir]) assert.strictEqual(modeOf(dir), 0o700, dir)
          for (const name of ["pid", "pgid", "start", "token", "exit", "log"])
            assert.strictEqual(modeOf(path.join(runDir, name)), 0o600, name)
          // RemoteFiles: new files 0600 (new parents 0700); an existing wider file is narrowed first
          yield* conn.files.write(path.join(base, "meta", "meta.json"), "{}\n")
          assert.strictEqual(modeOf(path.join(base, "meta")), 0o700)
          assert.strictEqual(modeOf(path.join(base, "meta", "meta.json")), 0o600)
          const old = path.join(base, "old.json")
          fs.writeFileSync(old, "public", { mode: 0o644 })
          fs.chmodSync(old, 0o644)
          yield* conn.files.write(old, "private")
          assert.deepStrictEqual([modeOf(old), fs.readFileSync(old, "utf8")], [0o600, "private"])
          yield* conn.files.mkdir(path.join(base, "made", "deep"))
          assert.strictEqual(modeOf(path.join(base, "made", "deep")), 0o700)
          assert.strictEqual((yield* conn.files.stat(old))?.mode, 0o600)
          // the program itself runs under the login umask, not ours
          yield* RemoteProcess.spawnDetached(conn, cmd(["sh", "-c", "umask > out"], { cwd: runDir }), {
            runDir: path.join(base, "umask")
          })
          yield* Effect.sleep("300 millis")
          assert.notStrictEqual(fs.readFileSync(path.join(runDir, "out"), "utf8").trim(), "0077")
        })
      )
    }
  )
