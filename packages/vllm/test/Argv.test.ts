import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Argv from "../src/Argv.js"
import * as Catalogue from "../src/Catalogue.js"

const decode = (argv: ReadonlyArray<string>, catalogue?: Catalogue.Catalogue) =>
  Effect.runSync(Argv.decode(argv, catalogue))
const refuse = (argv: ReadonlyArray<string>, catalogue?: Catalogue.Catalogue) =>
  Effect.runSync(Effect.flip(Argv.decode(argv, catalogue)))

describe("vllm serve argv", () => {
  it("takes the model as the positional, anywhere, or from --model", () => {
    assert.strictEqual(decode(["Qwen/Qwen3-8B", "-tp", "2"]).model, "Qwen/Qwen3-8B")
    assert.strictEqual(decode(["--port", "8001", "Qwen/Qwen3-8B"]).model, "Qwen/Qwen3-8B")
    assert.strictEqual(decode(["-tp", "2", "--model", "m/a"]).model, "m/a")
    assert.strictEqual(decode(["--model=m/b"]).model, "m/b")
    assert.strictEqual(decode(["m", "-tp", "2"]).values.tensor_parallel_size, 2)
  })

  it("accepts underscores as dashes in a flag's name, with = or a separate value", () => {
    const d = decode(["m", "--max_model_len", "4096", "--gpu_memory_utilization=0.8"])
    assert.strictEqual(d.values.max_model_len, 4096)
    assert.strictEqual(d.values.gpu_memory_utilization, 0.8)
    assert.deepStrictEqual(d.given, ["max_model_len", "gpu_memory_utilization"])
  })

  it("reads --x / --no-x toggles and store-true switches, refusing a value for them", () => {
    const d = decode(["m", "--enforce-eager", "--no-enable-prefix-caching", "--headless"])
    assert.strictEqual(d.values.enforce_eager, true)
    assert.strictEqual(d.values.enable_prefix_caching, false)
    assert.strictEqual(d.values.headless, true)
    assert.strictEqual(refuse(["m", "--enforce-eager=yes"])._tag, "UnexpectedValue")
  })

  it("parses JSON config flags and merges dotted keys into them, lists with +", () => {
    const d = decode([
      "m",
      "--compilation-config.level",
      "3",
      "--compilation_config.cudagraph_capture_sizes+",
      "1,2",
      "--speculative-config",
      '{"method":"ngram","num_speculative_tokens":4}'
    ])
    assert.deepStrictEqual(d.values.compilation_config, { level: 3, cudagraph_capture_sizes: ["1", "2"] })
    assert.deepStrictEqual(d.values.speculative_config, { method: "ngram", num_speculative_tokens: 4 })
    const dup = decode(["m", "--compilation-config.level=1", "--compilation-config.level=2"])
    assert.deepStrictEqual(dup.values.compilation_config, { level: 2 })
    assert.deepStrictEqual(dup.duplicateKeys, ["--compilation-config.level"])
  })

  it("reads human-readable sizes and `auto` where the flag takes them, lists, None", () => {
    const d = decode([
      "m",
      "--max-model-len",
      "32k",
      "--max-num-batched-tokens",
      "2K",
      "--served-model-name",
      "a",
      "b"
    ])
    assert.strictEqual(d.values.max_model_len, 32000)
    assert.strictEqual(d.values.max_num_batched_tokens, 2048)
    assert.deepStrictEqual(d.values.served_model_name, ["a", "b"])
    assert.strictEqual(decode(["m", "--max-model-len", "auto"]).values.max_model_len, -1)
    assert.strictEqual(decode(["m", "--quantization", "None"]).values.quantization, null)
  })

  it("accepts a unique prefix and refuses an ambiguous one, naming the candidates", () => {
    assert.strictEqual(decode(["m", "--gpu-memory-util", "0.5"]).values.gpu_memory_utilization, 0.5)
    const e = refuse(["m", "--max-num", "4"])
    assert.strictEqual(e._tag, "AmbiguousFlag")
  })

  it("names an unknown flag with did-you-mean, and a bad value or choice with what was expected", () => {
    const unknown = refuse(["m", "--tensor-paralel-size", "2"])
    assert.strictEqual(unknown._tag, "UnknownFlag")
    if (unknown._tag === "UnknownFlag") assert.include(unknown.suggestions, "--tensor-parallel-size")
    assert.match(unknown.message, /^unknown flag --tensor-paralel-size for vLLM /)
    assert.notInclude(unknown.message, "SGLang")
    const far = refuse(["m", "--zzzz-qqqq"])
    assert.include(far.message, "`vllm serve --help`")
    const value = refuse(["m", "-tp", "two"])
    assert.strictEqual(value._tag, "InvalidValue")
    assert.include(value.message, "-tp")
    const choice = refuse(["m", "--dtype", "bf16"])
    assert.strictEqual(choice._tag, "InvalidChoice")
    assert.strictEqual(refuse(["m", "--port"])._tag, "MissingValue")
    const extra = refuse(["m", "other"])
    assert.strictEqual(extra._tag, "UnexpectedArgument")
    // in vLLM's own terms, not SGLang's
    assert.include(extra.message, "vllm serve takes one positional argument, the model")
    assert.notInclude(extra.message, "launch_server")
  })

  it("names --config file.yaml as unsupported, and a missing model", () => {
    const config = refuse(["m", "--config", "serve.yaml"])
    assert.strictEqual(config._tag, "ConfigFileUnsupported")
    assert.include(config.message, "serve.yaml")
    const none = refuse(["--port", "8001"])
    assert.strictEqual(none._tag, "MissingModel")
    assert.include(none.message, "Qwen/Qwen3-0.6B")
  })

  it("knows each snapshot's flags: --swap-space exists at 0.13, not at 0.21", () => {
    const v013 = Catalogue.byName("main-2025-12-16")!
    assert.strictEqual(decode(["m", "--swap-space", "8"], v013).values.swap_space, 8)
    const e = refuse(["m", "--swap-space", "8"])
    assert.strictEqual(e._tag, "UnknownFlag")
  })

  it("encodes values so that decoding gives them back", () => {
    const values = {
      tensor_parallel_size: 2,
      enforce_eager: true,
      enable_prefix_caching: false,
      served_model_name: ["a", "b"],
      compilation_config: { level: 3 },
      quantization: null
    }
    const argv = Argv.encode("org/model", values)
    const back = decode(argv)
    assert.strictEqual(back.model, "org/model")
    for (const [dest, v] of Object.entries(values)) assert.deepStrictEqual(back.values[dest], v, dest)
  })

  it("replaces flags in the user's words whatever their spelling, keeping the rest as typed", () => {
    const argv = ["m", "--tensor_parallel_size", "8", "--max-model-len=131072", "--enforce-eager"]
    assert.deepStrictEqual(Argv.withValues(argv, { tensor_parallel_size: 4, max_model_len: 32768 }), [
      "m",
      "--enforce-eager",
      "--tensor-parallel-size",
      "4",
      "--max-model-len",
      "32768"
    ])
  })
})
