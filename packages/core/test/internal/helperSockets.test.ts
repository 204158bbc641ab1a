import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { inDirectory } from "../../src/internal/helperSockets.js"

const fresh = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "mlops-sockets-test-")), "helpers")

describe("helper sockets remembered in a directory", () => {
  it.effect("remember then recall gives the path back; the directory is 0700 and the file 0600", () =>
    Effect.gen(function* () {
      const dir = fresh()
      const sockets = inDirectory(dir)
      yield* sockets.remember("abc", "/home/me/.mlops/run/h-abc-gpu1.sock")
      assert.strictEqual(yield* sockets.recall("abc"), "/home/me/.mlops/run/h-abc-gpu1.sock")
      assert.strictEqual(fs.statSync(dir).mode & 0o777, 0o700)
      assert.strictEqual(fs.statSync(path.join(dir, "abc")).mode & 0o777, 0o600)
      yield* sockets.forget("abc")
      assert.isUndefined(yield* sockets.recall("abc"))
    })
  )

  it.effect("a directory or file others can write, or a symlink, is never read", () =>
    Effect.gen(function* () {
      const dir = fresh()
      const sockets = inDirectory(dir)
      yield* sockets.remember("abc", "/home/me/.mlops/run/h-abc-gpu1.sock")
      fs.chmodSync(dir, 0o777)
      assert.isUndefined(yield* sockets.recall("abc"), "a world-writable directory")
      fs.chmodSync(dir, 0o700)
      fs.chmodSync(path.join(dir, "abc"), 0o666)
      assert.isUndefined(yield* sockets.recall("abc"), "a world-writable file")
      const elsewhere = path.join(path.dirname(dir), "planted")
      fs.writeFileSync(elsewhere, "/tmp/attacker.sock\n", { mode: 0o600 })
      fs.symlinkSync(elsewhere, path.join(dir, "def"))
      assert.isUndefined(yield* sockets.recall("def"), "a symlink")
      // remembering again makes it private and readable
      yield* sockets.remember("abc", "/home/me/.mlops/run/h-abc-gpu1.sock")
      assert.strictEqual(yield* sockets.recall("abc"), "/home/me/.mlops/run/h-abc-gpu1.sock")
    })
  )

  it.effect("a remembered text that is no absolute socket path (too long, relative) is as if absent", () =>
    Effect.gen(function* () {
      const dir = fresh()
      const sockets = inDirectory(dir)
      yield* sockets.remember("long", `/${"x".repeat(120)}`)
      yield* sockets.remember("relative", "run/h.sock")
      assert.isUndefined(yield* sockets.recall("long"))
      assert.isUndefined(yield* sockets.recall("relative"))
    })
  )
})
