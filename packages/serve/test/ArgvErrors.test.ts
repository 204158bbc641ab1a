import { assert, describe, it } from "@effect/vitest"
import * as Argv from "@mlops/sglang/Argv"
import * as ServerArgs from "@mlops/sglang/ServerArgs"
import { Effect } from "effect"

const M = ["--model-path", "/m"]
const fail = (...argv: Array<string>) => Effect.flip(Argv.decodeArgv(argv))

describe("ArgvErrors", () => {
  it.effect("an unknown flag suggests the closest spelling", () =>
    Effect.gen(function* () {
      const error = yield* fail(...M, "--tensor-paralel-size", "2")
      assert.strictEqual(error._tag, "UnknownFlag")
      if (error._tag !== "UnknownFlag") return
      assert.strictEqual(error.flag, "--tensor-paralel-size")
      assert.strictEqual(error.suggestions[0], "--tensor-parallel-size")
      assert.include(error.message, "did you mean --tensor-parallel-size")
      const single = yield* fail(...M, "-tp", "2")
      assert.strictEqual(single._tag, "UnknownFlag")
      if (single._tag === "UnknownFlag") assert.include(single.suggestions, "--tp-size")
    })
  )

  it.effect("InvalidChoice names the flag and lists the choices", () =>
    Effect.gen(function* () {
      const error = yield* fail(...M, "--speculative-algorithm", "nextn")
      assert.strictEqual(error._tag, "InvalidChoice")
      if (error._tag !== "InvalidChoice") return
      assert.strictEqual(error.flag, "--speculative-algorithm")
      assert.deepStrictEqual(error.choices, ["DFLASH", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"])
      assert.include(error.message, "NEXTN")
      const level = yield* fail(...M, "--log-requests-level", "7")
      assert.strictEqual(level._tag, "InvalidChoice")
    })
  )

  it.effect("InvalidValue for a value of the wrong type names the flag as spelled", () =>
    Effect.gen(function* () {
      const error = yield* fail(...M, "--tp", "two")
      assert.strictEqual(error._tag, "InvalidValue")
      if (error._tag !== "InvalidValue") return
      assert.strictEqual(error.flag, "--tp-size")
      assert.strictEqual(error.value, "two")
      assert.include(error.message, "an integer")
      assert.strictEqual((yield* fail(...M, "--mem-fraction-static", "lots"))._tag, "InvalidValue")
      assert.strictEqual((yield* fail(...M, "--port", "1.5"))._tag, "InvalidValue")
    })
  )

  it.effect("MissingValue, MissingRequired, UnexpectedValue and positional words", () =>
    Effect.gen(function* () {
      assert.deepInclude(yield* fail(...M, "--port"), { _tag: "MissingValue", flag: "--port" })
      assert.deepInclude(yield* fail(...M, "--port", "--tp", "2"), { _tag: "MissingValue", flag: "--port" })
      assert.deepInclude(yield* fail("--tp", "2"), { _tag: "MissingRequired", flag: "--model-path" })
      assert.deepInclude(yield* fail(...M, "--trust-remote-code=yes"), {
        _tag: "UnexpectedValue",
        value: "yes",
        inline: true
      })
      assert.deepInclude(yield* fail(...M, "--trust-remote-code", "true"), {
        _tag: "UnexpectedValue",
        flag: "--trust-remote-code",
        inline: false
      })
      const positional = yield* fail("/models/llama", ...M)
      assert.deepInclude(positional, {
        _tag: "UnexpectedArgument",
        argument: "/models/llama"
      })
      assert.include(
        positional.message,
        "SGLang's launch_server takes only --flags; put the model behind --model-path"
      )
      assert.deepInclude(yield* fail(...M, "--cuda-graph-bs=1", "2"), {
        _tag: "UnexpectedArgument",
        after: "--cuda-graph-bs"
      })
    })
  )

  it.effect(
    "errors come in argparse's order: ambiguous prefix, bad values, missing --model-path, unknown words",
    () =>
      Effect.gen(function* () {
        // argparse classifies every word first: a later ambiguous prefix beats an earlier bad value.
        assert.deepInclude(yield* fail(...M, "--tp", "two", "--speculative-num", "3"), {
          _tag: "AmbiguousFlag",
          flag: "--speculative-num"
        })
        // unknown flags and stray words are reported only after values were converted ...
        assert.deepInclude(yield* fail(...M, "--tensor-paralel-size", "2", "--port", "x"), {
          _tag: "InvalidValue",
          flag: "--port"
        })
        assert.deepInclude(yield* fail("stray", ...M, "--trust-remote-code=yes"), {
          _tag: "UnexpectedValue",
          value: "yes"
        })
        // ... and after the required check
        assert.deepInclude(yield* fail("--foo", "1", "--tp", "2"), { _tag: "MissingRequired" })
        // the first unusable word wins, and the flags after it are still read
        assert.deepInclude(yield* fail(...M, "--foo", "--trust-remote-code", "yes", "--tp", "2"), {
          _tag: "UnknownFlag",
          flag: "--foo"
        })
        assert.deepInclude(yield* fail(...M, "--trust-remote-code", "yes", "--foo"), {
          _tag: "UnexpectedValue",
          flag: "--trust-remote-code"
        })
        assert.deepInclude(yield* fail(...M, "--", "--tp", "2"), {
          _tag: "UnexpectedArgument",
          argument: "--tp"
        })
      })
  )

  it.effect("fails for values no command line can express", () =>
    Effect.gen(function* () {
      const args = ServerArgs.make({ model_path: "/m" })
      const cases: Array<Partial<ServerArgs.ServerArgs>> = [
        { tp_size: null as unknown as number },
        { enable_lora: false },
        { cuda_graph_bs: [] },
        { gc_threshold: [-1e-9, -2e-9] as Array<number> }
      ]
      for (const change of cases) {
        const error = yield* Effect.flip(Argv.encodeArgv({ ...args, ...change }))
        assert.strictEqual(error._tag, "UnencodableValue")
        assert.strictEqual(error.field, Object.keys(change)[0])
      }
    })
  )
})
