import { spawnSync } from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import * as RemoteCommand from "../src/RemoteCommand.js"

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

  it("renders cwd and env as cd + export before the argv", () => {
    const line = RemoteCommand.render(
      RemoteCommand.make(["python", "-m", "sglang.launch_server"], {
        cwd: "/srv/my dir",
        env: { SGLANG_ENABLE_SPEC_V2: "1", NOTE: "a b" }
      })
    )
    assert.strictEqual(
      line,
      "cd '/srv/my dir' && export SGLANG_ENABLE_SPEC_V2=1 NOTE='a b' && python -m sglang.launch_server"
    )
  })

  it("rejects environment names a shell cannot export", () => {
    assert.throws(() => RemoteCommand.render(RemoteCommand.make(["true"], { env: { "A-B": "x" } })))
  })

  it("env values and cwd arrive intact through a real shell", () => {
    const dir = "/tmp"
    const line = RemoteCommand.render(
      RemoteCommand.make(["sh", "-c", 'printf "%s|%s" "$V" "$PWD"'], {
        cwd: dir,
        env: { V: "it's $x `y`\n" }
      })
    )
    const out = spawnSync("sh", ["-c", line], { encoding: "utf8" })
    assert.strictEqual(out.stdout, "it's $x `y`\n|/tmp")
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
