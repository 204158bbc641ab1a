/**
 * `Sync.push` over the real test sshd (this machine's OpenSSH, /bin/sh, GNU tar, coreutils),
 * on both transports: the removal list is read by the shell's `read` from the same stdin the
 * archive follows on, so the byte-exact hand-over is checked on a real shell. `Pull.pull` the
 * other way: GNU find's listing and reads in chunks over either transport.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import * as Pull from "../../src/Pull.js"
import * as Sync from "../../src/Sync.js"
import * as Sshd from "../support/Sshd.js"
import { transports } from "../support/transports.js"

const mode = (p: string) => (fs.lstatSync(p).mode & 0o777).toString(8)

/** Every path under `root` (relative, sorted) with its kind and mode, or link target. */
const listing = (root: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const visit = (dir: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const abs = path.join(dir, name)
      const rel = path.relative(root, abs)
      const stat = fs.lstatSync(abs)
      if (stat.isSymbolicLink()) out[rel] = `-> ${fs.readlinkSync(abs)}`
      else if (stat.isDirectory()) {
        out[`${rel}/`] = mode(abs)
        visit(abs)
      } else out[rel] = mode(abs)
    }
  }
  visit(root)
  return out
}

const LONG = `${"deep-directory-name/".repeat(6)}a-file-name-long-enough-for-a-pax-header.py`

for (const transport of transports)
  layer(Sshd.layer(), { excludeTestServices: true, timeout: "30 seconds" })(
    `live sync (${transport.name})`,
    (it) => {
      it.scoped(
        "pushes a tree, then an unchanged re-push is one round trip; changes and deletions follow",
        () =>
          Effect.gen(function* () {
            const sshd = yield* Sshd.TestSshd
            const conn = yield* makeConnection(sshd.hostConfig, transport.options)
            const local = path.join(sshd.dir, `sync-src-${transport.options.remoteHelper}`)
            const remote = path.join(sshd.dir, `sync-dst-${transport.options.remoteHelper}`, "run", "code")
            const files: Record<string, [string, number]> = {
              "train.py": ["print('train')\n", 0o644],
              "run.sh": ['#!/bin/sh\necho ran "$@"\n', 0o755],
              "pkg/model.py": ["class M: pass\n", 0o600],
              "pkg/data/labels.txt": ["a\nb\n", 0o664],
              "-dash and space.txt": ["odd name\n", 0o644],
              "naïve-ünïcode.py": ["u = 1\n", 0o644],
              [LONG]: ["long = True\n", 0o644],
              ".gitignore": ["*.log\n", 0o644],
              "out.log": ["ignored\n", 0o644],
              ".env": ["SECRET=1\n", 0o600]
            }
            for (const [rel, [data, m]] of Object.entries(files)) {
              fs.mkdirSync(path.dirname(path.join(local, rel)), { recursive: true })
              fs.writeFileSync(path.join(local, rel), data)
              fs.chmodSync(path.join(local, rel), m)
            }
            fs.symlinkSync("pkg/model.py", path.join(local, "model-link.py"))
            fs.symlinkSync(path.join(local, "pkg"), path.join(local, "pkg-abs-link"))

            const first = yield* Sync.push(conn, { local, remote })
            assert.deepStrictEqual(
              [first.files, first.sent, first.roundTrips, first.unchanged],
              [8, 10, 3, false],
              "8 files and 2 links; check, mkdir, one archive"
            )
            assert.deepStrictEqual(first.skipped, [{ path: ".env", reason: "secret" }])
            const tree = listing(remote)
            assert.deepInclude(tree, {
              ".gitignore": "600",
              ".mlops-sync.jsonl": "600",
              "-dash and space.txt": "600",
              "model-link.py": "-> pkg/model.py",
              "naïve-ünïcode.py": "600",
              "pkg-abs-link": "-> pkg",
              "pkg/": "700",
              "pkg/data/": "700",
              "pkg/data/labels.txt": "600",
              "pkg/model.py": "600",
              "run.sh": "700",
              "train.py": "600"
            })
            assert.strictEqual(tree[LONG], "600")
            assert.isUndefined(tree["out.log"])
            assert.isUndefined(tree[".env"])
            for (const dir of ["", "..", "../.."])
              assert.strictEqual(mode(path.join(remote, dir)), "700", dir)
            assert.strictEqual(fs.readFileSync(path.join(remote, LONG), "utf8"), "long = True\n")
            assert.strictEqual(fs.readFileSync(path.join(remote, "model-link.py"), "utf8"), "class M: pass\n")
            const ran = yield* conn.exec({ argv: [path.join(remote, "run.sh"), "ok"], env: {} })
            assert.strictEqual(ran.stdout, "ran ok\n")

            const again = yield* Sync.push(conn, { local, remote })
            assert.deepStrictEqual(
              [again.unchanged, again.roundTrips, again.sent, again.wireBytes],
              [true, 1, 0, 0]
            )

            // one file changed, one deleted, one path from a file to a directory
            fs.writeFileSync(path.join(local, "train.py"), "print('train v2')\n")
            fs.rmSync(path.join(local, "pkg/data"), { recursive: true })
            fs.rmSync(path.join(local, "-dash and space.txt"))
            fs.mkdirSync(path.join(local, "-dash and space.txt"))
            fs.writeFileSync(path.join(local, "-dash and space.txt", "inside.py"), "x = 2\n")
            const changed = yield* Sync.push(conn, { local, remote })
            assert.deepStrictEqual([changed.sent, changed.deleted, changed.roundTrips], [2, 1, 2])
            const after = listing(remote)
            assert.strictEqual(fs.readFileSync(path.join(remote, "train.py"), "utf8"), "print('train v2')\n")
            assert.isUndefined(after["pkg/data/"])
            assert.strictEqual(after["-dash and space.txt/"], "700")
            assert.strictEqual(after["-dash and space.txt/inside.py"], "600")
            assert.isUndefined(after[".mlops-sync.dirty"])

            const unchanged = yield* Sync.push(conn, { local, remote })
            assert.deepStrictEqual([unchanged.unchanged, unchanged.roundTrips], [true, 1])
          })
      )

      it.scoped(
        "pulls a tree back (GNU find's listing, odd names, chunks), then only what changed; links are skipped, named",
        () =>
          Effect.gen(function* () {
            const sshd = yield* Sshd.TestSshd
            const conn = yield* makeConnection(sshd.hostConfig, transport.options)
            const remote = path.join(sshd.dir, `pull-src-${transport.options.remoteHelper}`, "out")
            const local = path.join(sshd.dir, `pull-dst-${transport.options.remoteHelper}`, "out")
            const files: Record<string, [string, number]> = {
              "config.json": ['{"hidden_size": 64}\n', 0o644],
              "ckpt/model.bin": ["w".repeat(300_000), 0o644],
              "-dash and space.txt": ["odd name\n", 0o644],
              "naïve-ünïcode.txt": ["u\n", 0o644],
              "tab\there.txt": ["tab\n", 0o644],
              "resume.sh": ["#!/bin/sh\n", 0o755],
              [LONG]: ["long\n", 0o644]
            }
            for (const [rel, [data, m]] of Object.entries(files)) {
              fs.mkdirSync(path.dirname(path.join(remote, rel)), { recursive: true })
              fs.writeFileSync(path.join(remote, rel), data)
              fs.chmodSync(path.join(remote, rel), m)
            }
            fs.symlinkSync("config.json", path.join(remote, "latest"))

            const first = yield* Pull.pull(conn, { remote, local, chunkBytes: 64 * 1024 })
            assert.deepStrictEqual([first.files, first.fetched, first.upToDate], [7, 7, 0])
            assert.deepStrictEqual(first.skipped, [{ path: "latest", reason: "symlink" }])
            for (const [rel, [data, m]] of Object.entries(files)) {
              assert.strictEqual(fs.readFileSync(path.join(local, rel), "utf8"), data, rel)
              assert.strictEqual(mode(path.join(local, rel)), m & 0o100 ? "700" : "600", rel)
            }
            assert.strictEqual(mode(path.join(local, "ckpt")), "700")

            const again = yield* Pull.pull(conn, { remote, local })
            assert.deepStrictEqual([again.fetched, again.upToDate], [0, 7])
            fs.writeFileSync(path.join(remote, "ckpt/step-2.bin"), "new checkpoint")
            const third = yield* Pull.pull(conn, { remote, local })
            assert.deepStrictEqual([third.fetched, third.bytes], [1, 14])
          })
      )
    }
  )
