/**
 * The version commands: `mlops flags`, `mlops check --version`, the upgrade check
 * (`check --target-version`), offline (no host needed).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ExitCode } from "../src/ExitCodes.js"
import { mlops, mlopsWith, story, storyFixes } from "./support/run.js"

const lastJson = (lines: ReadonlyArray<string>) =>
  JSON.parse(lines.filter((l) => l.trim() !== "").at(-1)!) as Record<string, unknown>

describe("mlops flags", () => {
  it.live("QUERY: the matching flags with type, default and the releases that have them", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("flags", "tensor-parallel")
      assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
      assert.include(ran.text, "SGLang 0.5.11")
      assert.include(ran.text, "--tp-size (also --tensor-parallel-size)")
      assert.include(ran.text, "releases: 0.4.0–main-2026-07-20")
    })
  )

  it.live("--version V lists that release's flags; a flag of other releases is named with them", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("flags", "--version", "0.4.3", "flashinfer-mla", "--json")
      assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
      const out = lastJson(ran.stdout)
      assert.strictEqual(out.version, "0.4.3")
      const flags = out.flags as ReadonlyArray<{ flag: string; releases: ReadonlyArray<string> }>
      assert.deepStrictEqual(
        flags.map((f) => f.flag),
        ["--enable-flashinfer-mla"]
      )
      assert.include(flags[0]!.releases, "0.4.7")
      const later = yield* mlops("flags", "--version", "0.5.11", "flashinfer-mla")
      assert.include(later.text, "not in 0.5.11, in other releases:")
      assert.include(later.text, "--enable-flashinfer-mla  0.4.3–0.4.7")
    })
  )

  it.live("--releases lists the 29 shipped releases with their commits", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("flags", "--releases", "--json")
      const releases = lastJson(ran.stdout).releases as ReadonlyArray<{ version: string }>
      assert.strictEqual(releases.length, 29)
      assert.strictEqual(releases[0]!.version, "0.4.0")
      assert.strictEqual(releases.at(-1)!.version, "main-2026-07-20")
    })
  )
})

describe("mlops flags --engine vllm", () => {
  it.live("--version V: that snapshot's flags; a version no snapshot is near says which stands in", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("flags", "--engine", "vllm", "--version", "0.13.0", "max-model-len", "--json")
      assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
      const out = lastJson(ran.stdout)
      assert.strictEqual(out.engine, "vllm")
      assert.strictEqual(out.source, "shipped")
      assert.deepStrictEqual(
        (out.flags as ReadonlyArray<{ flag: string }>).map((f) => f.flag),
        ["--max-model-len"]
      )
      const later = yield* mlops("flags", "--engine", "vllm", "--version", "0.31.0", "speculative")
      assert.strictEqual(later.code, ExitCode.Ok, later.text)
      assert.include(later.text, "vLLM 0.31.0")
      assert.include(later.text, "mlops ships no vLLM flags for 0.31.0; using main-2026-05-19 (near 0.21)")
      assert.include(later.text, "--speculative-config")
    })
  )

  it.live(
    "check --engine vllm --target-version: a flag the target removed, named; exit 2 with its refusal",
    () =>
      Effect.gen(function* () {
        const ran = yield* mlops(
          "check",
          "--engine",
          "vllm",
          "--version",
          "0.13.0",
          "--target-version",
          "0.21.0",
          "--",
          "/models/q",
          "--swap-space",
          "4"
        )
        assert.strictEqual(ran.code, ExitCode.Usage, ran.text)
        assert.include(ran.text, "vLLM 0.13.0 → 0.21.0")
        assert.include(ran.text, "--swap-space was removed: vLLM 0.21.0 has no such flag")
        assert.include(ran.text, "unknown flag --swap-space for vLLM 0.21.0")
      })
  )

  it.live("--releases lists the shipped snapshots", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("flags", "--engine", "vllm", "--releases", "--json")
      const snapshots = lastJson(ran.stdout).snapshots as ReadonlyArray<{ name: string; near: string }>
      assert.deepStrictEqual(
        snapshots.map((s) => s.near),
        ["0.11", "0.13", "0.21"]
      )
    })
  )
})

describe("mlops check --version", () => {
  it.live("types the flags by that release: a later flag is an UnknownFlag naming the version", () =>
    Effect.gen(function* () {
      const ran = yield* mlops(
        "check",
        "--version",
        "0.5.4",
        "--json",
        "--",
        "--model-path",
        "/m",
        "--mamba-track-interval",
        "128"
      )
      assert.strictEqual(ran.code, ExitCode.Usage)
      const out = lastJson(ran.stdout)
      assert.strictEqual(out._tag, "UnknownFlag")
      assert.strictEqual(out.version, "0.5.4")
    })
  )

  it.live("an unshipped version: the nearest release stands in, only the flags are checked, both said", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("check", "--version", "0.5.12", "--", "--model-path", "/m", "--tp", "2")
      assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
      assert.include(ran.text, "SGLang 0.5.12 accepts these flags (flags only)")
      assert.include(ran.text, "nearest shipped release 0.5.11")
      assert.include(ran.text, "has not verified its launch rules for SGLang 0.5.12")
    })
  )

  it.live("mlops' own --version still prints mlops' version", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("--version")
      assert.strictEqual(ran.code, ExitCode.Ok)
      assert.include(ran.text, "0.1.0")
    })
  )
})

describe("mlops check --target-version", () => {
  it.live("names the removed flag with its releases and exits with the target's refusal", () =>
    Effect.gen(function* () {
      const ran = yield* mlops(
        "check",
        "--version",
        "0.4.3",
        "--target-version",
        "0.5.15",
        "--",
        "--model-path",
        "/m",
        "--enable-flashinfer-mla",
        "--cuda-graph-bs",
        "1",
        "2"
      )
      assert.strictEqual(ran.code, ExitCode.Usage, ran.text)
      assert.include(ran.text, "SGLang 0.4.3 → 0.5.15")
      assert.include(ran.text, "--enable-flashinfer-mla was removed: accepted by 0.4.3–0.4.7, not 0.5.15")
      assert.include(ran.text, "--cuda-graph-bs is deprecated in 0.5.15: use --cuda-graph-bs-decode")
      assert.include(ran.text, "would refuse this command")
    })
  )

  it.live("--json: the report, exit 0 when the target accepts the command", () =>
    Effect.gen(function* () {
      const ran = yield* mlops(
        "check",
        "--version",
        "0.5.13",
        "--target-version",
        "0.5.14",
        "--json",
        "--",
        "--model-path",
        "/m",
        "--cuda-graph-bs",
        "1",
        "2"
      )
      assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
      const out = lastJson(ran.stdout)
      assert.strictEqual(out._tag, "UpgradeChecked")
      assert.strictEqual((out.target as { _tag: string })._tag, "Accepted")
      assert.strictEqual((out.flags as ReadonlyArray<{ kind: string }>)[0]!.kind, "deprecated")
    })
  )
})

describe("mlops launch options", () => {
  it.live("--remote-check with --no-remote-check is a usage error", () =>
    Effect.gen(function* () {
      const ran = yield* mlops(
        "launch",
        "--host",
        "sim",
        "--remote-check",
        "--no-remote-check",
        "--",
        "--model-path",
        "/m"
      )
      assert.strictEqual(ran.code, ExitCode.Usage)
      assert.include(ran.text, "not both")
    })
  )
})

describe("the sim with another release (MLOPS_SIM_SGLANG_VERSION)", () => {
  const on = (version: string, ...args: ReadonlyArray<string>) =>
    mlopsWith({ env: { MLOPS_SIM_SGLANG_VERSION: version } }, ...args)

  it.live("the upgrade check from the sim's release, end to end", () =>
    Effect.gen(function* () {
      const ran = yield* on(
        "0.5.13",
        "check",
        "--host",
        "sim",
        "--target-version",
        "0.5.15",
        "--",
        ...story,
        ...storyFixes
      )
      assert.strictEqual(ran.code, ExitCode.Ok, ran.text)
      assert.include(ran.text, "SGLang 0.5.13 → 0.5.15")
      assert.include(
        ran.text,
        "--mamba-scheduler-strategy is deprecated in 0.5.15: use --mamba-radix-cache-strategy"
      )
      const flags = yield* on("0.5.4", "flags", "--host", "sim", "mamba-track-interval")
      assert.include(flags.text, "SGLang 0.5.4: 0 of 273 flags")
      assert.include(flags.text, "--mamba-track-interval  0.5.7–main-2026-07-20")
    })
  )

  it.live("a release mlops does not ship cannot be installed on the sim", () =>
    Effect.gen(function* () {
      const ran = yield* on("0.6.0", "check", "--host", "sim", "--", ...story)
      assert.strictEqual(ran.code, ExitCode.Connection)
      assert.include(ran.text, "MLOPS_SIM_SGLANG_VERSION")
      assert.include(ran.text, "cannot run SGLang 0.6.0")
    })
  )
})
