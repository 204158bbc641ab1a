/**
 * The fake shell running on a FakeHost, construct by construct: compound commands, functions,
 * pipelines and `$(...)`, pathname expansion over the fake file system, how PATH, `command -v`,
 * `[ -x ]` and running a program relate to the host's programs and files, `read`, `exec` in a
 * subshell, syntax errors after runnable lines, the `tail` program, and what is refused while
 * running. (The same constructs against the real dash: `fakeShellDash.test.ts`.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionPool } from "../../src/ConnectionPool.js"
import * as FakeHost from "../../src/FakeHost.js"
import * as RemoteCommand from "../../src/RemoteCommand.js"

const HOME = "/home/tester"

const printArgs = (match: FakeHost.Program["match"], name: string): FakeHost.Program => ({
  match,
  run: (ctx) => Effect.as(ctx.stdout.line(`${name}: ${ctx.argv.join(" ")}`), 0)
})

const layer = FakeHost.layer([
  {
    alias: "h",
    user: "tester",
    home: HOME,
    env: { PATH: `${HOME}/bin:/usr/bin:/bin` },
    files: {
      "~/envs/x/bin/python": "#!python, mode 0644: runnable because a program answers for it\n",
      "~/data.txt": "one\ntwo\nthree",
      "~/globs/b": "",
      "~/globs/a": "",
      "~/globs/.hidden": "",
      "~/globs/sub/c": ""
    },
    programs: [
      printArgs((argv) => argv[0] === `${HOME}/envs/x/bin/python`, "python"),
      printArgs("hello", "hello"),
      printArgs((argv) => argv[0] === `${HOME}/bin/tool`, "tool"),
      {
        match: "count-stdin",
        run: (ctx) => Effect.as(ctx.stdout.line(`${ctx.stdin.length} bytes`), 0)
      }
    ]
  }
])

interface Ran {
  readonly status: number
  readonly stdout: string
  readonly stderr: string
}

const sh = (script: string, args: ReadonlyArray<string> = [], stdin?: string) =>
  Effect.gen(function* () {
    const host = yield* FakeHost.host("h")
    yield* host.fs.write(`${HOME}/bin/tool`, "#!tool\n", { mode: 0o755 })
    yield* host.fs.write(`${HOME}/bin/noprogram`, "#!nothing answers\n", { mode: 0o755 })
    const conn = yield* (yield* ConnectionPool).get("h")
    const result = yield* conn.exec(
      RemoteCommand.make(["sh", "-c", script, "sh", ...args]),
      stdin === undefined ? {} : { stdin }
    )
    return { status: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr } satisfies Ran
  })

const run = (script: string, args: ReadonlyArray<string> = [], stdin?: string) =>
  Effect.provide(sh(script, args, stdin), layer)

describe("fake shell on a fake host", () => {
  it.effect("compound commands, functions and loop control", () =>
    Effect.gen(function* () {
      const ran = yield* run(
        [
          'f() { for x in "$@"; do case $x in skip) continue ;; stop) return 4 ;; esac; echo "[$x]"; done; }',
          "f a skip 'b c' stop d; echo \"f: $?\"",
          'i=; while [ "$i" != ... ]; do i="$i."; done; echo "$i"',
          'until true; do echo never; done; echo "until: $?"',
          "if false; then :; elif [ -d ~/globs ]; then echo elif; fi",
          '{ echo grouped; } && ( exit 3 ) || echo "subshell: $?"'
        ].join("\n")
      )
      assert.deepStrictEqual(ran, {
        status: 0,
        stdout: "[a]\n[b c]\nf: 4\n...\nuntil: 0\nelif\ngrouped\nsubshell: 3\n",
        stderr: ""
      })
    })
  )

  it.effect(
    "pipelines run each side apart (status of the last); $(...) strips newlines and gives its status",
    () =>
      Effect.gen(function* () {
        const ran = yield* run(
          [
            "printf 'a\\nb\\n' | tail -n 1",
            'v=1; v=2 | true; echo "v=$v"',
            'false | true; echo "pipe: $?"',
            "out=$(printf 'x\\n\\n'; exit 5); echo \"[$out] $?\"",
            "echo \"$(printf '%s\\n' a b c | tail -n 2 | tail -n 1)\""
          ].join("\n")
        )
        assert.deepStrictEqual(ran.stdout, "b\nv=1\npipe: 0\n[x] 5\nc\n")
      })
  )

  it.effect("PATH, command -v, [ -x ] and running agree on what a program is", () =>
    Effect.gen(function* () {
      const ran = yield* run(
        [
          // a file on PATH answered by a program registered for its path: found, runs by name
          "command -v tool; tool a",
          // a program registered by name only: runs by name, but no file is on PATH
          'hello b; command -v hello; echo "hello on PATH: $?"',
          // an executable file no program answers: found, but it cannot run
          'command -v noprogram; noprogram; echo "noprogram: $?"',
          // an interpreter file written 0644: executable because a program answers for its path
          "[ -x ~/envs/x/bin/python ] && ~/envs/x/bin/python -c probe",
          "[ -x ~/data.txt ] || echo 'data.txt: not executable'",
          'command -v printf; command -v if; f() { :; }; command -v f; command -v missing || echo "missing: $?"'
        ].join("\n")
      )
      assert.deepStrictEqual(ran, {
        status: 0,
        stdout: [
          `${HOME}/bin/tool`,
          "tool: tool a",
          "hello: hello b",
          "hello on PATH: 127",
          `${HOME}/bin/noprogram`,
          "noprogram: 127",
          `python: ${HOME}/envs/x/bin/python -c probe`,
          "data.txt: not executable",
          "printf",
          "if",
          "f",
          "missing: 127",
          ""
        ].join("\n"),
        stderr: "sh: 3: noprogram: not found\n"
      })
    })
  )

  it.effect(
    "pathname expansion over the fake file system: sorted, dot files only for a dot, no match kept",
    () =>
      Effect.gen(function* () {
        const ran = yield* run("cd globs && echo * && echo .* && echo */* ~/globs/[ab] && echo no*match '*'")
        assert.strictEqual(
          ran.stdout,
          `a b sub\n. .. .hidden\nsub/c ${HOME}/globs/a ${HOME}/globs/b\nno*match *\n`
        )
      })
  )

  it.effect(
    "read: IFS= keeps blanks, status 1 at the end without a newline; refused after a program got the input",
    () =>
      Effect.gen(function* () {
        const ran = yield* run(
          'IFS= read -r a; read -r b c; IFS= read -r d; echo "$? [$a] [$b] [$c] [$d]"',
          [],
          "  padded  \nx y z\nlast"
        )
        assert.strictEqual(ran.stdout, "1 [  padded  ] [x] [y z] [last]\n")
        const file = yield* run('while read -r l; do echo "<$l>"; done < ~/data.txt; echo "$l"')
        assert.strictEqual(file.stdout, "<one>\n<two>\nthree\n")
        const shared = yield* run("read -r a; count-stdin; read -r b; echo never", [], "1\n2\n3\n")
        assert.strictEqual(shared.status, 2)
        assert.strictEqual(shared.stdout, "4 bytes\n")
        assert.include(
          shared.stderr,
          "unsupported shell syntax: read after a program was given the same input"
        )
      })
  )

  it.effect("exec in a subshell ends only the subshell; at the top the program replaces the shell", () =>
    Effect.gen(function* () {
      const sub = yield* run('x=$(exec hello sub); echo "[$x] $?"; (exec false); echo "after: $?"')
      assert.strictEqual(sub.stdout, "[hello: hello sub] 0\nafter: 1\n")
      const top = yield* run("exec hello top; echo never")
      assert.deepStrictEqual([top.status, top.stdout], [0, "hello: hello top\n"])
    })
  )

  it.effect("a syntax error: the lines before it run, then the shell exits 2 with dash's message", () =>
    Effect.gen(function* () {
      const ran = yield* run("echo first\necho second; if")
      assert.deepStrictEqual(ran, {
        status: 2,
        stdout: "first\n",
        stderr: 'sh: 2: Syntax error: end of file unexpected (expecting "then")\n'
      })
      const exited = yield* run("exit 4\nfi")
      assert.strictEqual(exited.status, 4)
    })
  )

  it.effect("what is not modelled is refused when reached, by name, and nothing after it runs", () =>
    Effect.gen(function* () {
      for (const [script, what] of [
        ["set -e", "set -e"],
        ["trap 'echo x' EXIT", "builtin trap"],
        ["f() { local x; }; f", "builtin local"],
        ["exec 2>/dev/null", "exec with only redirections"],
        ["read -p prompt x", "read -p"],
        ["[ a -nt b ]", "test -nt"],
        ["echo /proc/*", "pathname expansion in /proc"],
        ["printf '%f' 1", "printf %f"],
        ["echo x 3>/dev/null", "redirection of fd 3"]
      ] as const) {
        const ran = yield* run(`echo before; ${script}; echo after`)
        assert.deepStrictEqual(
          ran,
          { status: 2, stdout: "before\n", stderr: `sh: fake host: unsupported shell syntax: ${what}\n` },
          script
        )
      }
    })
  )

  it.effect(
    "tail: the last N lines of stdin or a file, +N from line N, a last line without its newline",
    () =>
      Effect.gen(function* () {
        const ran = yield* run(
          "tail -n 2 ~/data.txt; echo; printf 'a\\nb\\nc\\n' | tail -n +2; printf 'a\\nb\\n' | tail -1; tail -n x </dev/null; echo $?"
        )
        assert.strictEqual(ran.stdout, "two\nthree\nb\nc\nb\n1\n")
        assert.strictEqual(ran.stderr, "tail: invalid number of lines: 'x'\n")
      })
  )
})
