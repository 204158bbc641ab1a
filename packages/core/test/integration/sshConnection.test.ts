import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Exit, FastCheck, Runtime } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeConnection } from "../../src/ConnectionPool.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import * as Sshd from "../support/Sshd.js"

const PRINT_ARGV = "import sys, json; print(json.dumps(sys.argv[1:]))"

/** Processes on this machine (the test sshd is local) whose command line matches. */
const localPgrep = (pattern: string): Array<string> => {
  try {
    return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" }).trim().split("\n").filter(Boolean)
  } catch {
    return []
  }
}

const unique = (name: string) => `${name}-${process.pid}-${Math.random().toString(36).slice(2, 10)}`

layer(Sshd.layer(), { excludeTestServices: true, timeout: "30 seconds" })("live ssh connection", (it) => {
  const connect = Effect.flatMap(Sshd.TestSshd, (sshd) => makeConnection(sshd.hostConfig))

  it.scoped("reports exit codes, and signals as signals", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const ok = yield* conn.exec(cmd(["sh", "-c", "echo out; echo err >&2"]))
      assert.deepStrictEqual(ok, { exitCode: 0, signal: null, stdout: "out\n", stderr: "err\n" })
      const three = yield* conn.exec(cmd(["sh", "-c", "exit 3"]))
      assert.strictEqual(three.exitCode, 3)
      assert.strictEqual(three.signal, null)
      const term = yield* conn.exec(cmd(["sh", "-c", "kill -TERM $$"]))
      assert.strictEqual(term.exitCode, null)
      assert.strictEqual(term.signal, "TERM")
    }))

  it.scoped("gives stdin to the command", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const result = yield* conn.exec(cmd(["sh", "-c", "cat; echo; echo end"]), { stdin: "line 1\nline 2" })
      assert.strictEqual(result.stdout, "line 1\nline 2\nend\n")
    }))
})
