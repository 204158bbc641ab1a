// `--help` and `mlops completion` as a user meets them: the real executable, output piped (not
// a TTY), with and without NO_COLOR.
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { command, version } from "../src/Cli.js"
import { ExitCode } from "../src/ExitCodes.js"
import { helpFor } from "../src/render/help.js"

const bin = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "bin", "mlops")

const mlops = (env: Record<string, string>, ...args: Array<string>) => {
  const { NO_COLOR: _, ...rest } = process.env
  const out = spawnSync(bin, args, { encoding: "utf8", env: { ...rest, ...env }, timeout: 60_000 })
  return { code: out.status, stdout: out.stdout, stderr: out.stderr }
}

const helps = [["--help"], ["launch", "--help"], ["check", "-h"], ["logs", "--help"], ["status", "--help"]]

describe("help", () => {
  it("piped, with or without NO_COLOR: no escape sequences in any help", () => {
    for (const env of [{}, { NO_COLOR: "1" }])
      for (const args of helps) {
        const out = mlops(env, ...args)
        assert.strictEqual(out.code, 0, `${args.join(" ")}: ${out.stderr}`)
        assert.isFalse(out.stdout.includes("\x1b"), `${args.join(" ")} ${JSON.stringify(env)}: ${out.stdout}`)
        assert.isTrue(out.stdout.length > 100)
      }
  })

  it("usage lines start with mlops; launch (one host or several) and check end with -- <engine flags>, others do not", () => {
    const usage = (sub: string) => mlops({}, sub, "--help").stdout.split("\n")[1]!.trim()
    assert.match(
      usage("launch"),
      /^mlops launch (?:\[--engine sglang \| vllm\] )?\[--host text\] \[--hosts text\] .* -- <engine flags>$/
    )
    assert.match(usage("check"), /^mlops check .* -- <engine flags>$/)
    assert.match(usage("logs"), /^mlops logs --host text --name text/)
    assert.notInclude(usage("logs"), "<engine flags>")
  })

  it("only options that do something: no --wizard, --log-level or --completions; --env optional; defaults shown", () => {
    for (const args of helps) {
      const text = mlops({}, ...args).stdout
      for (const builtIn of ["--wizard", "--log-level", "--completions", "A user-defined piece of text"])
        assert.notInclude(text, builtIn, args.join(" "))
    }
    const launch = mlops({}, "launch", "--help").stdout
    assert.include(launch, "[--env text]...")
    assert.notMatch(launch, /\] --env text/)
    assert.include(mlops({}, "logs", "--help").stdout, "(default 100)")
    // the overview lists every subcommand with its summary
    const overview = mlops({}, "--help").stdout
    for (const sub of ["launch", "check", "flags", "diagnose", "status", "logs", "stop", "hosts"])
      assert.match(overview, new RegExp(`^  ${sub} +\\S`, "m"))
  })

  it("colour only when the terminal takes it: bold headers with colour, plain text without", () => {
    const words = ["launch", "--help"]
    assert.include(
      helpFor(command, { version, description: "d" }, words, { live: true, color: true }),
      "\x1b[1m"
    )
    assert.notInclude(
      helpFor(command, { version, description: "d" }, words, { live: true, color: false }),
      "\x1b"
    )
  })

  it("completion bash|zsh|fish prints a script the shell accepts; no shell is a usage error", () => {
    const bash = mlops({}, "completion", "bash")
    assert.strictEqual(bash.code, 0)
    assert.include(bash.stdout, "complete -F")
    const syntax = spawnSync("bash", ["-n"], { input: bash.stdout, encoding: "utf8" })
    assert.strictEqual(syntax.status, 0, syntax.stderr)
    for (const shell of ["zsh", "fish"]) {
      const out = mlops({}, "completion", shell)
      assert.strictEqual(out.code, 0)
      assert.include(out.stdout, "launch")
    }
    const none = mlops({}, "completion")
    assert.strictEqual(none.code, ExitCode.Usage)
    assert.include(none.stderr, "bash, zsh or fish")
  })
})
