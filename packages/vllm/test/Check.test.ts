import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Catalogue from "../src/Catalogue.js"
import * as Check from "../src/Check.js"
import * as Rules from "../src/Rules.js"
import {
  h100,
  l4,
  llama31_8b,
  mixtral_8x7b,
  qwen25_7b,
  qwen25_7b_awq,
  t4,
  traits
} from "./fixtures/models.js"

type Context = Parameters<typeof Check.check>[1]

const run = (argv: ReadonlyArray<string>, context: Partial<Context> = {}) =>
  Effect.runSync(Check.check(argv, { model: traits(qwen25_7b), gpus: h100(8), ...context }))

/** The rule ids that fired, errors then warnings. */
const fired = (argv: ReadonlyArray<string>, context: Partial<Context> = {}) => {
  const r = run(argv, context)
  return [...r.errors, ...r.warnings].map((p) => p.ruleId)
}

const M = "Qwen/Qwen2.5-7B-Instruct"

describe("vLLM pre-load checks", () => {
  it("are at least 15, each with vLLM's text, a release range and where vLLM raises it", () => {
    assert.isAtLeast(Rules.all.length, 15)
    assert.strictEqual(new Set(Rules.all.map((r) => r.id)).size, Rules.all.length)
    for (const rule of Rules.all) {
      assert.match(rule.releases.from, /^0\.\d+$/, rule.id)
      assert.isAbove(rule.text.length, 20, rule.id)
      assert.include(rule.raisedIn, "vllm/", rule.id)
    }
  })

  it("heads divisible by tensor parallel size, fixed to the largest divisor that fits", () => {
    const r = run([M, "-tp", "8"])
    const p = r.errors.find((e) => e.ruleId === "model.heads-divisible-by-tp")!
    assert.strictEqual(
      p.vllmText,
      "Total number of attention heads (28) must be divisible by tensor parallel size (8)."
    )
    assert.deepStrictEqual(p.fix, { tensor_parallel_size: 4 })
    assert.deepStrictEqual(fired([M, "-tp", "4"]), [])
  })

  it("max_num_batched_tokens at least max_num_seqs, with vLLM's defaults for the one not given", () => {
    const r = run([M, "--max-num-batched-tokens", "128", "--max-num-seqs", "256"])
    assert.strictEqual(
      r.errors[0]!.vllmText,
      "max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256)."
    )
    assert.deepStrictEqual(r.errors[0]!.fix, { max_num_batched_tokens: 256 })
    // H100: the API server's default max_num_seqs is 1024
    assert.deepStrictEqual(fired([M, "--max-num-batched-tokens", "512"]), [
      "scheduler.batched-tokens-at-least-num-seqs"
    ])
    assert.deepStrictEqual(fired([M, "--max-num-batched-tokens", "512"], { gpus: l4(1) }), [])
  })

  it("max_model_len within the model's maximum unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", () => {
    const r = run([M, "--max-model-len", "131072"])
    const p = r.errors.find((e) => e.ruleId === "model.max-model-len-within-derived")!
    assert.include(
      p.vllmText,
      "User-specified max_model_len (131072) is greater than the derived max_model_len"
    )
    assert.include(p.vllmText, "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    assert.deepStrictEqual(p.fix, { max_model_len: 32768 })
    assert.include(p.otherwise!, "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    assert.notInclude(
      fired([M, "--max-model-len", "131072"], { env: { VLLM_ALLOW_LONG_MAX_MODEL_LEN: "1" } }),
      "model.max-model-len-within-derived"
    )
  })

  it("an unknown quantization method, with the list of this release's methods", () => {
    const r = run([M, "--quantization", "awk"])
    const p = r.errors.find((e) => e.ruleId === "model.unknown-quantization")!
    assert.match(p.vllmText, /^Unknown quantization method: awk\. Must be one of \['awq', /)
    assert.deepStrictEqual(p.fix, { quantization: null })
  })

  it("a quantization that does not match the checkpoint's", () => {
    const r = run([M, "--quantization", "gptq"], { model: traits(qwen25_7b_awq) })
    const p = r.errors.find((e) => e.ruleId === "model.quantization-matches-config")!
    assert.include(
      p.vllmText,
      "(awq) does not match the quantization method specified in the `quantization` argument (gptq)"
    )
    assert.deepStrictEqual(fired([M, "--quantization", "awq_marlin"], { model: traits(qwen25_7b_awq) }), [])
  })

  it("bf16 on a GPU below compute capability 8.0, fixed to half", () => {
    const r = run([M, "--dtype", "bfloat16"], { gpus: t4(1) })
    const p = r.errors.find((e) => e.ruleId === "platform.bfloat16-needs-compute-8")!
    assert.include(p.vllmText, "Your Tesla T4 GPU has compute capability 7.5.")
    assert.deepStrictEqual(p.fix, { dtype: "half" })
    assert.notInclude(fired([M, "--dtype", "bfloat16"], { gpus: l4(1) }), "platform.bfloat16-needs-compute-8")
  })

  it("data_parallel_size_local within data_parallel_size", () => {
    const r = run([M, "-dp", "2", "-dpl", "4"])
    assert.strictEqual(
      r.errors[0]!.vllmText,
      "data_parallel_size_local (4) must be <= data_parallel_size (2)"
    )
  })

  it("EPLB without expert parallelism, and experts needed for expert parallelism", () => {
    const eplb = run([M, "--enable-eplb"], { model: traits(mixtral_8x7b) })
    assert.strictEqual(eplb.errors[0]!.vllmText, "enable_expert_parallel must be True to use EPLB.")
    assert.deepStrictEqual(eplb.errors[0]!.fix, { enable_expert_parallel: true })
    const dense = run([M, "--enable-expert-parallel"])
    assert.strictEqual(
      dense.errors[0]!.vllmText,
      "Number of experts in the model must be greater than 0 when expert parallelism is enabled."
    )
    assert.deepStrictEqual(
      fired([M, "--enable-expert-parallel", "--enable-eplb", "-tp", "8"], { model: traits(mixtral_8x7b) }),
      []
    )
  })

  it("world_size divisible by nnodes (from 0.13, where --nnodes exists)", () => {
    const r = run([M, "-tp", "4", "-pp", "1", "--nnodes", "3"])
    assert.strictEqual(
      r.errors.find((e) => e.ruleId === "arg_utils.world-size-divisible-by-nnodes")!.vllmText,
      "world_size=4 must be divisible by nnodes=3."
    )
    const v011 = Catalogue.byName("main-2025-09-26")!
    assert.isFalse(v011.byDest.has("nnodes"))
  })

  it("more GPUs than the host has", () => {
    const r = run([M, "-tp", "4"], { gpus: l4(2) })
    const p = r.errors.find((e) => e.ruleId === "parallel.world-size-within-gpus")!
    assert.strictEqual(p.vllmText, "please set tensor_parallel_size (4) to less than max local gpu count (2)")
    assert.deepStrictEqual(p.fix, { tensor_parallel_size: 2 })
  })

  it("checks that only about v0.11 had apply to that snapshot only", () => {
    const v011 = Catalogue.byName("main-2025-09-26")!
    const argv = [M, "-pp", "2", "--async-scheduling"]
    assert.include(fired(argv, { catalogue: v011 }), "scheduler.async-scheduling-without-pp")
    assert.notInclude(fired(argv), "scheduler.async-scheduling-without-pp")
  })

  it("warn with the numbers when the KV cache cannot hold one sequence of max_model_len", () => {
    // Llama-3.1-8B at 131072 tokens: 128 KiB a token, 16 GiB for one sequence; an L4 at 0.9 leaves ~2.3 GiB
    const r = run(["meta-llama/Llama-3.1-8B-Instruct"], { model: traits(llama31_8b), gpus: l4(1) })
    assert.deepStrictEqual(r.errors, [])
    const w = r.warnings.find((p) => p.ruleId === "kv_cache_utils.cache-holds-max-model-len")!
    assert.match(
      w.vllmText,
      /^To serve at least one request with the models's max seq len \(131072\), \(16\.00 GiB KV cache is needed/
    )
    assert.match(w.vllmText, /the estimated maximum model length is \d+\./)
    assert.include(w.explanation, "131072 bytes a token")
    const fits = w.fix.max_model_len as number
    assert.isBelow(fits, 131072)
    assert.deepStrictEqual(
      fired(["m", "--max-model-len", String(fits)], { model: traits(llama31_8b), gpus: l4(1) }),
      []
    )
  })

  it("report every problem at once and a fixed command that passes them all", () => {
    const argv = [
      M,
      "--tensor_parallel_size",
      "8",
      "--max-model-len=131072",
      "--quantization",
      "awk",
      "--enforce-eager"
    ]
    const r = run(argv, { gpus: h100(8) })
    assert.deepStrictEqual(
      r.errors.map((e) => e.ruleId),
      ["model.unknown-quantization", "model.max-model-len-within-derived", "model.heads-divisible-by-tp"]
    )
    // the unknown quantization goes back to None: the flag is left out
    assert.deepStrictEqual(r.fixedArgv, [
      M,
      "--enforce-eager",
      "--max-model-len",
      "32768",
      "--tensor-parallel-size",
      "4"
    ])
    assert.deepStrictEqual(run(r.fixedArgv!).errors, [])
  })
})
