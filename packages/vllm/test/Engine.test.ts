import { assert, describe, it } from "@effect/vitest"
import * as Metrics from "@mlops/serve/Metrics"
import { LaunchRulesViolated } from "@mlops/serve/Violations"
import { Effect, Either } from "effect"
import { VllmEngine } from "../src/Engine.js"
import { lists } from "../src/internal/engine/readiness.js"
import { h100, qwen25_7b, traits } from "./fixtures/models.js"

const M = "Qwen/Qwen2.5-7B-Instruct"

const either = <A, E>(effect: Effect.Effect<A, E>) => Effect.runSync(Effect.either(effect))
const values = (args: object) => args as Record<string, unknown>

describe("VllmEngine", () => {
  it("starts `vllm serve` on port 8000 and reads the model and port from the argv", () => {
    assert.deepStrictEqual(VllmEngine.command.shown, ["vllm", "serve"])
    assert.strictEqual(VllmEngine.modelOf(["-tp", "2", M, "--port", "8001"]), M)
    assert.strictEqual(VllmEngine.modelOf(["--enforce-eager", "--model", M]), M)
    assert.strictEqual(VllmEngine.portOf([M, "--port=8001"]), 8001)
    assert.strictEqual(VllmEngine.portOf([M]), 8000)
  })

  it("writes one command as the commands of its ranks: --nnodes, --node-rank, --master-addr/port, --headless on the others", () => {
    const argv = ["/m", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", "--nnodes", "2"]
    const ranks = VllmEngine.ranks(argv, { nodes: 2, head: "head-node", port: 29500 })
    assert.deepStrictEqual(ranks, [
      [
        "/m",
        "--tensor-parallel-size",
        "8",
        "--pipeline-parallel-size",
        "2",
        "--nnodes",
        "2",
        "--node-rank",
        "0",
        "--master-addr",
        "head-node",
        "--master-port",
        "29500"
      ],
      [
        "/m",
        "--tensor-parallel-size",
        "8",
        "--pipeline-parallel-size",
        "2",
        "--nnodes",
        "2",
        "--node-rank",
        "1",
        "--master-addr",
        "head-node",
        "--master-port",
        "29500",
        "--headless"
      ]
    ])
    // a rank already written (any spelling) is replaced, not repeated; rank 0 never runs headless
    const again = VllmEngine.ranks(["/m", "--node_rank=1", "--headless"], { nodes: 2, head: "h", port: 1 })
    assert.deepStrictEqual(again[0], [
      "/m",
      "--nnodes",
      "2",
      "--node-rank",
      "0",
      "--master-addr",
      "h",
      "--master-port",
      "1"
    ])
  })

  it("a data-parallel command the nodes share evenly is written in vLLM's data-parallel form, node i from start rank i×local", () => {
    const argv = ["/m", "--data-parallel-size", "4", "--enable-expert-parallel"]
    const [head, other] = VllmEngine.ranks(argv, { nodes: 2, head: "127.0.0.2", port: 13345 })
    // the reference's recipe: node0 serves, node1 is headless from start rank 2
    assert.deepStrictEqual(head, [
      "/m",
      "--data-parallel-size",
      "4",
      "--enable-expert-parallel",
      "--data-parallel-size-local",
      "2",
      "--data-parallel-address",
      "127.0.0.2",
      "--data-parallel-rpc-port",
      "13345"
    ])
    assert.deepStrictEqual(other, [
      "/m",
      "--data-parallel-size",
      "4",
      "--enable-expert-parallel",
      "--data-parallel-size-local",
      "2",
      "--data-parallel-address",
      "127.0.0.2",
      "--data-parallel-rpc-port",
      "13345",
      "--data-parallel-start-rank",
      "2",
      "--headless"
    ])
    // each node runs its local replicas: 2 GPUs per node of 4 in all
    const plan = VllmEngine.gpusOf(values({ data_parallel_size: 4, data_parallel_size_local: 2 }))
    assert.deepStrictEqual([plan.total, plan.nodes, plan.perNode], [4, 2, 2])
    // replicas the nodes cannot share evenly: the tensor form, and no stale data-parallel placement
    const uneven = VllmEngine.ranks(["/m", "-dp", "3", "--data-parallel-start-rank", "1"], {
      nodes: 2,
      head: "h",
      port: 1
    })
    assert.include(uneven[1]!, "--node-rank")
    assert.notInclude(uneven[1]!, "--data-parallel-start-rank")
    // short and mixed spellings are read and replaced too: no stale start rank on rank 0, no tensor-form flags
    const short = VllmEngine.ranks(["/m", "--data-parallel_size", "2", "-dpr", "2", "-n", "2", "-r", "0"], {
      nodes: 2,
      head: "h",
      port: 1
    })
    assert.notInclude(short[0]!, "-dpr")
    assert.notInclude(short[0]!, "--data-parallel-start-rank")
    for (const rank of short) {
      assert.notInclude(rank, "-n")
      assert.notInclude(rank, "-r")
    }
    assert.strictEqual(short[1]![short[1]!.indexOf("--data-parallel-start-rank") + 1], "1")
  })

  it("ships flags near an installed version, names the stand-in otherwise, and knows secrets", () => {
    const near = VllmEngine.shippedFlags("0.13.0")!
    assert.strictEqual(near.source, "shipped")
    const later = VllmEngine.shippedFlags("0.16.0")!
    assert.strictEqual(later.source, "nearest")
    assert.include(later.warning!, "main-2025-12-16")
    assert.deepInclude(near.spec("--max_model_len=4096"), {
      flag: "--max-model-len",
      field: "max_model_len",
      takesValue: true
    })
    assert.deepInclude(near.spec("--api-key"), { secret: true })
    assert.deepInclude(near.spec("--enforce-eager"), { takesValue: false })
    assert.isUndefined(near.spec("--no-such-flag"))
  })

  it("decodes and encodes through its flags; --config is an engine refusal", () => {
    const flags = VllmEngine.shippedFlags("0.13.0")!
    const decoded = Either.getOrThrow(either(flags.decode([M, "-tp", "2", "--enforce-eager"])))
    assert.strictEqual(values(decoded.args).tensor_parallel_size, 2)
    assert.isTrue(decoded.explicit.has("enforce_eager"))
    const words = Either.getOrThrow(
      either(flags.encode(decoded.args, ["tensor_parallel_size", "enforce_eager"]))
    )
    // catalogue order: ModelConfig flags before ParallelConfig ones
    assert.deepStrictEqual(words, [M, "--enforce-eager", "--tensor-parallel-size", "2"])
    const refused = either(flags.decode([M, "--config", "x.yaml"]))
    assert.isTrue(Either.isLeft(refused))
    if (Either.isLeft(refused)) {
      assert.strictEqual(refused.left._tag, "InvalidValue")
      assert.include(refused.left.message, "--config")
      assert.include(refused.left.message, "does not read YAML")
    }
  })

  it("resolve refuses with every violation, vLLM's words, the fix as flags and a fixed command", () => {
    const decoded = Either.getOrThrow(
      either(VllmEngine.shippedFlags("0.13.0")!.decode([M, "-tp", "8", "--max-model-len", "131072"]))
    )
    const result = either(
      VllmEngine.resolve({
        decoded,
        traits: traits(qwen25_7b),
        gpus: h100(8),
        env: {},
        version: "0.13.0"
      })
    )
    assert.isTrue(Either.isLeft(result))
    if (Either.isRight(result)) return
    const refused = result.left
    assert.instanceOf(refused, LaunchRulesViolated)
    assert.deepStrictEqual(
      refused.violations.map((v) => [v._tag, v.ruleId, v.shownFix]),
      [
        ["InvalidArgument", "model.max-model-len-within-derived", "--max-model-len 32768"],
        ["InvalidArgument", "model.heads-divisible-by-tp", "--tensor-parallel-size 4"]
      ]
    )
    assert.include(refused.violations[1]!.engineMessage, "Total number of attention heads (28)")
    assert.isTrue(refused.resolvesAfterFix)
    assert.deepStrictEqual(refused.fixedArgv, [M, "--max-model-len", "32768", "--tensor-parallel-size", "4"])
    assert.deepStrictEqual(
      refused.failures.map((f) => [f._tag, f.fix?.flags]),
      [
        ["InvalidArgument", { "--max-model-len": 32768 }],
        ["InvalidArgument", { "--tensor-parallel-size": 4 }]
      ]
    )
    assert.include(refused.message, "fixed command:")
  })

  it("resolve passes a good command with the KV estimate as a log line when it warns", () => {
    const decoded = Either.getOrThrow(either(VllmEngine.shippedFlags("0.13.0")!.decode([M, "-tp", "4"])))
    const result = either(
      VllmEngine.resolve({
        decoded,
        traits: traits(qwen25_7b),
        gpus: h100(8),
        env: {},
        version: "0.13.0"
      })
    )
    assert.isTrue(Either.isRight(result))
    if (Either.isRight(result)) assert.isTrue(result.right.verified)
  })

  it("is ready after /health 200, /v1/models listing the model, and one completion", () => {
    const steps = VllmEngine.readiness([M, "--port", "8001"])
    assert.deepStrictEqual(
      steps.map((s) => `${s.method} ${s.path}`),
      ["GET /health", "GET /v1/models", "POST /v1/completions"]
    )
    assert.isFalse(steps[0]!.passes(503, ""))
    assert.isTrue(steps[0]!.passes(200, ""))
    assert.isTrue(steps[1]!.passes(200, JSON.stringify({ data: [{ id: "qwen", root: M }] })))
    assert.isFalse(steps[1]!.passes(200, JSON.stringify({ data: [{ id: "other", root: "other" }] })))
    assert.isFalse(lists("not json", M))
    assert.deepInclude(JSON.parse(steps[2]!.body!), { model: M, max_tokens: 1 })
    assert.isTrue(steps[2]!.passes(200, '{"choices":[{"text":" hi"}]}'))
  })

  it("asks for the model by its first --served-model-name, in either spelling", () => {
    for (const argv of [
      [M, "--served-model-name", "qwen", "q2"],
      [M, "--served-model-name=qwen"],
      ["--served_model_name", "qwen", "--model", M]
    ]) {
      const steps = VllmEngine.readiness(argv)
      assert.isTrue(steps[1]!.passes(200, JSON.stringify({ data: [{ id: "qwen", root: "elsewhere" }] })))
      assert.isFalse(steps[1]!.passes(200, JSON.stringify({ data: [{ id: M, root: "other" }] })))
      assert.strictEqual(JSON.parse(steps[2]!.body!).model, "qwen", argv.join(" "))
    }
  })

  it("its /metrics: acceptance length 1 + accepted / drafts over the run (PR#17010), tokens and requests as increases", () => {
    const page = (drafts: number, accepted: number, tokens: number) =>
      Metrics.parse(
        [
          `vllm:spec_decode_num_drafts_total{engine="0",model_name="qwen"} ${drafts}`,
          `vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="qwen"} ${accepted}`,
          `vllm:generation_tokens_total{engine="0",model_name="qwen"} ${tokens}`,
          `vllm:request_success_total{engine="0",finished_reason="length",model_name="qwen"} 3`,
          `vllm:request_success_total{engine="0",finished_reason="stop",model_name="qwen"} ${tokens / 100}`
        ].join("\n")
      )
    const figures = VllmEngine.metrics.figures(page(10, 5, 100), page(110, 125, 500))
    assert.deepStrictEqual(figures, { acceptLength: 2.2, generationTokens: 400, requests: 4 })
    // no drafts during the run: no acceptance length (not speculative)
    assert.isUndefined(VllmEngine.metrics.figures(page(10, 5, 100), page(10, 5, 300)).acceptLength)
    assert.isUndefined(VllmEngine.metrics.enable)
  })
})
