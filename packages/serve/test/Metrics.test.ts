import { readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import * as Metrics from "../src/Metrics.js"

// the opening of SGLang's docs/references/production_metrics.md example, copied exactly:
// https://github.com/sgl-project/sglang/blob/main/docs/references/production_metrics.md
const sglangPage = readFileSync(new URL("./fixtures/sglang-production-metrics.txt", import.meta.url), "utf8")

describe("Metrics", () => {
  it("parses a real page: names, labels (a histogram's le too), values in exponent form; comments skipped", () => {
    const samples = Metrics.parse(sglangPage)
    assert.strictEqual(samples.length, 10)
    assert.deepStrictEqual(samples[1], {
      name: "sglang:generation_tokens_total",
      labels: { model_name: "meta-llama/Llama-3.1-8B-Instruct" },
      value: 7_557_572
    })
    assert.deepStrictEqual(samples.at(-1)?.labels, {
      le: "0.04",
      model_name: "meta-llama/Llama-3.1-8B-Instruct"
    })
    assert.strictEqual(Metrics.total(samples, ["sglang:token_usage"]), 0.28)
  })

  it("total sums every series of the first name present (data-parallel engines); increase is after − before", () => {
    // vLLM under DP: one series per engine label (vllm PR#24049's query result, 3 of its 8 engines)
    const page = (a: number, b: number, c: number) =>
      Metrics.parse(
        [
          `vllm:spec_decode_num_drafts_total{engine="0",model_name="/home/models/Qwen3-0.6B"} ${a}`,
          `vllm:spec_decode_num_drafts_total{engine="1",model_name="/home/models/Qwen3-0.6B"} ${b}`,
          `vllm:spec_decode_num_drafts_total{engine="2",model_name="/home/models/Qwen3-0.6B"} ${c}`
        ].join("\n")
      )
    assert.strictEqual(Metrics.total(page(22, 15, 29), ["sglang_x", "vllm:spec_decode_num_drafts_total"]), 66)
    assert.strictEqual(
      Metrics.increase(page(1, 2, 3), page(22, 15, 29), ["vllm:spec_decode_num_drafts_total"]),
      60
    )
    assert.isUndefined(Metrics.total(page(1, 1, 1), ["vllm:generation_tokens_total"]))
    // a gauge per scheduler is one figure: their mean
    assert.strictEqual(Metrics.mean(page(2, 3, 4), ["vllm:spec_decode_num_drafts_total"]), 3)
    // a server restarted between the pages counts from zero
    assert.strictEqual(
      Metrics.increase(page(100, 0, 0), page(5, 0, 0), ["vllm:spec_decode_num_drafts_total"]),
      5
    )
  })

  it("escaped quotes in label values; lines it cannot read are skipped", () => {
    const samples = Metrics.parse('a{x="say \\"hi\\""} 1\nnot a sample\nb 2 1700000000000\n')
    assert.deepStrictEqual(
      samples.map((s) => [s.name, s.labels, s.value]),
      [
        ["a", { x: 'say "hi"' }, 1],
        ["b", {}, 2]
      ]
    )
  })
})
