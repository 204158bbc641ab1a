/**
 * The real `mlops` command tree against the built-in simulated host `sim` (live clock: the
 * simulated launch takes a few seconds), with a captured console.
 */

import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ExitCode } from "../src/ExitCodes.js"
import { mlops, story, storyFixes } from "./support/run.js"

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures")
const modelConfig = path.join(fixtures, "qwen3.6-27b.config.json")
const a6000 = ["--gpus", "2", "--compute-capability", "8.6", "--gpu-memory", "48GiB"]

const parseLines = (lines: ReadonlyArray<string>) =>
  lines.filter((line) => line.trim() !== "").map((line) => JSON.parse(line) as Record<string, unknown>)

describe("mlops launch", () => {
  it.live("the story's command: both problems, the fixed command, exit code 3", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("launch", "--host", "sim", "--", ...story)
      assert.strictEqual(ran.code, ExitCode.RulesViolated)
      const out = ran.text
      assert.include(out, "2 problems")
      assert.include(out, "not compatible with radix cache") // the mamba ValueError (R24)
      assert.include(out, "bare AssertionError") // the speculative assertion (R12)
      const fixedLine = out.split("\n").find((line) => line.trim().startsWith("mlops launch --host sim --"))
      assert.isDefined(fixedLine)
      for (const word of storyFixes) assert.include(fixedLine!, word)
      assert.include(fixedLine!, "--model-path /root/models/Qwen3.6-27B")
    })
  )

  it.live("the fixed command reaches ready", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("launch", "--host", "sim", "--", ...story, ...storyFixes)
      assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
      assert.include(ran.text, "is ready")
      assert.include(ran.text, "max_running_requests 48")
      assert.include(ran.text, "steps/topk/draft 1/1/2")
    })
  )

  it.live("--json: NDJSON events with _tag, the last one the result", () =>
    Effect.gen(function* () {
      const ok = yield* mlops("launch", "--host", "sim", "--json", "--", ...story, ...storyFixes)
      assert.strictEqual(ok.code, ExitCode.Ok, ok.text)
      const events = parseLines(ok.stdout)
      assert.isAbove(events.length, 3)
      for (const event of events) assert.isString(event._tag)
      assert.strictEqual(events[0]!._tag, "Connected")
      assert.strictEqual(events[events.length - 1]!._tag, "Launched")

      const bad = yield* mlops("launch", "--host", "sim", "--json", "--", ...story)
      assert.strictEqual(bad.code, ExitCode.RulesViolated)
      const lines = parseLines(bad.stdout)
      const result = lines[lines.length - 1]!
      assert.strictEqual(result._tag, "LaunchRulesViolated")
      assert.isArray(result.violations)
      assert.strictEqual((result.violations as Array<unknown>).length, 2)
      assert.include(String(result.fixedCommand), "--mamba-scheduler-strategy extra_buffer")
    })
  )

  it.live(
    "--engine vllm on sim: vLLM is found in its own environment (the host's setting has SGLang only); ready under its --served-model-name",
    () =>
      Effect.gen(function* () {
        const launch = ["launch", "--host", "sim", "--engine", "vllm", "--name", "vllm-found", "--json"]
        const serve = [
          "/root/models/Qwen3.6-27B",
          "-tp",
          "2",
          "--max-model-len",
          "32768",
          "--served-model-name",
          "qwen"
        ]
        const ran = yield* mlops(...launch, "--", ...serve)
        assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
        const events = parseLines(ran.stdout)
        const python = events.find((e) => e._tag === "Python")?.python as Record<string, unknown> | undefined
        assert.strictEqual(python?.source, "discovered")
        assert.strictEqual(python?.setting, "~/vllm-env")
        assert.strictEqual(python?.engine, "vllm")
        assert.strictEqual(events[events.length - 1]!._tag, "Launched")
      })
  )

  it.live("an unknown host is a connection-class failure (exit 6) naming the known hosts", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("launch", "--host", "nope", "--json", "--", ...story)
      assert.strictEqual(ran.code, ExitCode.Connection)
      const result = parseLines(ran.stdout).at(-1)!
      assert.strictEqual(result._tag, "HostNotFound")
      assert.include(JSON.stringify(result.known), "lab-box")
    })
  )

  it.live("SGLang flags before `--` are an mlops usage error (exit 2)", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("launch", "--host", "sim", "--model-path", "/root/models/Qwen3.6-27B")
      assert.strictEqual(ran.code, ExitCode.Usage)
    })
  )
})

describe("`--` passthrough", () => {
  it.live("words after `--` reach SGLang's parser untouched, even mlops' own option names", () =>
    Effect.gen(function* () {
      // `--json` after `--` is an SGLang flag (unknown to SGLang), not mlops' --json
      const ran = yield* mlops("check", "--model-config", modelConfig, "--", "--model-path", "/m", "--json")
      assert.strictEqual(ran.code, ExitCode.Usage)
      assert.include(ran.text, "--json")
      assert.notInclude(ran.stdout.join("\n"), "{")

      // `=` forms, aliases and values with spaces, quotes and `$` arrive as written
      const ok = yield* mlops(
        "check",
        "--model-config",
        modelConfig,
        ...a6000,
        "--json",
        "--",
        "--model-path",
        "/m",
        "--tensor-parallel-size=2",
        "--served-model-name",
        "my model $HOME 'q'"
      )
      assert.strictEqual(ok.code, ExitCode.Ok, ok.text)
      const result = parseLines(ok.stdout)[0]!
      const effective = result.effective as Record<string, unknown>
      assert.strictEqual(effective.tp_size, 2)
      assert.strictEqual(effective.served_model_name, "my model $HOME 'q'")

      // `--help` after `--` is SGLang's word: mlops prints no help of its own
      const help = yield* mlops("check", "--model-config", modelConfig, "--", "--model-path", "/m", "--help")
      assert.notInclude(help.text, "USAGE")
      assert.notStrictEqual(help.code, ExitCode.Ok)
    })
  )
})

describe("mlops check --model-config (offline)", () => {
  it.live("the story on 2× A6000: both violations and the fix; the fixed flags resolve", () =>
    Effect.gen(function* () {
      const bad = yield* mlops("check", "--model-config", modelConfig, ...a6000, "--", ...story)
      assert.strictEqual(bad.code, ExitCode.RulesViolated)
      assert.include(bad.text, "[R24]")
      assert.include(bad.text, "[R12]")
      assert.include(
        bad.text,
        `mlops check --model-config ${modelConfig} --gpus 2 --compute-capability 8.6 --gpu-memory 48GiB --`
      )

      const good = yield* mlops(
        "check",
        "--model-config",
        modelConfig,
        ...a6000,
        "--json",
        "--",
        ...story,
        ...storyFixes
      )
      assert.strictEqual(good.code, ExitCode.Ok, good.text)
      const effective = parseLines(good.stdout)[0]!.effective as Record<string, unknown>
      assert.strictEqual(effective.speculative_algorithm, "EAGLE")
      assert.strictEqual(effective.speculative_num_draft_tokens, 2)
      assert.strictEqual(effective.max_running_requests, 48)
    })
  )

  it.live("--host and --model-config together is a usage error", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("check", "--host", "sim", "--model-config", modelConfig, "--", ...story)
      assert.strictEqual(ran.code, ExitCode.Usage)
    })
  )
})

describe("mlops diagnose", () => {
  it.live("a fixture OOM log: the failure, its evidence and fix; exit code of its class", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("diagnose", path.join(fixtures, "oom-tp1.log"))
      assert.strictEqual(ran.code, ExitCode.LaunchFailed)
      assert.include(ran.text, "[OOM]")
      assert.include(ran.text, "CUDA out of memory")
      assert.include(ran.text, "--mem-fraction-static")

      const json = yield* mlops("diagnose", "--json", path.join(fixtures, "oom-tp1.log"))
      const diagnosis = parseLines(json.stdout)[0]!
      assert.strictEqual(diagnosis._tag, "Diagnosis")
      assert.strictEqual(diagnosis.engine, "sglang")
      assert.strictEqual((diagnosis.failure as Record<string, unknown>)._tag, "OOM")
    })
  )

  it.live(
    "a missing file or a directory is a usage error naming the path (exit 2), never a raw SystemError",
    () =>
      Effect.gen(function* () {
        const missing = path.join(fixtures, "no-such.log")
        const ran = yield* mlops("diagnose", missing)
        assert.strictEqual(ran.code, ExitCode.Usage)
        assert.include(ran.text, "[LogUnreadable]")
        assert.include(ran.text, missing)
        assert.include(ran.text, "no such file")
        assert.notInclude(ran.text, "SystemError")

        const dir = yield* mlops("diagnose", "--json", fixtures)
        assert.strictEqual(dir.code, ExitCode.Usage)
        const error = parseLines(dir.stdout)[0]!
        assert.deepStrictEqual([error._tag, error.path], ["LogUnreadable", fixtures])
      })
  )

  it.live("an empty or binary file is not a log: its own result and exit code 9", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-diagnose-"))
      const empty = path.join(dir, "empty.log")
      const blank = path.join(dir, "blank.log")
      const binary = path.join(dir, "core.gz")
      fs.writeFileSync(empty, "")
      fs.writeFileSync(blank, "\n  \n\n")
      fs.writeFileSync(binary, Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03]))
      for (const [file, reason] of [
        [empty, "empty"],
        [blank, "empty"],
        [binary, "binary"]
      ] as const) {
        const ran = yield* mlops("diagnose", "--json", file)
        assert.strictEqual(ran.code, ExitCode.NotALog, ran.text)
        const result = parseLines(ran.stdout)[0]!
        assert.deepStrictEqual([result._tag, result.reason, result.source], ["NotALog", reason, file])
      }
      const human = yield* mlops("diagnose", binary)
      assert.include(human.text, "is not a server log")
      fs.rmSync(dir, { recursive: true })
    })
  )

  it.live("names the engine and the version the log shows (a vLLM log)", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-diagnose-"))
      const file = path.join(dir, "vllm.log")
      fs.writeFileSync(
        file,
        [
          "INFO 08-31 15:52:52 api_server.py:440] vLLM API server version 0.5.5",
          "ERROR 08-31 15:53:10 engine.py:389] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
        ].join("\n")
      )
      const ran = yield* mlops("diagnose", "--json", file)
      const result = parseLines(ran.stdout)[0]!
      assert.deepStrictEqual([result.engine, result.version], ["vllm", "0.5.5"])
      assert.strictEqual((result.failure as Record<string, unknown>)._tag, "OOM")
      const human = yield* mlops("diagnose", file)
      assert.include(human.text, "vLLM 0.5.5 log")
      fs.rmSync(dir, { recursive: true })
    })
  )
})

describe("mlops hosts", () => {
  it.live("lists sim next to the ssh_config aliases", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("hosts", "--json")
      assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
      const aliases = (parseLines(ran.stdout)[0]!.hosts as Array<{ alias: string }>).map((h) => h.alias)
      assert.include(aliases, "sim")
      assert.include(aliases, "lab-box")

      const human = yield* mlops("hosts")
      assert.match(human.stdout.join("\n"), /^sim\s+root@sim\.local/m)
    })
  )
})

describe("mlops status / stop / logs", () => {
  it.live(
    "a fresh sim has no deployments; stopping or reading an unknown one is a usage error naming it",
    () =>
      Effect.gen(function* () {
        const status = yield* mlops("status", "--host", "sim", "--json")
        assert.strictEqual(status.code, ExitCode.Ok, status.text)
        const result = parseLines(status.stdout)[0]!
        assert.deepStrictEqual([result.deployments, result.unreachable], [[], []])

        const stop = yield* mlops("stop", "--host", "sim", "--name", "nope", "--json")
        assert.strictEqual(stop.code, ExitCode.Usage)
        assert.strictEqual(parseLines(stop.stdout)[0]!._tag, "DeploymentNotFound")

        const logs = yield* mlops("logs", "--host", "sim", "--name", "nope")
        assert.strictEqual(logs.code, ExitCode.Usage)
        assert.include(logs.text, "nope")
      })
  )
})

describe("mlops check --engine vllm", () => {
  it.live("offline: vLLM's refusals in vLLM's words, and a fixed command that repeats --engine vllm", () =>
    Effect.gen(function* () {
      const ran = yield* mlops(
        "check",
        "--engine",
        "vllm",
        "--model-config",
        modelConfig,
        ...a6000,
        "--",
        "/root/models/Qwen3.6-27B",
        "-tp",
        "3",
        "--max-model-len",
        "300000"
      )
      assert.strictEqual(ran.code, ExitCode.RulesViolated, ran.text)
      assert.include(
        ran.text,
        "ValueError: User-specified max_model_len (300000) is greater than the derived"
      )
      assert.include(ran.text, "please set tensor_parallel_size (3) to less than max local gpu count (2)")
      const fixed = ran.text.split("\n").find((line) => line.trim().startsWith("mlops check --engine vllm"))
      assert.isDefined(fixed, ran.text)
      assert.include(fixed!, "--max-model-len 262144")
      assert.include(fixed!, "--tensor-parallel-size 2")
      assert.notInclude(ran.text, "SGLang")
    })
  )

  it.live("against sim: the vLLM in ~/vllm-env is checked, and --json names the engine and its version", () =>
    Effect.gen(function* () {
      const ran = yield* mlops(
        "check",
        "--host",
        "sim",
        "--engine",
        "vllm",
        "--json",
        "--",
        "/root/models/Qwen3.6-27B",
        "-tp",
        "2",
        "--max-model-len",
        "32768"
      )
      assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
      const result = parseLines(ran.stdout).at(-1)!
      assert.strictEqual(result._tag, "Checked")
      assert.strictEqual(result.engine, "vllm")
      const python = result.python as Record<string, unknown>
      assert.strictEqual(python.setting, "~/vllm-env")
      assert.strictEqual(python.engineVersion, result.version)
      assert.strictEqual((result.effective as Record<string, unknown>).tensor_parallel_size, 2)
    })
  )

  it.live(
    "--target-version with --engine vllm is vLLM's upgrade check, from its newest snapshot by default",
    () =>
      Effect.gen(function* () {
        const ran = yield* mlops("check", "--engine", "vllm", "--target-version", "0.13.0", "--", "m")
        assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
        assert.include(ran.text, "vLLM 0.21 → 0.13.0")
        assert.include(ran.text, "vLLM 0.13.0 accepts this command")
      })
  )
})

describe("mlops launch's Slurm options", () => {
  it.live("a bad --time is a usage error (exit 2) that names --time and what it must be", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("launch", "--host", "sim", "--time", "1:2:3:4", "--", ...story, ...storyFixes)
      assert.strictEqual(ran.code, ExitCode.Usage, ran.text)
      assert.include(ran.text, '--time expects a Slurm time such as 30, 4:00:00 or 1-12:00:00, got "1:2:3:4"')
    })
  )

  it.live("a --nodes that is not a positive count is a usage error (exit 2) that names --nodes", () =>
    Effect.gen(function* () {
      for (const bad of ["two", "0"]) {
        const ran = yield* mlops("launch", "--host", "sim", "--nodes", bad, "--", ...story, ...storyFixes)
        assert.strictEqual(ran.code, ExitCode.Usage, ran.text)
        assert.include(ran.text, `--nodes expects a positive integer (the nodes the job spans), got "${bad}"`)
      }
    })
  )

  it.live(
    "--partition on a host without Slurm: SlurmUnavailable (exit 4) with its fix, and no server left",
    () =>
      Effect.gen(function* () {
        const launch = ["launch", "--host", "sim", "--name", "no-slurm", "--partition", "gpu", "--json"]
        const ran = yield* mlops(...launch, "--", ...story, ...storyFixes)
        assert.strictEqual(ran.code, ExitCode.Preflight, ran.text)
        const result = parseLines(ran.stdout).at(-1)!
        assert.strictEqual(result._tag, "SlurmUnavailable")
        assert.include(String(result.fix), "login node")
        assert.isUndefined(parseLines(ran.stdout).find((e) => e._tag === "Spawned"))
        const status = yield* mlops("status", "--host", "sim", "--json")
        const rows = JSON.stringify(parseLines(status.stdout))
        assert.notMatch(rows, /"name":"no-slurm"[^}]*"alive":true/)
      })
  )
})
