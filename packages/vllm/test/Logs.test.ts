/**
 * The vLLM classifier on real public logs (corpus/logs/cases, each with its thread's URL in its
 * .json): a normal start's phases in order, and one case for each failure of the reference's
 * table, named with its root cause (the line above `Engine core initialization failed`) and,
 * where the message carries the numbers, the exact fix.
 */
import { assert, describe, it } from "@effect/vitest"
import { classifyText } from "@mlops/serve/Classifier"
import { logs } from "../src/Logs.js"
import { loadCase } from "./support/corpus.js"

const classify = (id: string) => classifyText(loadCase(id).text, undefined, [logs])

describe("vLLM log lifecycle", () => {
  it("reads a whole real start (vllm 15018, 0.7.4): phases in order, capacity, listening, ready", () => {
    const { events, failure } = classify("vllm-project-vllm-15018")
    assert.isUndefined(failure)
    assert.deepStrictEqual(
      events.flatMap((e) => (e._tag === "PhaseStarted" ? [e.phase] : [])),
      [
        "starting",
        "args-resolved",
        "distributed-init",
        "weights-loading",
        "weights-loaded",
        "kv-cache",
        "cuda-graph",
        "http-up",
        "ready"
      ]
    )
    const capacity = events.find((e) => e._tag === "Capacity")
    assert.deepInclude(capacity, { contextLen: 4096, maxRunningRequests: 2, availableGpuMemGB: 2.44 })
    assert.deepInclude(
      events.find((e) => e._tag === "Listening"),
      { url: "http://0.0.0.0:8199" }
    )
    assert.isTrue(events.some((e) => e._tag === "Ready"))
  })

  it("reads V1's sizing lines with thousands separators (gpustack 2514)", () => {
    const { events } = classify("gpustack-gpustack-2514")
    assert.deepInclude(
      events.find((e) => e._tag === "Capacity"),
      { maxTotalNumTokens: 162800, contextLen: 8192 }
    )
  })
})

/** [case, the failure the log shows, the fix it names (when the message carries its numbers)] */
const failures: ReadonlyArray<readonly [string, string, Record<string, unknown> | undefined]> = [
  ["vllm-project-vllm-16118", "OOM", { "--max-model-len": 435584 }],
  ["vllm-project-vllm-20305", "OOM", { "--gpu-memory-utilization": 0.64 }],
  ["vllm-project-vllm-10034", "OOM", undefined],
  ["vllm-project-vllm-2565", "InvalidArgument", { "--max-model-len": 4096 }],
  ["vllm-project-vllm-5864", "UnsupportedConfig", undefined],
  ["runpod-workers-worker-vllm-43", "TrustRemoteCodeRequired", { "--trust-remote-code": null }],
  ["vllm-project-vllm-2652", "InvalidArgument", { "--tensor-parallel-size": 4 }],
  ["vllm-project-vllm-7514", "PortInUse", undefined],
  ["vllm-project-vllm-7699", "DistributedError", undefined],
  ["vllm-project-vllm-1153", "UnsupportedConfig", { "--dtype": "half" }],
  ["vllm-project-vllm-3829", "InvalidArgument", { "--quantization": "bitsandbytes" }],
  ["vllm-project-vllm-16231", "UnsupportedConfig", undefined],
  ["vllm-project-production-stack-276", "SharedMemoryTooSmall", undefined],
  ["vllm-project-vllm-5510", "CudaDriverTooOld", undefined]
]

describe("vLLM failure signatures on real logs", () => {
  for (const [id, tag, flags] of failures) {
    it(`${id} (${loadCase(id).url}) is ${tag}${flags === undefined ? "" : `, fixed by ${JSON.stringify(flags)}`}`, () => {
      const c = loadCase(id)
      assert.strictEqual(c.label, tag, "the corpus label")
      const { failure } = classify(id)
      assert.strictEqual(failure?._tag, tag)
      if (flags !== undefined) assert.deepStrictEqual(failure?.fix?.flags, flags)
    })
  }
})

describe("vLLM failures name vLLM", () => {
  it("an argparse refusal and a dead engine core say vLLM in their headline, not SGLang", () => {
    const refused = classify("opea-project-genaicomps-336").failure
    assert.strictEqual(refused?._tag, "ArgparseError")
    assert.match(refused?.message ?? "", /^vLLM rejected the command line/)
    const died = classify("docker-model-runner-1009").failure
    assert.strictEqual(died?._tag, "ProcessExited")
    assert.match(died?.message ?? "", /^vLLM failed/)
  })
})
