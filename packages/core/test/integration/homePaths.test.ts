/**
 * The same RemoteCommand values on the real sshd and on the fake host give the same result:
 * `~/...` paths mlops builds (RemotePath) are the remote home, a `~` in a plain word stays
 * literal (so a quoted `~/...` interpreter is "not found" on both), and env values and the
 * working directory arrive. Home paths are compared with the home directory replaced.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Connection } from "../../src/Connection.js"
import { ConnectionPool, makeConnection } from "../../src/ConnectionPool.js"
import * as FakeHost from "../../src/FakeHost.js"
import * as RemoteCommand from "../../src/RemoteCommand.js"
import * as RemotePath from "../../src/RemotePath.js"
import { unique } from "../support/local.js"
import * as Sshd from "../support/Sshd.js"

// under the remote user's real home (the sshd serves the current user): removed afterwards
const dirName = unique(".mlops-it-home")
const realHome = os.homedir()
const fakeHome = "/home/tester"

/** What `show` prints: its working directory, $V and each argument. */
const SHOW = `#!/bin/sh\nprintf 'pwd=%s\\n' "$PWD"\nprintf 'V=%s\\n' "$V"\nfor a do printf 'arg=%s\\n' "$a"; done\n`

const fakeShow: FakeHost.Program = {
  match: "show",
  run: (ctx) =>
    Effect.gen(function* () {
      yield* ctx.stdout.line(`pwd=${ctx.cwd}`)
      yield* ctx.stdout.line(`V=${ctx.env.V ?? ""}`)
      for (const arg of ctx.argv.slice(1)) yield* ctx.stdout.line(`arg=${arg}`)
      return 0
    })
}

const commands: ReadonlyArray<RemoteCommand.RemoteCommand> = [
  RemoteCommand.make(
    [
      RemotePath.make(`~/${dirName}/bin/show`),
      RemotePath.make(`~/${dirName}/a b`),
      "~/as written",
      "~",
      RemotePath.make("~"),
      "$HOME"
    ],
    { cwd: RemotePath.make(`~/${dirName}/a b`), env: { V: "it's ~ and $HOME" } }
  ),
  // a plain word is literal: this interpreter path has a directory named ~ in it
  RemoteCommand.make([`~/${dirName}/bin/show`, "x"]),
  RemoteCommand.make([RemotePath.make(`~/${dirName}/bin/show`)], { cwd: `~/${dirName}/missing` }),
  RemoteCommand.make([RemotePath.make(`~/${dirName}/bin/show`)], { cwd: "~" })
]

const run = (conn: Connection, home: string) =>
  Effect.forEach(commands, (command) =>
    Effect.map(conn.exec(command, { timeout: "20 seconds" }), (r) => ({
      exitCode: r.exitCode,
      stdout: r.stdout.replaceAll(home, "<HOME>"),
      stderr: r.stderr.replaceAll(home, "<HOME>")
    }))
  )

const fakeLayer = FakeHost.layer([
  {
    alias: "fake",
    user: "tester",
    home: fakeHome,
    programs: [fakeShow],
    files: { [`~/${dirName}/bin/show`]: SHOW, [`~/${dirName}/a b/.keep`]: "" }
  }
])

layer(Sshd.layer(), { excludeTestServices: true, timeout: "60 seconds" })(
  "home paths, fake vs real",
  (it) => {
    it.scoped("the same commands give the same results on the real sshd and on the fake host", () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.TestSshd
        const dir = path.join(realHome, dirName)
        yield* Effect.acquireRelease(
          Effect.sync(() => {
            fs.mkdirSync(path.join(dir, "bin"), { recursive: true })
            fs.mkdirSync(path.join(dir, "a b"))
            fs.writeFileSync(path.join(dir, "bin", "show"), SHOW, { mode: 0o755 })
          }),
          () => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
        )
        const real = yield* run(yield* makeConnection(sshd.hostConfig), realHome)
        const fake = yield* Effect.flatMap(ConnectionPool, (pool) => pool.get("fake")).pipe(
          Effect.flatMap((conn) => run(conn, fakeHome)),
          Effect.provide(fakeLayer)
        )
        assert.deepStrictEqual(fake, real)
        // and what they agree on is what a user expects
        assert.deepStrictEqual(real[0], {
          exitCode: 0,
          stdout: [
            `pwd=<HOME>/${dirName}/a b`,
            "V=it's ~ and $HOME",
            `arg=<HOME>/${dirName}/a b`,
            "arg=~/as written",
            "arg=~",
            "arg=<HOME>",
            "arg=$HOME",
            ""
          ].join("\n"),
          stderr: ""
        })
        assert.deepStrictEqual(
          [real[1]?.exitCode, real[1]?.stderr],
          [127, `sh: 1: exec: ~/${dirName}/bin/show: not found\n`]
        )
        assert.deepStrictEqual(
          [real[2]?.exitCode, real[2]?.stderr],
          [2, `sh: 1: cd: can't cd to <HOME>/${dirName}/missing\n`]
        )
      })
    )
  }
)
