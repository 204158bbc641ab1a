import { assert, describe, it } from "@effect/vitest"
import * as ArgvErrors from "@mlops/serve/ArgvErrors"
import { OOM } from "@mlops/serve/Failures"
import * as RenderFailure from "../../src/render/failure.js"

const plain = { live: false, color: false }
const oom = new OOM({
  evidence: [{ line: 12, text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB." }],
  process: "TP1",
  phase: "kv-cache",
  reason: "CUDA out of memory",
  kind: "cuda-alloc",
  fix: { flags: { "--mem-fraction-static": 0.85 } }
})

describe("render/failure", () => {
  it("the fixed command applies a list-valued flag's fix as one word per value, replacing every spelling", () => {
    const failure = new OOM({
      evidence: [],
      process: "TP0",
      phase: "cuda-graph",
      reason: "CUDA out of memory",
      kind: "cuda-graph",
      fix: { flags: { "--cuda-graph-bs": "1 2 4" }, removeFlags: ["--disable-radix-cache"] }
    })
    const argv = ["--model-path", "/m", "--cuda-graph-bs", "8", "16", "--disable-radix", "--tp", "2"]
    const v = RenderFailure.view(failure, { host: "h", argv })
    assert.deepStrictEqual(v.fixedArgv, ["--model-path", "/m", "--tp", "2", "--cuda-graph-bs", "1", "2", "4"])
    assert.strictEqual(
      v.fixedCommand,
      "mlops launch --host h -- --model-path /m --tp 2 --cuda-graph-bs 1 2 4"
    )
  })

  it("the fixed command is ready to paste: shell-quoted, after `--`", () => {
    const line = RenderFailure.commandLine(
      ["launch", "--host", "ct 129"],
      ["--model-path", "/models/my model", "--served-model-name", "a'b"]
    )
    assert.strictEqual(
      line,
      `mlops launch --host 'ct 129' -- --model-path '/models/my model' --served-model-name 'a'\\''b'`
    )
  })

  it("a classified failure: headline, evidence with line numbers, fix and fixed command; no ANSI without colour", () => {
    const text = RenderFailure.human(plain, oom, {
      host: "sim",
      argv: ["--model-path", "/m", "--mem-fraction-static", "0.99"]
    })
    assert.include(text, "[OOM]")
    assert.include(text, "   12 | torch.OutOfMemoryError")
    assert.include(text, "fix: use --mem-fraction-static 0.85")
    assert.include(text, "mlops launch --host sim -- --model-path /m --mem-fraction-static 0.85")
    assert.notInclude(text, "\x1b[")
    assert.include(RenderFailure.human({ live: true, color: true }, oom), "\x1b[31m")
  })

  it("a verdict from the exception's structure says so, in text and JSON; a signature's does not", () => {
    const guessed = new OOM({ ...oom, basis: "fallback" })
    const text = RenderFailure.human(plain, guessed)
    assert.include(text, "no known wording: classed from the exception's type, words and module")
    assert.strictEqual(RenderFailure.json(guessed).basis, "fallback")
    assert.notInclude(RenderFailure.human(plain, oom), "no known wording")
  })

  it("JSON keeps _tag, the failure's fields and the fixed command", () => {
    const json = RenderFailure.json(oom, { host: "sim", argv: ["--model-path", "/m"] })
    assert.strictEqual(json._tag, "OOM")
    assert.strictEqual(json.process, "TP1")
    assert.deepStrictEqual(json.fix, { flags: { "--mem-fraction-static": 0.85 } })
    assert.deepStrictEqual(json.fixedArgv, ["--model-path", "/m", "--mem-fraction-static", "0.85"])
    assert.isString(json.message)
  })

  it("an unknown flag checked with another release's flags (the host's could not be read): human and JSON say why that release", () => {
    const unknown = ArgvErrors.noted(
      new ArgvErrors.UnknownFlag({
        flag: "--not-a-flag",
        suggestions: [],
        engine: "SGLang",
        version: "0.5.15",
        helpCommand: "python -m sglang.launch_server --help"
      }),
      "could not read the flags of SGLang 0.5.21 from gpu (No module named 'torch'); checking them against the nearest shipped release 0.5.15 instead"
    )
    const text = RenderFailure.human(plain, unknown, { host: "gpu", argv: ["--not-a-flag"] })
    assert.include(text, "unknown flag --not-a-flag for SGLang 0.5.15")
    assert.include(text, "could not read the flags of SGLang 0.5.21 from gpu")
    const json = RenderFailure.json(unknown, { host: "gpu", argv: ["--not-a-flag"] })
    assert.include(String(json.note), "nearest shipped release 0.5.15")
    assert.include(String(json.message), "SGLang 0.5.21")
  })
})
