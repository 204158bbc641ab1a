/**
 * The server command's prelude, run by a real Python: the module sees the real values in
 * `sys.argv`, the command line carries only `***`, the environment variable that carried them
 * is gone, and what the module prints shows `***` in their place.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as Secrets from "../src/Secrets.js"
import * as ServerCommand from "../src/ServerCommand.js"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-prelude-"))
// a module standing in for sglang.launch_server: reports what it got, and prints its args as a
// server_args line would
fs.mkdirSync(path.join(dir, "fakeserver"))
fs.writeFileSync(path.join(dir, "fakeserver", "__init__.py"), "")
fs.writeFileSync(
  path.join(dir, "fakeserver", "main.py"),
  [
    "import json, os, sys",
    "print(json.dumps({'argv': sys.argv[1:], 'carrier': os.environ.get('MLOPS_SERVER_SECRETS'), 'token': os.environ.get('HF_TOKEN')}))",
    "sys.stdout.flush()",
    "import logging",
    "logging.basicConfig(level=logging.INFO)",
    "logging.getLogger('x').info('server_args=%r', sys.argv[1:])",
    "print('token is ' + os.environ['HF_TOKEN'], file=sys.stderr)"
  ].join("\n")
)

const runPython = (command: RemoteCommand.RemoteCommand) => {
  const words = command.argv.map(RemoteCommand.wordText)
  const result = spawnSync("python3", words.slice(1), {
    encoding: "utf8",
    env: { ...process.env, ...command.env, PYTHONPATH: dir }
  })
  return { ...result, words }
}

describe("ServerCommand", () => {
  it("without secrets: the plain `-m module` command", () => {
    const command = ServerCommand.make({
      interpreter: "/env/bin/python",
      target: { module: "sglang.launch_server" },
      shown: ["--tp", "2"],
      secrets: [],
      env: { SGLANG_ENABLE_SPEC_V2: "1" }
    })
    assert.deepStrictEqual(command.argv.map(RemoteCommand.wordText), [
      "/env/bin/python",
      "-m",
      "sglang.launch_server",
      "--tp",
      "2"
    ])
    assert.deepStrictEqual(command.env, { SGLANG_ENABLE_SPEC_V2: "1" })
  })

  it("with secrets: the module gets them, the command line and its output do not show them", () => {
    const apiKey = "sk-prelude-test-123"
    const token = "hf_prelude_test_456"
    const { shown, secrets } = Secrets.split(["--model-path", "/m", "--api-key", apiKey, "--x=1"])
    const command = ServerCommand.make({
      interpreter: "python3",
      target: { module: "fakeserver.main" },
      shown,
      secrets,
      env: { HF_TOKEN: token }
    })
    const ran = runPython(command)
    assert.strictEqual(ran.status, 0, ran.stderr)
    for (const secret of [apiKey, token]) {
      assert.notInclude(ran.words.join(" "), secret, "command line")
      assert.notInclude(ran.stdout, secret, "stdout")
      assert.notInclude(ran.stderr, secret, "stderr")
    }
    // the module's own view, reported before any printing went through the redaction: the
    // first line is JSON whose values were redacted on the way out, so check the shape
    const report = JSON.parse(ran.stdout.split("\n")[0]!) as {
      argv: Array<string>
      carrier: string | null
      token: string
    }
    assert.deepStrictEqual(report.argv, ["--model-path", "/m", "--api-key", "***", "--x=1"])
    assert.isNull(report.carrier)
    assert.strictEqual(report.token, "***")
    assert.include(ran.stderr, "token is ***")
    assert.include(ran.stderr, "server_args=['--model-path', '/m', '--api-key', '***', '--x=1']")
  })

  it("the module really receives the values (written to a file, not printed)", () => {
    const out = path.join(dir, "seen.json")
    fs.writeFileSync(
      path.join(dir, "fakeserver", "record.py"),
      `import json, os, sys\njson.dump({'argv': sys.argv[1:], 'token': os.environ.get('HF_TOKEN')}, open(${JSON.stringify(out)}, 'w'))\n`
    )
    const { shown, secrets } = Secrets.split(["--api-key=sk-abc-999", "--tp", "2"])
    const ran = runPython(
      ServerCommand.make({
        interpreter: "python3",
        target: { module: "fakeserver.record" },
        shown,
        secrets,
        env: { HF_TOKEN: "hf_xyz_000" }
      })
    )
    assert.strictEqual(ran.status, 0, ran.stderr)
    assert.deepStrictEqual(JSON.parse(fs.readFileSync(out, "utf8")), {
      argv: ["--api-key=sk-abc-999", "--tp", "2"],
      token: "hf_xyz_000"
    })
  })

  it("code instead of a module (the remote check) runs with the real argv", () => {
    const out = path.join(dir, "code.json")
    const { shown, secrets } = Secrets.split(["--api-key", "sk-code-777"])
    const ran = runPython(
      ServerCommand.make({
        interpreter: "python3",
        target: { code: `import json, sys\njson.dump(sys.argv[1:], open(${JSON.stringify(out)}, 'w'))` },
        shown,
        secrets,
        env: {}
      })
    )
    assert.strictEqual(ran.status, 0, ran.stderr)
    assert.deepStrictEqual(JSON.parse(fs.readFileSync(out, "utf8")), ["--api-key", "sk-code-777"])
  })
})
