import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { ConnectionPool } from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import * as RemoteFiles from "../src/RemoteFiles.js"

const Deployment = Schema.Struct({ name: Schema.String, port: Schema.Number })

const setup = Effect.flatMap(ConnectionPool, (pool) => pool.get("gpu"))

const layer = () =>
  FakeHost.layer([{ alias: "gpu", files: { "~/bad.json": "{ not json", "~/wrong.json": '{"name": 1}' } }])

describe("RemoteFiles", () => {
  it.effect("writeJson then readJson round-trips through the schema", () =>
    Effect.gen(function* () {
      const conn = yield* setup
      yield* RemoteFiles.writeJson(conn, "~/d/deployment.json", Deployment, { name: "qwen", port: 30000 })
      assert.strictEqual(
        yield* RemoteFiles.readText(conn, "~/d/deployment.json"),
        '{\n  "name": "qwen",\n  "port": 30000\n}\n'
      )
      assert.deepStrictEqual(yield* RemoteFiles.readJson(conn, "~/d/deployment.json", Deployment), {
        name: "qwen",
        port: 30000
      })
    }).pipe(Effect.provide(layer()))
  )

  it.effect("bad JSON and wrong shapes are RemoteFileErrors naming the file", () =>
    Effect.gen(function* () {
      const conn = yield* setup
      const bad = yield* Effect.flip(RemoteFiles.readJson(conn, "~/bad.json", Deployment))
      assert.isTrue(bad._tag === "RemoteFileError" && bad.path === "~/bad.json" && !bad.notFound)
      const wrong = yield* Effect.flip(RemoteFiles.readJson(conn, "~/wrong.json", Deployment))
      assert.isTrue(wrong._tag === "RemoteFileError" && wrong.reason.includes("name"))
      const missing = yield* Effect.flip(RemoteFiles.readJson(conn, "~/none.json", Deployment))
      assert.isTrue(missing._tag === "RemoteFileError" && missing.notFound)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("exists, readTextIfExists and readFrom", () =>
    Effect.gen(function* () {
      const conn = yield* setup
      yield* RemoteFiles.writeText(conn, "/tmp/t.txt", "0123456789")
      assert.isTrue(yield* RemoteFiles.exists(conn, "/tmp/t.txt"))
      assert.isFalse(yield* RemoteFiles.exists(conn, "/tmp/none"))
      assert.isUndefined(yield* RemoteFiles.readTextIfExists(conn, "/tmp/none"))
      assert.strictEqual(yield* RemoteFiles.readTextIfExists(conn, "/tmp/t.txt"), "0123456789")
      const { bytes, nextOffset } = yield* RemoteFiles.readFrom(conn, "/tmp/t.txt", 4, 3)
      assert.deepStrictEqual([new TextDecoder().decode(bytes), nextOffset], ["456", 7])
      const rest = yield* RemoteFiles.readFrom(conn, "/tmp/t.txt", 8)
      assert.deepStrictEqual([new TextDecoder().decode(rest.bytes), rest.nextOffset], ["89", 10])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("upload copies a local file's bytes; a missing local file names its path", () =>
    Effect.gen(function* () {
      const conn = yield* setup
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-upload-"))
      const local = path.join(dir, "run.sh")
      const bytes = Uint8Array.from([0x23, 0x21, 0xff, 0x00, 0x0a])
      fs.writeFileSync(local, bytes)
      yield* RemoteFiles.upload(conn, local, "~/bin/run.sh")
      assert.deepStrictEqual([...(yield* conn.files.read("~/bin/run.sh"))], [...bytes])
      const missing = yield* Effect.flip(RemoteFiles.upload(conn, path.join(dir, "nope"), "~/x"))
      assert.isTrue(missing._tag === "RemoteFileError" && missing.notFound && missing.path.endsWith("nope"))
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(layer()))
  )
})
