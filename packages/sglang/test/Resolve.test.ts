import { assert, describe, it } from "@effect/vitest"
import * as ModelTraits from "@mlops/serve/ModelTraits"
import { llama3_8b } from "@mlops/serve/SampleModels"
import { Effect, Either } from "effect"
import * as Argv from "../src/Argv.js"
import * as Resolve from "../src/Resolve.js"
import * as Rule from "../src/Rule.js"
import * as Rules from "../src/Rules.js"
import * as ServerArgs from "../src/ServerArgs.js"
import * as VersionRange from "../src/VersionRange.js"
import {
  a6000x2,
  fixedArgv,
  mambaFix,
  storyArgv,
  storyConfig,
  storyContext,
  tripleFix
} from "./support/story.js"

const contextFor = (config: unknown) =>
  Effect.map(ModelTraits.fromConfig(config), (traits) => ({ ...storyContext, traits }))

const resolveArgv = (
  argv: ReadonlyArray<string>,
  config: unknown = storyConfig,
  env: Record<string, string> = {}
) =>
  Effect.gen(function* () {
    const { args, explicit } = yield* Argv.decodeArgv(argv)
    const ctx = yield* contextFor(config)
    return yield* Effect.either(Resolve.resolve(args, explicit, { ...ctx, env }))
  })

describe("Resolve: the Qwen3.6-27B story on 2x A6000", () => {
  it.effect("the incident command has exactly two problems, in SGLang's order, with their fixes", () =>
    Effect.gen(function* () {
      const result = yield* resolveArgv(storyArgv)
      assert.isTrue(Either.isLeft(result))
      if (!Either.isLeft(result)) return
      const error = result.left
      assert.strictEqual(error._tag, "LaunchRulesViolated")
      assert.deepStrictEqual(
        error.violations.map((v) => [v.ruleId, v.errorType]),
        [
          ["R24", "ValueError"],
          ["R12", "AssertionError"]
        ]
      )
      const [mamba, assertion] = error.violations
      assert.strictEqual(
        mamba!.engineMessage,
        "Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
      )
      assert.deepStrictEqual(mamba!.fix, {
        set: { mamba_scheduler_strategy: "extra_buffer" },
        alternatives: [{ disable_radix_cache: true }]
      })
      assert.strictEqual(assertion!.engineMessage, "")
      assert.include(assertion!.sourceLine, "speculative_num_draft_tokens is None")
      assert.deepStrictEqual(assertion!.fix.set, { speculative_num_steps: 1, speculative_eagle_topk: 1 })
      assert.deepStrictEqual(error.fix, {
        mamba_scheduler_strategy: "extra_buffer",
        speculative_num_steps: 1,
        speculative_eagle_topk: 1
      })
      assert.isTrue(error.resolvesAfterFix)
      assert.include(error.message, "2 problems")
      assert.include(
        error.message,
        "combined fix: --mamba-scheduler-strategy extra_buffer --speculative-num-steps 1 --speculative-eagle-topk 1"
      )
    })
  )

  it.effect("the fixed argv decodes and resolves: EAGLE 1/1/2, 48 requests, SGLang's warnings in order", () =>
    Effect.gen(function* () {
      const first = yield* resolveArgv(storyArgv)
      assert.isTrue(Either.isLeft(first))
      if (!Either.isLeft(first)) return
      const fixed = first.left.fixedArgv!
      // the fixed command mlops prints is the incident command plus the two documented fixes
      assert.deepStrictEqual((yield* Argv.decodeArgv(fixed)).args, (yield* Argv.decodeArgv(fixedArgv)).args)
      const result = yield* resolveArgv(fixed)
      assert.isTrue(Either.isRight(result))
      if (!Either.isRight(result)) return
      const { effective, adjustments, logLines } = result.right
      assert.strictEqual(effective.speculative_algorithm, "EAGLE")
      assert.deepStrictEqual(
        [
          effective.speculative_num_steps,
          effective.speculative_eagle_topk,
          effective.speculative_num_draft_tokens
        ],
        [1, 1, 2]
      )
      assert.strictEqual(effective.max_running_requests, 48)
      assert.strictEqual(effective.mamba_scheduler_strategy, "extra_buffer")
      assert.strictEqual(effective.attention_backend, "flashinfer")
      assert.strictEqual(effective.page_size, 1)
      assert.strictEqual(effective.tp_size, 2)
      assert.deepStrictEqual(logLines, [
        "Attention backend not specified. Use flashinfer backend by default.",
        "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.",
        "Spec v2 is enabled by default for eagle/eagle3/standalone speculative decoding.",
        "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
      ])
      const r13 = adjustments.find((a) => a.ruleId === "R13")
      assert.deepStrictEqual(r13?.changes, [{ field: "speculative_num_draft_tokens", from: 1, to: 2 }])
      assert.deepStrictEqual(adjustments.find((a) => a.ruleId === "R1")?.changes, [
        { field: "speculative_algorithm", from: "NEXTN", to: "EAGLE" }
      ])
    })
  )

  it.effect("the alternative fix (--disable-radix-cache) resolves too, keeping no_buffer", () =>
    Effect.gen(function* () {
      const argv = [...storyArgv, "--disable-radix-cache", ...tripleFix]
      const result = yield* resolveArgv(argv)
      assert.isTrue(Either.isRight(result))
      if (Either.isRight(result))
        assert.strictEqual(result.right.effective.mamba_scheduler_strategy, "no_buffer")
    })
  )

  it.effect("without the three numbers SGLang picks (3, 1, 4) for this architecture", () =>
    Effect.gen(function* () {
      const argv = [...storyArgv.slice(0, 4), "--tp", "2", ...mambaFix]
      const result = yield* resolveArgv(argv)
      assert.isTrue(Either.isRight(result))
      if (!Either.isRight(result)) return
      const e = result.right.effective
      assert.deepStrictEqual(
        [e.speculative_num_steps, e.speculative_eagle_topk, e.speculative_num_draft_tokens],
        [3, 1, 4]
      )
    })
  )

  it.effect("SGLANG_ENABLE_SPEC_V2=0 switches to spec v1 with SGLang's reason", () =>
    Effect.gen(function* () {
      const result = yield* resolveArgv(fixedArgv, storyConfig, { SGLANG_ENABLE_SPEC_V2: "0" })
      assert.isTrue(Either.isRight(result))
      if (!Either.isRight(result)) return
      assert.isTrue(result.right.effective.disable_overlap_schedule)
      assert.include(
        result.right.logLines,
        "Spec v1 is used for eagle/eagle3/standalone speculative decoding because SGLANG_ENABLE_SPEC_V2=False."
      )
    })
  )
})

describe("Resolve: mechanics", () => {
  it.effect("independent violations from different families are all reported, in order", () =>
    Effect.gen(function* () {
      // served name with ':' (check_server_args) and an over-long context (step 10)
      const argv = ["--model-path", "/m/llama", "--served-model-name", "a:b", "--context-length", "100000"]
      const result = yield* resolveArgv(argv, llama3_8b)
      assert.isTrue(Either.isLeft(result))
      if (!Either.isLeft(result)) return
      assert.deepStrictEqual(
        result.left.violations.map((v) => [v.ruleId, v.stage]),
        [
          ["R35.context-length", "server-args"],
          ["S8.served-model-name", "check-server-args"]
        ]
      )
      assert.deepStrictEqual(result.left.fix, { context_length: 8192, served_model_name: "a-b" })
    })
  )

  it.effect(
    "the story at --tp 3: mamba, speculative and GDN-shape problems all at once, in SGLang's order",
    () =>
      Effect.gen(function* () {
        const argv = [...storyArgv.slice(0, -1), "3"]
        const result = yield* resolveArgv(argv)
        assert.isTrue(Either.isLeft(result))
        if (!Either.isLeft(result)) return
        assert.deepStrictEqual(
          result.left.violations.map((v) => [v.ruleId, v.stage]),
          [
            ["R24", "server-args"],
            ["R12", "server-args"],
            ["R37.gdn-heads", "model-init"]
          ]
        )
        assert.strictEqual(result.left.violations[2]!.engineMessage, "10240 is not divisible by 3")
        assert.strictEqual(result.left.fix.tp_size, 2)
        assert.isTrue(result.left.resolvesAfterFix)
      })
  )

  it.effect("LoRA and pipeline parallelism with speculation: both incompatibilities, each with its fix", () =>
    Effect.gen(function* () {
      const argv = [
        "--model-path",
        "/m/llama",
        "--speculative-algorithm",
        "EAGLE",
        "--enable-lora",
        "--pp-size",
        "2"
      ]
      const result = yield* resolveArgv(argv, llama3_8b)
      assert.isTrue(Either.isLeft(result))
      if (!Either.isLeft(result)) return
      assert.deepStrictEqual(
        result.left.violations.map((v) => [v.ruleId, v.engineMessage]),
        [
          ["R18.pp", "Pipeline parallelism is not compatible with overlap schedule, speculative decoding"],
          ["R18.lora", "Currently LoRA is only compatible with NGRAM speculative decoding."]
        ]
      )
      assert.deepStrictEqual(result.left.fix, { pp_size: 1, speculative_algorithm: null })
      assert.isTrue(result.left.resolvesAfterFix)
    })
  )

  it("a clean launch has no violations and keeps the user's explicit values", () => {
    const args = ServerArgs.make({ model_path: "/m/llama", tp_size: 2, page_size: 16 })
    const traits = Either.getOrThrow(ModelTraits.fromConfigEither(llama3_8b))
    const result = Resolve.resolveEither(args, new Set(["model_path", "tp_size", "page_size"]), {
      traits,
      gpus: a6000x2,
      env: {},
      version: "0.5.11"
    })
    assert.isTrue(Either.isRight(result))
    if (Either.isRight(result)) {
      assert.strictEqual(result.right.effective.page_size, 16)
      assert.strictEqual(result.right.effective.speculative_algorithm, null)
    }
  })

  it("a 'dummy' model path skips steps 7-18 like SGLang's early return", () => {
    const args = ServerArgs.make({ model_path: "dummy", speculative_algorithm: "NEXTN" })
    const result = Resolve.resolveEither(args, new Set(["model_path"]), {
      traits: undefined,
      gpus: a6000x2,
      env: {},
      version: "0.5.11"
    })
    assert.isTrue(Either.isRight(result))
    if (Either.isRight(result)) assert.strictEqual(result.right.effective.speculative_algorithm, "NEXTN")
  })

  it("applyFixes merges every violation's fix into the args", () => {
    const args = ServerArgs.make({ model_path: "/m" })
    const record = (ruleId: string, set: Record<string, unknown>): Rule.ViolationRecord => ({
      _tag: "InvalidArgument",
      ruleId,
      title: ruleId,
      stage: "server-args",
      errorType: "ValueError",
      message: "",
      engineMessage: "",
      fields: [],
      fix: { set, alternatives: [] }
    })
    const fixed = Resolve.applyFixes(args, [record("a", { tp_size: 2 }), record("b", { page_size: 64 })])
    assert.strictEqual(fixed.tp_size, 2)
    assert.strictEqual(fixed.page_size, 64)
    assert.strictEqual(fixed.model_path, "/m")
  })

  it("a violation without a fix is reported and resolution goes on", () => {
    const noFix = Rule.make({
      id: "T1",
      title: "always fails",
      versions: VersionRange.make("0.5.11", "0.5.11", "test rule"),
      order: { step: 12, sub: 1 },
      kind: "fatal",
      check: () =>
        Rule.violation({ errorType: "ValueError", message: "m", engineMessage: "s", fields: [], fix: {} })
    })
    const later = Rule.make({
      id: "T2",
      title: "tp must be 2",
      versions: VersionRange.make("0.5.11", "0.5.11", "test rule"),
      order: { step: 19, sub: 1 },
      kind: "fatal",
      check: ({ args }) =>
        args.tp_size === 2
          ? undefined
          : Rule.violation({
              errorType: "AssertionError",
              message: "m",
              engineMessage: "t",
              fields: ["tp_size"],
              fix: { tp_size: 2 }
            })
    })
    const result = Resolve.resolveEither(
      ServerArgs.make({ model_path: "/m" }),
      new Set(),
      { traits: undefined, gpus: undefined, env: {}, version: "0.5.11" },
      [later, noFix]
    )
    assert.isTrue(Either.isLeft(result))
    if (!Either.isLeft(result)) return
    assert.deepStrictEqual(
      result.left.violations.map((v) => v.ruleId),
      ["T1", "T2"]
    )
    assert.isFalse(result.left.resolvesAfterFix)
    assert.deepStrictEqual(result.left.fixedArgv, ["--model-path", "/m", "--tp-size", "2"])
  })
})

describe("Rules", () => {
  it("every rule id is unique and the list is in SGLang's order", () => {
    const ids = Rules.all.map((r) => r.id)
    assert.strictEqual(new Set(ids).size, ids.length)
    for (let i = 1; i < Rules.all.length; i++)
      assert.isTrue(Rule.compare(Rules.all[i - 1]!, Rules.all[i]!) <= 0)
  })

  it("only a verified version gets rules; any other gets none, marked unverified", () => {
    const verified = Rules.forVersion("v0.5.11")
    assert.isTrue(verified.verified)
    assert.strictEqual(verified.version, "0.5.11")
    // every rule whose range holds 0.5.11 (others are older or newer releases')
    assert.deepStrictEqual(
      verified.rules,
      Rules.all.filter((rule) => Rule.appliesTo(rule, "0.5.11"))
    )
    assert.isAbove(verified.rules.length, 80)
    for (const other of ["0.5.11.post1", "0.5.12", "0.6.0"]) {
      const set = Rules.forVersion(other)
      assert.isFalse(set.verified, other)
      assert.deepStrictEqual(set.rules, [])
    }
  })
})
