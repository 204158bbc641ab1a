/**
 * The fake host's shell against the real one: the same text, run by the fake `sh` and by this
 * machine's /bin/sh (dash on Debian), must give the same argv, environment and working
 * directory to the program it runs. Random words through RemoteCommand (what mlops renders)
 * and random hand-made lines (quotes, `"$HOME"`, `~`, backslashes, `$VAR`, `cd`, `export`,
 * assignments, `exec`, `&&`, `;`). Compound commands, functions, pipelines, expansions and
 * globs are checked against dash in `fakeShellDash.test.ts`.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import { ConnectionPool } from "../../src/ConnectionPool.js"
import * as FakeHost from "../../src/FakeHost.js"
import * as RemoteCommand from "../../src/RemoteCommand.js"
import * as RemotePath from "../../src/RemotePath.js"

// One home directory path, real on this machine and the fake host's home: outputs compare as is.
const home = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-shell-home-"))
const bin = path.join(home, "bin")
fs.mkdirSync(bin)
fs.mkdirSync(path.join(home, "d"))
fs.mkdirSync(path.join(home, "sp ace"))
afterAll(() => fs.rmSync(home, { recursive: true, force: true }))

// `show` prints its arguments, $A, $B, $V and the working directory as JSON.
fs.writeFileSync(
  path.join(bin, "show"),
  [
    "#!/usr/bin/env python3",
    "import json, os, sys",
    'print(json.dumps({"argv": sys.argv[1:], "pwd": os.getcwd(), "env": {k: os.environ.get(k) for k in ["A", "B", "V"]}}, separators=(",", ":")))'
  ].join("\n"),
  { mode: 0o755 }
)

const fakeShow: FakeHost.Program = {
  match: "show",
  run: (ctx) =>
    Effect.as(
      ctx.stdout.line(
        JSON.stringify({
          argv: ctx.argv.slice(1),
          pwd: ctx.cwd,
          env: Object.fromEntries(["A", "B", "V"].map((k) => [k, ctx.env[k] ?? null]))
        })
      ),
      0
    )
}

const layer = FakeHost.layer([
  {
    alias: "h",
    user: "tester",
    home,
    programs: [fakeShow],
    env: { PATH: `${bin}:/usr/bin:/bin` },
    files: { "~/d/.keep": "", "~/sp ace/.keep": "" }
  }
])

interface Ran {
  readonly status: number | null
  readonly stdout: string
}

/** The real /bin/sh, login-like: HOME, PATH, starting in the home directory. */
const real = (line: string, stdin = ""): Ran => {
  const out = spawnSync("/bin/sh", ["-c", line], {
    cwd: home,
    input: stdin,
    encoding: "utf8",
    env: { HOME: home, PATH: `${bin}:/usr/bin:/bin`, USER: "tester" }
  })
  return { status: out.status, stdout: out.stdout }
}

/** The fake host's sh, given the same line (as `sh -c LINE` through a RemoteCommand). */
const fake = (command: RemoteCommand.RemoteCommand) =>
  Effect.gen(function* () {
    const conn = yield* (yield* ConnectionPool).get("h")
    const result = yield* conn.exec(command)
    return { status: result.exitCode, stdout: result.stdout } satisfies Ran
  })

// `${A}` spelled without a template placeholder
const BRACED_A = "$" + "{A}"
const BRACED_B = "$" + "{B}"

/** Printable text with the characters that matter to a shell, and no NUL. */
const shellText = FastCheck.oneof(
  FastCheck.string({ maxLength: 8 }),
  FastCheck.constantFrom(
    "'",
    '"',
    "$HOME",
    "`id`",
    "\\",
    "\n",
    "~",
    "~/x",
    "a b",
    "$",
    BRACED_A,
    "!",
    ";",
    "&&",
    "#",
    ""
  )
).map((s) => s.replaceAll("\u0000", ""))

describe("fake sh agrees with /bin/sh", () => {
  it.effect("on what RemoteCommand renders: words, home paths, env values and a cwd (property)", () =>
    Effect.gen(function* () {
      const word = FastCheck.oneof(
        shellText,
        shellText.map((text) => RemotePath.make(`~/${text.replaceAll("\n", "")}`)),
        FastCheck.constant(RemotePath.make("~"))
      )
      const samples = FastCheck.sample(
        FastCheck.record({
          words: FastCheck.array(word, { maxLength: 5 }),
          value: shellText,
          cwd: FastCheck.constantFrom(undefined, "~", "~/d", "~/sp ace", home)
        }),
        { numRuns: 60 }
      )
      for (const sample of samples) {
        const command = RemoteCommand.make(["show", ...sample.words], {
          env: { V: sample.value },
          ...(sample.cwd === undefined ? {} : { cwd: sample.cwd })
        })
        // what the wrappers do: evaluate the environment script, then run the line
        const expected = real(
          `eval "$(cat)" && ${RemoteCommand.render(command)}`,
          RemoteCommand.envScript(command)
        )
        const got = yield* fake(command)
        assert.deepStrictEqual(got, expected, RemoteCommand.render(command))
      }
    }).pipe(Effect.provide(layer))
  )

  it.effect(
    "on hand-made lines: quotes, $HOME, ~, backslashes, $VAR splitting, cd, export, &&, ; (property)",
    () =>
      Effect.gen(function* () {
        const noQuote = (s: string) => s.replaceAll("'", "")
        const safe = FastCheck.stringMatching(/^[A-Za-z0-9_.,:@%+=/-]{1,6}$/)
        const dqChar = FastCheck.oneof(
          FastCheck.stringMatching(/^[A-Za-z0-9 ~'#;&|<>()*?{}!-]{1,3}$/),
          FastCheck.constantFrom("\\$", '\\"', "\\\\", "\\x", "$HOME", BRACED_A, "$B", "$1", "$#")
        )
        const part = FastCheck.oneof(
          safe,
          shellText.map((s) => `'${noQuote(s)}'`),
          FastCheck.array(dqChar, { maxLength: 4 }).map((cs) => `"${cs.join("")}"`),
          FastCheck.constantFrom("\\ ", "\\$", "\\'", '\\"', "\\~", "$A", BRACED_B, "$HOME")
        )
        const tilde = FastCheck.constantFrom("", "~", "~/", "~/d")
        const word = FastCheck.tuple(tilde, FastCheck.array(part, { minLength: 1, maxLength: 3 })).map(
          ([t, parts]) => t + parts.join("")
        )
        // values for $A/$B: blanks split fields (globs are in fakeShellDash.test.ts: this home differs)
        const value = FastCheck.stringMatching(/^[A-Za-z0-9 \t~$'"\\-]{0,8}$/)
        const prefix = FastCheck.constantFrom(
          "",
          "cd d && ",
          'cd "$HOME"/sp\\ ace && ',
          "cd ~/d; ",
          "cd nowhere && ",
          "cd nowhere; "
        )
        const line = FastCheck.record({
          a: value,
          b: value,
          exportB: FastCheck.boolean(),
          prefix,
          exec: FastCheck.boolean(),
          words: FastCheck.array(word, { maxLength: 4 })
        }).map(
          (l) =>
            `A='${noQuote(l.a)}'; ${l.exportB ? "export " : ""}B='${noQuote(l.b)}'; export A; ` +
            `${l.prefix}${l.exec ? "exec " : ""}show ${l.words.join(" ")}`
        )
        for (const text of FastCheck.sample(line, { numRuns: 80 })) {
          const got = yield* fake(RemoteCommand.make(["sh", "-c", text, "sh", "one", "two"]))
          const expected = real(`${text}`.replace(/^/, "set -- one two; "))
          assert.deepStrictEqual(got, expected, text)
        }
      }).pipe(Effect.provide(layer))
  )

  it.effect("a quoted ~ stays literal and an unquoted one is the home directory, on both", () =>
    Effect.gen(function* () {
      const line = `show '~' "~/x" \\~ ~ ~/x "$HOME"/y`
      const got = yield* fake(RemoteCommand.make(["sh", "-c", line]))
      assert.deepStrictEqual(got, real(line))
      assert.deepStrictEqual(JSON.parse(got.stdout).argv, ["~", "~/x", "~", home, `${home}/x`, `${home}/y`])
      // a program named by a quoted ~ path is looked up under a directory literally named ~
      const missing = "exec '~/bin/show'"
      const gotMissing = yield* Effect.flatMap(ConnectionPool, (pool) =>
        Effect.flatMap(pool.get("h"), (conn) => conn.exec(RemoteCommand.make(["sh", "-c", missing])))
      )
      const realMissing = spawnSync("sh", ["-c", missing], {
        cwd: home,
        encoding: "utf8",
        env: { HOME: home }
      })
      assert.deepStrictEqual(
        [gotMissing.exitCode, gotMissing.stderr],
        [realMissing.status, realMissing.stderr]
      )
    }).pipe(Effect.provide(layer))
  )

  it.effect("syntax the fake does not model is refused by name, never guessed", () =>
    Effect.gen(function* () {
      for (const line of [
        "show `id`",
        "show $((1 + 2))",
        "show &",
        "show <<EOF\nx\nEOF",
        "trap 'show' EXIT",
        "eval show",
        `show $${"{"}A:=x}`,
        "exec >log",
        "show /proc/*"
      ]) {
        const got = yield* Effect.flatMap(ConnectionPool, (pool) =>
          Effect.flatMap(pool.get("h"), (conn) => conn.exec(RemoteCommand.make(["sh", "-c", line])))
        )
        assert.strictEqual(got.exitCode, 2, line)
        assert.include(got.stderr, "sh: fake host: unsupported shell syntax", line)
      }
      const unterminated = yield* Effect.flatMap(ConnectionPool, (pool) =>
        Effect.flatMap(pool.get("h"), (conn) => conn.exec(RemoteCommand.make(["sh", "-c", "show 'open"])))
      )
      assert.deepStrictEqual(
        [unterminated.exitCode, unterminated.stderr],
        [2, "sh: 1: Syntax error: Unterminated quoted string\n"]
      )
    }).pipe(Effect.provide(layer))
  )
})
