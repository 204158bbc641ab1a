// The installed entry point: `bin/mlops` (bash) builds the bundle when it is missing or stale
// and runs it with plain node. These run the real executable as a subprocess.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ExitCode } from "../src/ExitCodes.js"
import { story } from "./support/run.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const bin = path.join(here, "..", "bin", "mlops")
const config = path.join(here, "fixtures", "qwen3.6-27b.config.json")
const home = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-bin-test-"))
// an empty ssh_config: a MLOPS_SSH_CONFIG that names a missing file is an error
const sshConfig = path.join(home, "ssh_config")
fs.writeFileSync(sshConfig, "")

const mlopsWithInput = (input: string | undefined, ...args: Array<string>) => {
  const out = spawnSync(bin, args, {
    encoding: "utf8",
    ...(input === undefined ? {} : { input }),
    env: { ...process.env, MLOPS_HOME: home, MLOPS_SSH_CONFIG: sshConfig, NO_COLOR: "1" },
    timeout: 60_000
  })
  return { code: out.status, stdout: out.stdout, stderr: out.stderr }
}

const mlops = (...args: Array<string>) => mlopsWithInput(undefined, ...args)

const gpus = ["--gpus", "2", "--compute-capability", "8.6", "--gpu-memory", "48GiB"]

describe("bin/mlops", () => {
  it("diagnose - reads the log from standard input", () => {
    const log = [
      "Traceback (most recent call last):",
      '  File "/usr/lib/python3/dist-packages/vllm/entrypoints/openai/api_server.py", line 9, in <module>',
      "OSError: [Errno 98] Address already in use"
    ].join("\n")
    const ran = mlopsWithInput(log, "diagnose", "--json", "-")
    assert.strictEqual(ran.code, ExitCode.Preflight, ran.stderr)
    const result = JSON.parse(ran.stdout.trim()) as { source: string; failure: { _tag: string } }
    assert.deepStrictEqual([result.source, result.failure._tag], ["stdin", "PortInUse"])
  })

  it("checks the story offline: exit 3, both problems in SGLang's order, the fixed command", () => {
    const ran = mlops("check", "--model-config", config, ...gpus, "--json", "--", ...story)
    assert.strictEqual(ran.code, ExitCode.RulesViolated, ran.stderr)
    const result = JSON.parse(ran.stdout.trim().split("\n").at(-1)!) as {
      _tag: string
      violations: Array<{ ruleId: string }>
      fixedCommand: string
    }
    assert.strictEqual(result._tag, "LaunchRulesViolated")
    assert.deepStrictEqual(
      result.violations.map((v) => v.ruleId),
      ["R24", "R12"]
    )
    assert.include(result.fixedCommand, "--mamba-scheduler-strategy extra_buffer")
    assert.include(result.fixedCommand, "--speculative-num-steps 1 --speculative-eagle-topk 1")
  })

  it("keeps V8's code cache private in XDG_CACHE_HOME, one per subcommand, reuses it, and writes none with MLOPS_CODE_CACHE=0", () => {
    const cacheHome = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-code-cache-"))
    const run = (extra: Record<string, string>, args: ReadonlyArray<string> = ["hosts", "--json"]) =>
      spawnSync(bin, args, {
        encoding: "utf8",
        env: {
          ...process.env,
          MLOPS_HOME: home,
          MLOPS_SSH_CONFIG: sshConfig,
          XDG_CACHE_HOME: cacheHome,
          ...extra
        },
        timeout: 60_000
      })
    const dir = path.join(cacheHome, "mlops")
    const off = run({ MLOPS_CODE_CACHE: "0" })
    assert.strictEqual(off.status, ExitCode.Ok, off.stderr)
    assert.isFalse(fs.existsSync(dir), "no cache with MLOPS_CODE_CACHE=0")
    const first = run({})
    assert.strictEqual(first.status, ExitCode.Ok, first.stderr)
    const files = fs.readdirSync(dir)
    assert.strictEqual(files.length, 1, files.join(", "))
    assert.strictEqual(fs.statSync(dir).mode & 0o777, 0o700)
    const cache = path.join(dir, files[0]!)
    assert.strictEqual(fs.statSync(cache).mode & 0o777, 0o600)
    const written = fs.statSync(cache).mtimeMs
    // a valid cache is read, not rewritten; the output is the same
    const second = run({})
    assert.strictEqual(second.stdout, first.stdout)
    assert.strictEqual(fs.statSync(cache).mtimeMs, written)
    // a damaged cache is rejected by V8 and replaced
    fs.writeFileSync(cache, "not a code cache")
    const third = run({})
    assert.strictEqual(third.stdout, first.stdout)
    assert.isAbove(fs.statSync(cache).size, 1000)
    // another subcommand compiles other code: it keeps a cache of its own beside it
    assert.strictEqual(run({}, ["--help"]).status, ExitCode.Ok)
    assert.strictEqual(fs.readdirSync(dir).length, 2, fs.readdirSync(dir).join(", "))
    assert.isTrue(fs.existsSync(cache))
    fs.rmSync(cacheHome, { recursive: true, force: true })
  })

  it("rebuilds a stale bundle before running (a source newer than the bundle)", () => {
    const bundle = path.join(here, "..", "dist", "mlops.cjs")
    mlops("hosts")
    const past = new Date(Date.now() - 3_600_000)
    fs.utimesSync(bundle, past, past)
    const ran = mlops("hosts", "--json")
    assert.strictEqual(ran.code, ExitCode.Ok, ran.stderr)
    assert.isAbove(fs.statSync(bundle).mtimeMs, past.getTime() + 1000)
    const hosts = JSON.parse(ran.stdout) as { hosts: Array<{ alias: string }> }
    assert.deepStrictEqual(
      hosts.hosts.map((h) => h.alias),
      ["sim"]
    )
  })
})
