/**
 * What `Connection.files` promises, asserted on a live connection whichever way it carries the
 * operations (sftp, or commands through the remote helper): parents created, modes, stat,
 * reads from an offset, a missing file, `mkdir -p`, and `~/` against the home directory.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import type { Connection } from "../../src/Connection.js"
import { make as cmd } from "../../src/RemoteCommand.js"

export const filesContract = (conn: Connection, dir: string) =>
  Effect.gen(function* () {
    const file = path.join(dir, "deep", "er", "f.txt")
    yield* conn.files.write(file, "hello, wörld\n", { mode: 0o640 })
    assert.strictEqual(fs.readFileSync(file, "utf8"), "hello, wörld\n")
    assert.strictEqual(fs.statSync(file).mode & 0o777, 0o640)
    const stat = yield* conn.files.stat(file)
    assert.strictEqual(stat?.size, Buffer.byteLength("hello, wörld\n"))
    assert.strictEqual(stat?.mode, 0o640)
    assert.isFalse(stat?.isDirectory)
    assert.isTrue((yield* conn.files.stat(path.dirname(file)))?.isDirectory)
    assert.strictEqual(yield* conn.files.stat(path.join(dir, "missing")), undefined)
    const tail = yield* conn.files.read(file, { offset: 7 })
    assert.strictEqual(new TextDecoder().decode(tail), "wörld\n")
    const slice = yield* conn.files.read(file, { offset: 0, length: 5 })
    assert.strictEqual(new TextDecoder().decode(slice), "hello")
    const missing = yield* conn.files.read(path.join(dir, "missing")).pipe(Effect.flip)
    assert.isTrue(missing._tag === "RemoteFileError" && missing.notFound)
    // every byte value survives, and a new file is private by default
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i)
    const binary = path.join(dir, "bytes.bin")
    yield* conn.files.write(binary, bytes)
    assert.deepStrictEqual(new Uint8Array(yield* conn.files.read(binary)), bytes)
    assert.strictEqual(fs.statSync(binary).mode & 0o777, 0o600)
    const nested = path.join(dir, "m", "k", "d")
    yield* conn.files.mkdir(nested)
    yield* conn.files.mkdir(nested)
    assert.isTrue(fs.statSync(nested).isDirectory())
    assert.strictEqual(fs.statSync(path.join(dir, "m")).mode & 0o777, 0o700)
    const home = (yield* conn.exec(cmd(["sh", "-c", "cd && pwd -P"]))).stdout.trim()
    assert.strictEqual(yield* conn.files.resolvePath("~/x/y"), `${home}/x/y`)
    assert.strictEqual(yield* conn.files.resolvePath("/abs"), "/abs")
  })
