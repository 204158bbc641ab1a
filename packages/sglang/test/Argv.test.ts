import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import * as Argv from "../src/Argv.js"
import * as Catalogue from "../src/Catalogue.js"
import * as ServerArgs from "../src/ServerArgs.js"
import { arbitraryServerArgs } from "./arbitraryServerArgs.js"
import { storyArgv } from "./support/story.js"

const M = ["--model-path", "/m"]
const decode = (...argv: Array<string>) => Argv.decodeArgv([...M, ...argv])
const fail = (...argv: Array<string>) => Effect.flip(Argv.decodeArgv(argv))

describe("Argv.decodeArgv", () => {
  it.effect("fills defaults and records only the given fields as explicit", () =>
    Effect.gen(function* () {
      const { args, explicit, deprecated } = yield* decode()
      assert.strictEqual(args.model_path, "/m")
      assert.strictEqual(args.tp_size, 1)
      assert.strictEqual(args.tokenizer_mode, "auto")
      assert.deepStrictEqual([...explicit], ["model_path"])
      assert.deepStrictEqual(deprecated, [])
    })
  )

  it.effect("reads --tp 2, --tp=2, --tp-size 2 and --tensor-parallel-size 2 as tp_size 2", () =>
    Effect.gen(function* () {
      for (const argv of [["--tp", "2"], ["--tp=2"], ["--tp-size", "2"], ["--tensor-parallel-size", "2"]]) {
        const { args, explicit } = yield* decode(...argv)
        assert.strictEqual(args.tp_size, 2, argv.join(" "))
        assert.isTrue(explicit.has("tp_size"))
      }
    })
  )

  it.effect("decodes every alias to its field", () =>
    Effect.gen(function* () {
      for (const spec of Catalogue.latest.flags) {
        for (const alias of spec.aliases) {
          const value = spec.field === "model_path" ? "/other" : spec.type === "int" ? "3" : "x"
          const { args, explicit } = yield* decode(alias, value)
          const field = spec.field as ServerArgs.Field
          assert.isTrue(explicit.has(field), alias)
          assert.strictEqual(args[field], spec.type === "int" ? 3 : value, alias)
        }
      }
    })
  )

  it.effect("decodes the story argv", () =>
    Effect.gen(function* () {
      const { args, explicit } = yield* Argv.decodeArgv(storyArgv)
      assert.strictEqual(args.speculative_algorithm, "NEXTN")
      assert.strictEqual(args.speculative_num_draft_tokens, 1)
      assert.strictEqual(args.tp_size, 2)
      assert.sameMembers(
        [...explicit],
        ["model_path", "speculative_algorithm", "speculative_num_draft_tokens", "tp_size"]
      )
    })
  )

  it.effect(
    "abbreviations: a unique prefix resolves, an exact spelling wins, an ambiguous prefix lists candidates",
    () =>
      Effect.gen(function* () {
        assert.strictEqual((yield* decode("--mem-fraction", "0.7")).args.mem_fraction_static, 0.7)
        // --ep is an exact alias even though --ep-size and others start with it.
        assert.strictEqual((yield* decode("--ep", "4")).args.ep_size, 4)
        const error = yield* fail(...M, "--speculative-num", "3")
        assert.strictEqual(error._tag, "AmbiguousFlag")
        if (error._tag !== "AmbiguousFlag") return
        assert.include(error.candidates, "--speculative-num-steps")
        assert.include(error.candidates, "--speculative-num-draft-tokens")
        assert.include(error.message, "--speculative-num-steps")
      })
  )

  it.effect("negative numbers are values; other words starting with - need --flag=", () =>
    Effect.gen(function* () {
      assert.strictEqual(
        (yield* decode("--gc-warning-threshold-secs", "-1.5")).args.gc_warning_threshold_secs,
        -1.5
      )
      assert.strictEqual((yield* decode("--served-model-name=-x")).args.served_model_name, "-x")
    })
  )

  it.effect("nargs lists: + consumes until the next flag, * may be empty, ? falls back to its const", () =>
    Effect.gen(function* () {
      const { args } = yield* decode(
        "--cuda-graph-bs",
        "1",
        "2",
        "4",
        "--tp",
        "2",
        "--lora-paths",
        "--numa-node",
        "0"
      )
      assert.deepStrictEqual(args.cuda_graph_bs, [1, 2, 4])
      assert.deepStrictEqual(args.lora_paths, [])
      assert.deepStrictEqual(args.numa_node, [0])
      assert.strictEqual(args.tp_size, 2)
      assert.deepInclude(yield* fail(...M, "--cuda-graph-bs", "--tp", "2"), { _tag: "MissingValue" })
      assert.deepStrictEqual(
        (yield* decode("--bucket-time-to-first-token", "0.1", "-0.5")).args.bucket_time_to_first_token,
        [0.1, -0.5]
      )
      assert.strictEqual((yield* decode("--model-checksum")).args.model_checksum, "")
      assert.strictEqual((yield* decode("--model-checksum", "abc")).args.model_checksum, "abc")
      assert.deepInclude(yield* fail(...M, "--lora-target-modules", "q_proj", "nope"), {
        _tag: "InvalidChoice",
        value: "nope"
      })
    })
  )

  it.effect("JSON flags parse their value; bad JSON is an InvalidValue", () =>
    Effect.gen(function* () {
      const { args } = yield* decode(
        "--preferred-sampling-params",
        '{"temperature": 0.2}',
        "--forward-hooks",
        "[1, 2]"
      )
      assert.deepStrictEqual(args.preferred_sampling_params, { temperature: 0.2 })
      assert.deepStrictEqual(args.forward_hooks, [1, 2])
      assert.deepInclude(yield* fail(...M, "--extra-metric-labels", "{oops"), { _tag: "InvalidValue" })
      // Strings that SGLang parses as JSON later stay strings.
      assert.strictEqual(
        (yield* decode("--json-model-override-args", '{"a":1}')).args.json_model_override_args,
        '{"a":1}'
      )
    })
  )

  it.effect("human-readable ints: SI suffixes (with decimals) and IEC suffixes (whole numbers)", () =>
    Effect.gen(function* () {
      const read = (text: string) =>
        decode("--context-length", text).pipe(Effect.map((d) => d.args.context_length))
      assert.strictEqual(yield* read("32k"), 32_000)
      assert.strictEqual(yield* read("1M"), 1_000_000)
      assert.strictEqual(yield* read("128Ki"), 131_072)
      assert.strictEqual(yield* read("1.5k"), 1500)
      assert.strictEqual(yield* read("4096"), 4096)
      assert.deepInclude(yield* fail(...M, "--context-length", "1.5Ki"), { _tag: "InvalidValue" })
      // Only the human_readable_int flags take suffixes.
      assert.deepInclude(yield* fail(...M, "--tp-size", "2k"), { _tag: "InvalidValue" })
    })
  )

  it.effect("negatable switches take --x and --no-x; the last occurrence of any flag wins", () =>
    Effect.gen(function* () {
      assert.isTrue((yield* decode("--lora-strict-loading")).args.lora_strict_loading)
      assert.isFalse((yield* decode("--no-record-nolora-graph")).args.record_nolora_graph)
      const last = yield* decode(
        "--no-lora-strict-loading",
        "--lora-strict-loading",
        "--port",
        "1",
        "--port",
        "2"
      )
      assert.isTrue(last.args.lora_strict_loading)
      assert.strictEqual(last.args.port, 2)
      assert.deepInclude(yield* fail(...M, "--no-lora-strict-loading=1"), { _tag: "UnexpectedValue" })
    })
  )

  it.effect("deprecated flags decode with a warning; no-op ones set nothing; --config is reported", () =>
    Effect.gen(function* () {
      const decoded = yield* decode("--stream-output", "--enable-piecewise-cuda-graph", "--config", "c.yaml")
      assert.isTrue(decoded.args.incremental_streaming_output)
      assert.deepStrictEqual(
        decoded.deprecated.map((w) => w.flag),
        ["--stream-output", "--enable-piecewise-cuda-graph"]
      )
      assert.include(decoded.deprecated[0]!.message, "--incremental-streaming-output")
      assert.strictEqual(decoded.configFile, "c.yaml")
      assert.sameMembers([...decoded.explicit], ["model_path", "incremental_streaming_output"])
    })
  )
})

describe("Argv.encodeArgv", () => {
  it.effect("writes non-default fields in catalogue order with canonical spellings", () =>
    Effect.gen(function* () {
      const decoded = yield* Argv.decodeArgv(["--tp", "2", "--model", "/m", "--port=30000", "--enable-lora"])
      assert.deepStrictEqual(yield* Argv.encodeArgv(decoded.args), [
        "--model-path",
        "/m",
        "--tp-size",
        "2",
        "--enable-lora"
      ])
      assert.deepStrictEqual(yield* Argv.encodeArgv(decoded.args, { only: decoded.explicit }), [
        "--model-path",
        "/m",
        "--port",
        "30000",
        "--tp-size",
        "2",
        "--enable-lora"
      ])
    })
  )

  it.effect.prop(
    "round trip: decodeArgv(encodeArgv(args)) gives the same args",
    [arbitraryServerArgs()],
    ([{ args, given }]) =>
      Effect.gen(function* () {
        const argv = yield* Argv.encodeArgv(args)
        const decoded = yield* Argv.decodeArgv(argv)
        assert.deepStrictEqual(decoded.args, args)
        assert.isTrue([...decoded.explicit].every((field) => given.has(field)))
        assert.isTrue(Either.isRight(Schema.decodeUnknownEither(ServerArgs.ServerArgs)(decoded.args)))
        const onlyGiven = yield* Argv.decodeArgv(yield* Argv.encodeArgv(args, { only: given }))
        assert.deepStrictEqual(onlyGiven.args, args)
      }),
    { fastCheck: { numRuns: 150 } }
  )
})

describe("Argv.patch and formatCommandLine", () => {
  it.effect(
    "patch adds the fix to the explicit fields so the user's command plus the fix is re-encoded",
    () =>
      Effect.gen(function* () {
        const decoded = yield* decode("--speculative-algorithm", "EAGLE", "--tp", "2")
        const fixed = Argv.patch(decoded.args, decoded.explicit, { speculative_num_draft_tokens: 4 })
        assert.strictEqual(fixed.args.speculative_num_draft_tokens, 4)
        assert.isTrue(fixed.explicit.has("speculative_num_draft_tokens"))
        assert.isFalse(decoded.explicit.has("speculative_num_draft_tokens"))
        const argv = yield* Argv.encodeArgv(fixed.args, { only: fixed.explicit })
        assert.deepStrictEqual(argv.slice(-2), ["--speculative-num-draft-tokens", "4"])
      })
  )

  it("formatCommandLine quotes words for a POSIX shell", () => {
    const argv = ["--model-path", "/m dir", "--json-model-override-args", `{"a": "it's"}`, "--tp-size", "2"]
    assert.strictEqual(
      Argv.formatCommandLine(argv),
      `python -m sglang.launch_server --model-path '/m dir' --json-model-override-args '{"a": "it'\\''s"}' --tp-size 2`
    )
    assert.strictEqual(Argv.formatCommandLine(["--tp-size", "2"], { program: [] }), "--tp-size 2")
    assert.strictEqual(
      Argv.formatCommandLine(["--model-path", "/m", "--enable-lora"], { multiline: true }),
      "python -m sglang.launch_server \\\n  --model-path /m \\\n  --enable-lora"
    )
  })
})
