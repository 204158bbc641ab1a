import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionPool } from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import { syncPrograms } from "../src/internal/sync/fakeTools.js"
import * as Sync from "../src/Sync.js"

const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true })
})

type Spec = string | { readonly data: string; readonly mode: number }

/** A local tree in a fresh temp dir: relative path → content (or content and mode). */
const tree = (files: Readonly<Record<string, Spec>>): string => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-sync-"))
  temps.push(root)
  write(root, files)
  return root
}

const write = (root: string, files: Readonly<Record<string, Spec>>) => {
  for (const [rel, spec] of Object.entries(files)) {
    const abs = path.join(root, rel)
    fs.mkdirSync(path.dirname(abs), { recursive: true })
    const { data, mode } = typeof spec === "string" ? { data: spec, mode: 0o644 } : spec
    fs.writeFileSync(abs, data)
    fs.chmodSync(abs, mode)
  }
}

const REMOTE = "~/runs/r1/code"
const TARGET = "/root/runs/r1/code"

const layer = () => FakeHost.layer([{ alias: "gpu", programs: syncPrograms }])

const setup = Effect.gen(function* () {
  const conn = yield* Effect.flatMap(ConnectionPool, (pool) => pool.get("gpu"))
  const host = yield* FakeHost.host("gpu")
  /** Commands the host ran so far. */
  const commands = Effect.map(host.journal, (j) => j.length)
  /** Every file under the target, relative, with its mode. */
  const listing = Effect.map(host.exportFiles, (files) =>
    Object.fromEntries(
      files
        .filter((f) => f.path.startsWith(`${TARGET}/`))
        .map((f) => [f.path.slice(TARGET.length + 1), (f.mode & 0o777).toString(8)])
    )
  )
  const text = (rel: string) => host.fs.readText(`${TARGET}/${rel}`)
  return { conn, host, commands, listing, text }
})

describe("Sync.push", () => {
  it.effect("first sync sends everything with 0600 files, 0700 executables and directories", () =>
    Effect.gen(function* () {
      const { conn, host, commands, listing, text } = yield* setup
      const local = tree({
        "train.py": "print('hi')\n",
        "run.sh": { data: "#!/bin/sh\necho ok\n", mode: 0o755 },
        "pkg/model.py": "class M: pass\n",
        "pkg/deep/er/util.py": "x = 1\n",
        "group-exec.sh": { data: "#!/bin/sh\n", mode: 0o654 }
      })
      const summary = yield* Sync.push(conn, { local, remote: REMOTE })
      assert.deepStrictEqual(
        { files: summary.files, sent: summary.sent, deleted: summary.deleted, unchanged: summary.unchanged },
        { files: 5, sent: 5, deleted: 0, unchanged: false }
      )
      // check, mkdir (sftp, not a command), one archive
      assert.strictEqual(summary.roundTrips, 3)
      assert.strictEqual(yield* commands, 2)
      assert.strictEqual(summary.bytes, 12 + 18 + 14 + 6 + 10)
      assert.deepStrictEqual(yield* listing, {
        ".mlops-sync.jsonl": "600",
        "group-exec.sh": "700",
        "pkg/deep/er/util.py": "600",
        "pkg/model.py": "600",
        "run.sh": "700",
        "train.py": "600"
      })
      assert.strictEqual(yield* text("pkg/deep/er/util.py"), "x = 1\n")
      for (const dir of ["", "/pkg", "/pkg/deep", "/pkg/deep/er"]) {
        assert.strictEqual(((yield* host.fs.stat(`${TARGET}${dir}`))!.mode & 0o777).toString(8), "700", dir)
      }
      assert.strictEqual(((yield* host.fs.stat("/root/runs"))!.mode & 0o777).toString(8), "700")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("an unchanged tree costs one command and sends nothing; a touched file is one", () =>
    Effect.gen(function* () {
      const { conn, commands, text } = yield* setup
      const local = tree({ "a.py": "a\n", "b.py": "b\n", "lib/c.py": "c\n" })
      yield* Sync.push(conn, { local, remote: REMOTE })
      const before = yield* commands

      const again = yield* Sync.push(conn, { local, remote: REMOTE })
      assert.deepStrictEqual(
        [again.unchanged, again.roundTrips, again.sent, again.deleted, again.bytes, again.wireBytes],
        [true, 1, 0, 0, 0, 0]
      )
      assert.strictEqual((yield* commands) - before, 1)

      fs.writeFileSync(path.join(local, "lib/c.py"), "c changed\n")
      const touched = yield* Sync.push(conn, { local, remote: REMOTE })
      assert.deepStrictEqual(
        [touched.unchanged, touched.roundTrips, touched.sent, touched.bytes],
        [false, 2, 1, 10]
      )
      assert.strictEqual(yield* text("lib/c.py"), "c changed\n")
      assert.strictEqual((yield* Sync.push(conn, { local, remote: REMOTE })).roundTrips, 1)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a new mtime with the same content is hashed, not sent; same size, new content is sent", () =>
    Effect.gen(function* () {
      const { conn, text } = yield* setup
      const local = tree({ "a.py": "aaaa\n", "b.py": "bbbb\n" })
      yield* Sync.push(conn, { local, remote: REMOTE })
      const later = new Date(Date.now() + 60_000)
      fs.utimesSync(path.join(local, "a.py"), later, later)
      const touchedOnly = yield* Sync.push(conn, { local, remote: REMOTE })
      assert.deepStrictEqual([touchedOnly.sent, touchedOnly.roundTrips], [0, 2])
      assert.strictEqual((yield* Sync.push(conn, { local, remote: REMOTE })).roundTrips, 1)

      fs.writeFileSync(path.join(local, "b.py"), "BBBB\n")
      fs.utimesSync(path.join(local, "b.py"), later, later)
      const sameSize = yield* Sync.push(conn, { local, remote: REMOTE })
      assert.strictEqual(sameSize.sent, 1)
      assert.strictEqual(yield* text("b.py"), "BBBB\n")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("files and directories deleted locally are deleted on the host; host-made files stay", () =>
    Effect.gen(function* () {
      const { conn, host, listing } = yield* setup
      const local = tree({ "keep.py": "k\n", "gone.py": "g\n", "old/x.py": "x\n", "old/y/z.py": "z\n" })
      yield* Sync.push(conn, { local, remote: REMOTE })
      yield* host.fs.write(`${TARGET}/made-on-host.txt`, "mine\n", { mode: 0o600 })
      fs.rmSync(path.join(local, "gone.py"))
      fs.rmSync(path.join(local, "old"), { recursive: true })
      const summary = yield* Sync.push(conn, { local, remote: REMOTE })
      assert.deepStrictEqual([summary.deleted, summary.sent, summary.roundTrips], [3, 0, 2])
      assert.deepStrictEqual(yield* listing, {
        ".mlops-sync.jsonl": "600",
        "keep.py": "600",
        "made-on-host.txt": "600"
      })
      assert.isFalse(yield* host.fs.exists(`${TARGET}/old`))
    }).pipe(Effect.provide(layer()))
  )

  it.effect("an existing target without a manifest: no mkdir, everything sent, its files left alone", () =>
    Effect.gen(function* () {
      const { conn, host, listing } = yield* setup
      yield* host.fs.write(`${TARGET}/outputs/metrics.json`, "{}\n", { mode: 0o600 })
      const local = tree({ "a.py": "a\n" })
      const summary = yield* Sync.push(conn, { local, remote: REMOTE })
      assert.deepStrictEqual([summary.sent, summary.roundTrips], [1, 2])
      assert.deepStrictEqual(yield* listing, {
        ".mlops-sync.jsonl": "600",
        "a.py": "600",
        "outputs/metrics.json": "600"
      })
      const manifest = (yield* host.fs.readText(`${TARGET}/.mlops-sync.jsonl`))!.split("\n")
      assert.match(manifest[0]!, /^\{"mlopsSync":1,"digest":"[0-9a-f]{64}"\}$/)
      assert.match(
        manifest[1]!,
        /^\["f","a\.py",2,[0-9.]+,420,"87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7"\]$/
      )
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a path that changes kind (file to directory and back) is replaced", () =>
    Effect.gen(function* () {
      const { conn, listing, text } = yield* setup
      const local = tree({ thing: "a file\n", "other/in.py": "1\n" })
      yield* Sync.push(conn, { local, remote: REMOTE })
      fs.rmSync(path.join(local, "thing"))
      fs.rmSync(path.join(local, "other"), { recursive: true })
      write(local, { "thing/now-a-dir.py": "2\n", other: "now a file\n" })
      yield* Sync.push(conn, { local, remote: REMOTE })
      assert.deepStrictEqual(yield* listing, {
        ".mlops-sync.jsonl": "600",
        other: "600",
        "thing/now-a-dir.py": "600"
      })
      assert.strictEqual(yield* text("other"), "now a file\n")
    }).pipe(Effect.provide(layer()))
  )

  it.effect(".gitignore files are honoured: root and nested, negation, anchors, dirs, ** and ?", () =>
    Effect.gen(function* () {
      const { conn, listing } = yield* setup
      const local = tree({
        ".gitignore": "# build output\n\n*.log\n!keep.log\nbuild/\n/top-only.txt\n**/cache/**\nv?.tmp\n",
        "keep.log": "kept\n",
        "debug.log": "dropped\n",
        "build/out.bin": "dropped\n",
        "src/build/also-dropped.txt": "dropped\n",
        "top-only.txt": "dropped\n",
        "src/top-only.txt": "kept: the anchor is the root\n",
        "src/cache/x": "dropped\n",
        "v1.tmp": "dropped\n",
        "v10.tmp": "kept\n",
        "src/.gitignore": "local.txt\n/anchored.txt\n!debug.log\n",
        "src/local.txt": "dropped\n",
        "src/anchored.txt": "dropped\n",
        "src/sub/anchored.txt": "kept\n",
        "src/debug.log": "kept: re-included by the nested file\n",
        "src/main.py": "kept\n",
        ".git/HEAD": "never\n",
        "vendor/.git/config": "never\n",
        "vendor/lib.py": "kept\n"
      })
      const summary = yield* Sync.push(conn, { local, remote: REMOTE })
      assert.deepStrictEqual(Object.keys(yield* listing).sort(), [
        ".gitignore",
        ".mlops-sync.jsonl",
        "keep.log",
        "src/.gitignore",
        "src/debug.log",
        "src/main.py",
        "src/sub/anchored.txt",
        "src/top-only.txt",
        "v10.tmp",
        "vendor/lib.py"
      ])
      assert.strictEqual(summary.files, 9)
    }).pipe(Effect.provide(layer()))
  )

  const hasGit = spawnSync("git", ["--version"]).status === 0

  it.effect.skipIf(!hasGit)(
    "the files sent are the ones git sees (git ls-files --others --exclude-standard)",
    () =>
      Effect.gen(function* () {
        const names = [
          "main.py",
          "app.log",
          "important.log",
          "logs/deep/x.log",
          "build/out.o",
          "src/build/kept.txt",
          "dist/bundle.js",
          "src/dist/also-ignored.js",
          "node_modules/pkg/index.js",
          "web/node_modules/pkg/index.js",
          "docs/a/b/draft.tmp",
          "docs/draft.tmp",
          "docs/readme.md",
          "other/draft.tmp",
          "abc.txt",
          "abbc.txt",
          "Temp1.txt",
          "temp2.txt",
          "template.md",
          "#hash.txt",
          "trailing.txt",
          "obj/x.o",
          "keep.o",
          "src/generated/g.py",
          "src/only-here.txt",
          "src/sub/only-here.txt",
          "src/mod.pyc",
          "src/mod.py",
          "src/keep.pyc",
          "lib/generated/not-src.py",
          "a/b/c/d.txt",
          "a/b/skip/e.txt",
          "sp ace/file name.txt",
          "x/y/z/**literal.txt"
        ]
        const files: Record<string, string> = {
          ".gitignore": [
            "# comment",
            "",
            "*.log",
            "!important.log",
            "/build",
            "dist/",
            "**/node_modules",
            "docs/**/*.tmp",
            "a?c.txt",
            "[Tt]emp[0-9]*",
            "\\#hash.txt",
            "trailing.txt   ",
            "*.o",
            "!keep.o",
            "a/**/skip/"
          ].join("\n"),
          "src/.gitignore": "generated/\n/only-here.txt\n*.py[co]\n!keep.pyc\n"
        }
        for (const name of names) files[name] = `${name}\n`
        const local = tree(files)
        const git = (args: ReadonlyArray<string>) =>
          spawnSync("git", args, {
            cwd: local,
            encoding: "utf8",
            env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" }
          })
        assert.strictEqual(git(["init", "-q"]).status, 0)
        const seen = git(["ls-files", "-z", "--others", "--exclude-standard"])
          .stdout.split("\0")
          .filter((p) => p !== "")
          .sort()
        const scanned = yield* Sync.scan(local)
        const sent = scanned.paths.filter((p) => fs.lstatSync(path.join(local, p)).isFile())
        assert.deepStrictEqual(sent, seen)
        assert.isAbove(seen.length, 10)
      })
  )

  it.effect("secrets are never sent unless included, and are reported as skipped", () =>
    Effect.gen(function* () {
      const { conn, listing } = yield* setup
      const local = tree({
        "main.py": "ok\n",
        ".env": "TOKEN=1\n",
        ".env.production": "TOKEN=2\n",
        "certs/server.pem": "pem\n",
        "certs/server.key": "key\n",
        "keys/id_rsa": "rsa\n",
        "keys/id_ed25519.pub": "pub\n",
        ".netrc": "machine x\n",
        "credentials-prod.json": "{}\n",
        ".gitignore": "!.env\n"
      })
      const summary = yield* Sync.push(conn, { local, remote: REMOTE })
      assert.deepStrictEqual(Object.keys(yield* listing).sort(), [
        ".gitignore",
        ".mlops-sync.jsonl",
        "main.py"
      ])
      assert.deepStrictEqual(
        summary.skipped.map((s) => `${s.reason}:${s.path}`),
        [
          "secret:.env",
          "secret:.env.production",
          "secret:.netrc",
          "secret:certs/server.key",
          "secret:certs/server.pem",
          "secret:credentials-prod.json",
          "secret:keys/id_ed25519.pub",
          "secret:keys/id_rsa"
        ]
      )
      const opted = yield* Sync.push(conn, { local, remote: REMOTE, include: [".env", "certs/"] })
      assert.strictEqual(opted.sent, 3)
      assert.deepStrictEqual(Object.keys(yield* listing).sort(), [
        ".env",
        ".gitignore",
        ".mlops-sync.jsonl",
        "certs/server.key",
        "certs/server.pem",
        "main.py"
      ])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("include re-includes a path inside an ignored directory", () =>
    Effect.gen(function* () {
      const { conn, listing } = yield* setup
      const local = tree({
        ".gitignore": "data/\n",
        "data/big.bin": "x".repeat(1000),
        "data/small/labels.csv": "a,b\n",
        "main.py": "ok\n"
      })
      yield* Sync.push(conn, { local, remote: REMOTE, include: ["data/small/**"] })
      assert.deepStrictEqual(Object.keys(yield* listing).sort(), [
        ".gitignore",
        ".mlops-sync.jsonl",
        "data/small/labels.csv",
        "main.py"
      ])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a missing or non-directory DIR is a typed error naming the path", () =>
    Effect.gen(function* () {
      const { conn, commands } = yield* setup
      const missing = path.join(os.tmpdir(), "mlops-sync-does-not-exist")
      const error = yield* Effect.flip(Sync.push(conn, { local: missing, remote: REMOTE }))
      assert.isTrue(
        error._tag === "SyncSourceInvalid" && error.problem === "missing" && error.path === missing
      )
      assert.include(error.message, missing)
      const file = path.join(tree({ "f.txt": "x" }), "f.txt")
      const notDir = yield* Effect.flip(Sync.push(conn, { local: file, remote: REMOTE }))
      assert.isTrue(notDir._tag === "SyncSourceInvalid" && notDir.problem === "not-a-directory")
      assert.strictEqual(yield* commands, 0, "nothing ran on the host")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a tree over the cap is SyncTooLarge naming the biggest entries", () =>
    Effect.gen(function* () {
      const { conn, commands } = yield* setup
      const local = tree({
        "ckpt/a.bin": "x".repeat(3000),
        "ckpt/b.bin": "x".repeat(3000),
        "main.py": "ok\n"
      })
      const error = yield* Effect.flip(Sync.push(conn, { local, remote: REMOTE, maxBytes: 4096 }))
      assert.strictEqual(error._tag, "SyncTooLarge")
      if (error._tag !== "SyncTooLarge") return
      assert.deepStrictEqual(error.largest[0], { path: "ckpt/", bytes: 6000 })
      assert.include(error.fix, ".gitignore")
      assert.strictEqual(yield* commands, 0)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a symlink pointing outside DIR is refused by default, skipped on request", () =>
    Effect.gen(function* () {
      const { conn, commands } = yield* setup
      const local = tree({ "main.py": "ok\n", "sub/x.py": "x\n" })
      fs.symlinkSync("/etc/passwd", path.join(local, "passwd"))
      fs.symlinkSync("sub/x.py", path.join(local, "inside"))
      fs.symlinkSync(path.join(local, "sub"), path.join(local, "abs-inside"))
      const error = yield* Effect.flip(Sync.push(conn, { local, remote: REMOTE }))
      assert.isTrue(error._tag === "SyncSymlinkOutside" && error.target === "/etc/passwd")
      assert.strictEqual(yield* commands, 0)
      const scanned = yield* Sync.scan(local, { symlinksOutside: "skip" })
      assert.deepStrictEqual(scanned.paths, ["abs-inside", "inside", "main.py", "sub", "sub/x.py"])
      assert.deepStrictEqual(scanned.skipped, [{ path: "passwd", reason: "symlink-outside" }])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("several batches: one command each, the manifest with the last", () =>
    Effect.gen(function* () {
      const { conn, listing, text } = yield* setup
      const files: Record<string, string> = {}
      for (let i = 0; i < 10; i++) files[`f${i}.txt`] = `${i}`.repeat(3000)
      const local = tree(files)
      const summary = yield* Sync.push(conn, { local, remote: REMOTE, batchBytes: 14_000 })
      // check + mkdir + 4 batches of 3, 3, 3 and 1 files
      assert.strictEqual(summary.roundTrips, 2 + 4)
      assert.strictEqual(Object.keys(yield* listing).length, 11)
      assert.strictEqual(yield* text("f9.txt"), "9".repeat(3000))
      assert.strictEqual((yield* Sync.push(conn, { local, remote: REMOTE })).roundTrips, 1)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a sync cut short leaves the manifest aside: the next resends all and still deletes", () =>
    Effect.gen(function* () {
      const { conn, host, listing, text } = yield* setup
      const local = tree({ "a.py": "a\n", "b.py": "b\n", "c.py": "c\n" })
      yield* Sync.push(conn, { local, remote: REMOTE })
      fs.writeFileSync(path.join(local, "a.py"), "a2\n")
      fs.rmSync(path.join(local, "c.py"))
      // a tar that dies half-way (after writing one file)
      yield* host.register({
        match: "tar",
        run: (ctx) =>
          Effect.gen(function* () {
            yield* ctx.fs.write(`${ctx.cwd}/a.py`, "a2 (partial", { mode: 0o600 })
            yield* ctx.stderr.line("tar: Unexpected EOF in archive")
            return 2
          })
      })
      const error = yield* Effect.flip(Sync.push(conn, { local, remote: REMOTE }))
      assert.isTrue(error._tag === "SyncRemoteFailed" && error.step === "write" && error.host === "gpu")
      assert.include(error.message, "tar")
      // removals come first (c.py), then the archive died: the manifest is set aside
      assert.deepStrictEqual(Object.keys(yield* listing).sort(), [".mlops-sync.dirty", "a.py", "b.py"])
      assert.strictEqual(yield* text("a.py"), "a2 (partial")

      // the working tar again (registered later = matched first)
      for (const program of syncPrograms) yield* host.register(program)
      const next = yield* Sync.push(conn, { local, remote: REMOTE })
      assert.deepStrictEqual([next.sent, next.deleted], [2, 1])
      assert.deepStrictEqual(Object.keys(yield* listing).sort(), [".mlops-sync.jsonl", "a.py", "b.py"])
      assert.strictEqual(yield* text("a.py"), "a2\n")
      assert.strictEqual((yield* Sync.push(conn, { local, remote: REMOTE })).roundTrips, 1)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a remote path that is a file is a typed error naming host and path", () =>
    Effect.gen(function* () {
      const { conn, host } = yield* setup
      yield* host.fs.write("/root/taken", "x")
      const error = yield* Effect.flip(
        Sync.push(conn, { local: tree({ "a.py": "a\n" }), remote: "/root/taken" })
      )
      assert.isTrue(error._tag === "SyncRemoteFailed" && error.step === "check")
      assert.include(error.message, "gpu:/root/taken")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a host without tar: the write fails saying to install it", () =>
    Effect.gen(function* () {
      const conn = yield* Effect.flatMap(ConnectionPool, (pool) => pool.get("bare"))
      const error = yield* Effect.flip(Sync.push(conn, { local: tree({ "a.py": "a\n" }), remote: REMOTE }))
      assert.isTrue(error._tag === "SyncRemoteFailed" && error.step === "write")
      assert.include(error.message, "install tar")
    }).pipe(Effect.provide(FakeHost.layer([{ alias: "bare" }])))
  )
})
