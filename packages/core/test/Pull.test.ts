import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { ConnectionPool } from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import { syncPrograms } from "../src/internal/sync/fakeTools.js"
import * as Pull from "../src/Pull.js"

const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true })
})

const localDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-pull-"))
  temps.push(dir)
  return dir
}

const layer = () => FakeHost.layer([{ alias: "gpu", programs: syncPrograms }])

const setup = Effect.gen(function* () {
  const conn = yield* Effect.flatMap(ConnectionPool, (pool) => pool.get("gpu"))
  const host = yield* FakeHost.host("gpu")
  const commands = Effect.map(host.journal, (j) => j.length)
  return { conn, host, commands }
})

/** Every file under `root`, relative, with its mode and content. */
const listing = (root: string) => {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const at = path.join(dir, name)
      const stat = fs.statSync(at)
      if (stat.isDirectory()) walk(at)
      else
        out[path.relative(root, at)] =
          `${(stat.mode & 0o777).toString(8)} ${fs.readFileSync(at, "utf8").slice(0, 40)}`
    }
  }
  walk(root)
  return out
}

describe("Pull.pull", () => {
  it.effect(
    "a tree comes back whole in one listing command: files 0600 (0700 executable), directories 0700",
    () =>
      Effect.gen(function* () {
        const { conn, host, commands } = yield* setup
        yield* host.fs.write("/root/run/out/config.json", '{"a": 1}\n')
        yield* host.fs.write("/root/run/out/ckpt/step-100/model.bin", "x".repeat(10_000))
        yield* host.fs.write("/root/run/out/run.sh", "#!/bin/sh\n", { mode: 0o755 })
        const local = path.join(localDir(), "out")
        const before = yield* commands
        const summary = yield* Pull.pull(conn, { remote: "~/run/out", local, chunkBytes: 4096 })
        assert.deepStrictEqual(
          {
            files: summary.files,
            fetched: summary.fetched,
            upToDate: summary.upToDate,
            bytes: summary.bytes
          },
          { files: 3, fetched: 3, upToDate: 0, bytes: 9 + 10_000 + 10 }
        )
        assert.strictEqual(summary.remote, "/root/run/out")
        // the listing is the one command; the files travel over the file channel
        assert.strictEqual((yield* commands) - before, 1)
        assert.deepStrictEqual(listing(local), {
          "ckpt/step-100/model.bin": `600 ${"x".repeat(40)}`,
          "config.json": '600 {"a": 1}\n',
          "run.sh": "700 #!/bin/sh\n"
        })
        assert.strictEqual(fs.statSync(path.join(local, "ckpt/step-100/model.bin")).size, 10_000)
        for (const dir of ["", "ckpt", "ckpt/step-100"])
          assert.strictEqual((fs.statSync(path.join(local, dir)).mode & 0o777).toString(8), "700", dir)
        // no temporary file left beside any
        assert.isFalse(Object.keys(listing(local)).some((name) => name.includes("mlops-pull")))
      }).pipe(Effect.provide(layer()))
  )

  it.effect("pulled again, only new or changed files are read; a file keeps the host's time", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      yield* TestClock.adjust("1000 seconds")
      yield* host.fs.write("/root/ckpts/a.bin", "aaaa")
      yield* host.fs.write("/root/ckpts/b.bin", "bbbb")
      const local = path.join(localDir(), "ckpts")
      yield* Pull.pull(conn, { remote: "/root/ckpts", local })
      assert.strictEqual(Math.floor(fs.statSync(path.join(local, "a.bin")).mtimeMs / 1000), 1000)
      const again = yield* Pull.pull(conn, { remote: "/root/ckpts", local })
      assert.deepStrictEqual(
        { fetched: again.fetched, upToDate: again.upToDate },
        { fetched: 0, upToDate: 2 }
      )
      // a new checkpoint, and one rewritten later with the same size
      yield* TestClock.adjust("60 seconds")
      yield* host.fs.write("/root/ckpts/b.bin", "BBBB")
      yield* host.fs.write("/root/ckpts/c.bin", "cc")
      const third = yield* Pull.pull(conn, { remote: "/root/ckpts", local })
      assert.deepStrictEqual(
        { fetched: third.fetched, upToDate: third.upToDate, bytes: third.bytes },
        { fetched: 2, upToDate: 1, bytes: 6 }
      )
      assert.strictEqual(fs.readFileSync(path.join(local, "b.bin"), "utf8"), "BBBB")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a single file is written to the local path itself", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      yield* host.fs.write("/root/run/metrics.jsonl", '{"loss": 1.2}\n')
      const local = path.join(localDir(), "deep", "metrics.jsonl")
      const summary = yield* Pull.pull(conn, { remote: "/root/run/metrics.jsonl", local })
      assert.strictEqual(summary.files, 1)
      assert.strictEqual(fs.readFileSync(local, "utf8"), '{"loss": 1.2}\n')
    }).pipe(Effect.provide(layer()))
  )

  it.effect("nothing at the path is PullSourceMissing naming host and path", () =>
    Effect.gen(function* () {
      const { conn } = yield* setup
      const error = yield* Effect.flip(Pull.pull(conn, { remote: "/root/nothing", local: localDir() }))
      assert.strictEqual(error._tag, "PullSourceMissing")
      assert.include(error.message, "gpu:/root/nothing")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a host without find is PullRemoteFailed with the fix", () =>
    Effect.gen(function* () {
      const conn = yield* Effect.flatMap(ConnectionPool, (pool) => pool.get("bare"))
      const error = yield* Effect.flip(Pull.pull(conn, { remote: "/root", local: localDir() }))
      assert.strictEqual(error._tag, "PullRemoteFailed")
      if (error._tag === "PullRemoteFailed") assert.include(error.fix, "findutils")
    }).pipe(Effect.provide(FakeHost.layer([{ alias: "bare" }])))
  )

  it.effect("a local file where a directory must go is PullLocalFailed naming it", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      yield* host.fs.write("/root/out/sub/x.txt", "x")
      const local = path.join(localDir(), "out")
      fs.mkdirSync(local)
      fs.writeFileSync(path.join(local, "sub"), "a file, not a directory")
      const error = yield* Effect.flip(Pull.pull(conn, { remote: "/root/out", local }))
      assert.strictEqual(error._tag, "PullLocalFailed")
      assert.include(error.message, local)
    }).pipe(Effect.provide(layer()))
  )

  it.effect(
    "what find could not read, and a file gone before its read, are skipped and named; the rest comes",
    () =>
      Effect.gen(function* () {
        const conn = yield* Effect.flatMap(ConnectionPool, (pool) => pool.get("busy"))
        const host = yield* FakeHost.host("busy")
        yield* host.fs.write("/root/out/ok.txt", "ok")
        const local = path.join(localDir(), "out")
        const summary = yield* Pull.pull(conn, { remote: "/root/out", local })
        assert.deepStrictEqual([summary.files, summary.fetched, summary.upToDate], [2, 1, 0])
        assert.deepStrictEqual(summary.skipped, [
          { path: "locked", reason: "unreadable" },
          { path: "gone.bin", reason: "vanished" }
        ])
        assert.strictEqual(fs.readFileSync(path.join(local, "ok.txt"), "utf8"), "ok")
        assert.isFalse(fs.existsSync(path.join(local, "gone.bin")))
      }).pipe(
        Effect.provide(
          FakeHost.layer([
            {
              alias: "busy",
              programs: [
                {
                  // GNU find's output for a tree with an unreadable directory and a file removed after the walk
                  match: "find",
                  run: (ctx) =>
                    Effect.gen(function* () {
                      yield* ctx.stdout.write(
                        "d\t4096\t1000.0\t700\t\0f\t2\t1000.0\t644\tok.txt\0f\t9\t1000.0\t644\tgone.bin\0"
                      )
                      yield* ctx.stderr.line("find: '/root/out/locked': Permission denied")
                      return 1
                    })
                }
              ]
            }
          ])
        )
      )
  )
})
