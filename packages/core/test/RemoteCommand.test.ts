import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import * as RemoteCommand from "../src/RemoteCommand.js"
import * as RemotePath from "../src/RemotePath.js"

// The rendered line is run by a local POSIX shell: what arrives in the program's argv must be
// byte-for-byte what the value held. (The same property over real ssh is in test/integration.)
const runLocally = (command: RemoteCommand.RemoteCommand): ReadonlyArray<string> => {
  const line = RemoteCommand.render({
    ...command,
    argv: ["python3", "-c", "import sys, json; sys.stdout.write(json.dumps(sys.argv[1:]))", ...command.argv]
  })
  const out = spawnSync("sh", ["-c", line], { encoding: "utf8" })
  assert.strictEqual(out.status, 0, out.stderr)
  return JSON.parse(out.stdout) as ReadonlyArray<string>
}

describe("RemoteCommand", () => {
  it("quotes only what needs quoting", () => {
    assert.strictEqual(RemoteCommand.quote("--tp-size"), "--tp-size")
    assert.strictEqual(RemoteCommand.quote("/root/models/Qwen3.6-27B"), "/root/models/Qwen3.6-27B")
    assert.strictEqual(RemoteCommand.quote(""), "''")
    assert.strictEqual(RemoteCommand.quote("it's"), `'it'\\''s'`)
    assert.strictEqual(RemoteCommand.quote("$HOME"), "'$HOME'")
  })

  it("renders cd + exec; the environment is a separate export script", () => {
    const command = RemoteCommand.make(["python", "-m", "sglang.launch_server"], {
      cwd: "/srv/my dir",
      env: { SGLANG_ENABLE_SPEC_V2: "1", NOTE: "a b" }
    })
    assert.strictEqual(
      RemoteCommand.render(command),
      "cd '/srv/my dir' && exec python -m sglang.launch_server"
    )
    assert.strictEqual(
      RemoteCommand.envScript(command),
      "export SGLANG_ENABLE_SPEC_V2=1\nexport NOTE='a b'\n"
    )
    assert.notInclude(RemoteCommand.render(command), "a b", "no environment value in the line")
  })

  it("renders a home-relative path for the shell to expand; a plain string stays literal", () => {
    const command = RemoteCommand.make([RemotePath.make("~/ml-env/bin/python"), "~/as-written"], { cwd: "~" })
    assert.strictEqual(
      RemoteCommand.render(command),
      `cd "$HOME" && exec "$HOME"/ml-env/bin/python '~/as-written'`
    )
    assert.strictEqual(RemoteCommand.describe(command), "~/ml-env/bin/python '~/as-written'")
  })

  it("rejects environment names a shell cannot export, and NUL in values", () => {
    assert.throws(() => RemoteCommand.envScript(RemoteCommand.make(["true"], { env: { "A-B": "x" } })))
    assert.throws(() => RemoteCommand.envScript(RemoteCommand.make(["true"], { env: { A: "x\u0000y" } })))
  })

  it("env values, home paths and a cwd arrive intact through a real shell", () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-home-"))
    try {
      fs.mkdirSync(path.join(home, "my dir"))
      const command = RemoteCommand.make(
        ["sh", "-c", 'printf "%s|%s|%s" "$V" "$PWD" "$1"', "sh", RemotePath.make("~/x")],
        {
          cwd: RemotePath.make("~/my dir"),
          env: { V: "it's $x `y`\n" }
        }
      )
      // what the wrappers do: evaluate the environment script, then run the line
      const out = spawnSync("sh", ["-c", `eval "$(cat)" && ${RemoteCommand.render(command)}`], {
        input: RemoteCommand.envScript(command),
        encoding: "utf8",
        env: { PATH: process.env.PATH, HOME: home }
      })
      assert.strictEqual(out.stdout, `it's $x \`y\`\n|${home}/my dir|${home}/x`)
    } finally {
      fs.rmSync(home, { recursive: true, force: true })
    }
  })

  it.effect("arbitrary argv strings arrive byte-for-byte at the program (property)", () =>
    Effect.sync(() => {
      const word = FastCheck.oneof(
        FastCheck.string({ unit: "grapheme", maxLength: 12 }),
        FastCheck.constantFrom(
          "'",
          '"',
          "$HOME",
          "`id`",
          "\\",
          "\n",
          "--flag",
          "-",
          "a b",
          "*",
          "~",
          "!",
          ";",
          ""
        )
      )
      FastCheck.assert(
        FastCheck.property(FastCheck.array(word, { minLength: 1, maxLength: 6 }), (argv) => {
          const safe = argv.map((w) => w.replaceAll("\u0000", ""))
          const got = runLocally(RemoteCommand.make(safe as [string, ...Array<string>]))
          assert.deepStrictEqual(got, safe)
        }),
        { numRuns: 60 }
      )
    })
  )
})
