import { assert, describe, it } from "@effect/vitest"
import { phaseIndex } from "@mlops/serve/LaunchEvent"
import { FastCheck } from "effect"
import * as L from "../../src/internal/lifecycleLines.js"
import { parseServerArgs } from "../../src/internal/serverArgsRepr.js"

const PREFIX = "server_args=ServerArgs("

const argValue = FastCheck.oneof(
  FastCheck.constant(null),
  FastCheck.boolean(),
  FastCheck.integer({ min: -1_000_000, max: 1_000_000 }),
  FastCheck.double({ min: 0, max: 1, noNaN: true }).map((n) => Math.round(n * 1000) / 1000),
  FastCheck.string()
)
const argName = FastCheck.stringMatching(/^[a-z][a-z0-9_]{0,20}$/)

describe("lifecycleLines", () => {
  it.prop(
    "the ServerArgs repr it prints parses back to the same values",
    [FastCheck.dictionary(argName, argValue, { maxKeys: 12 })],
    ([values]) => {
      const text = L.serverArgs(values)
      assert.deepStrictEqual(parseServerArgs(text, PREFIX.length), values)
    }
  )

  it("keeps list and object values as their repr text", () => {
    const text =
      "server_args=ServerArgs(cuda_graph_bs=[1, 2, 4], json_model_override_args='{}', lora=None, x={'a': (1, 2)}, y=0.5)"
    assert.deepStrictEqual(parseServerArgs(text, PREFIX.length), {
      cuda_graph_bs: "[1, 2, 4]",
      json_model_override_args: "{}",
      lora: null,
      x: "{'a': (1, 2)}",
      y: 0.5
    })
  })

  it("a successful launch marks each phase once, in lifecycle order, at increasing times", () => {
    const lines = L.successfulLaunch({ tpSize: 2, hybrid: true, mtp: true })
    const marked = lines.filter((l) => l.phase !== undefined)
    const order = marked.map((l) => phaseIndex(l.phase!))
    assert.deepStrictEqual(
      order,
      [...order].sort((a, b) => a - b)
    )
    assert.strictEqual(new Set(order).size, order.length)
    for (let i = 1; i < lines.length; i++) assert.isAtLeast(lines[i]!.at, lines[i - 1]!.at)
    assert.strictEqual(lines[lines.length - 1]!.text.endsWith(L.ready()), true)
  })

  it("prints one line per rank with SGLang's prefix", () => {
    const text = L.toText(L.successfulLaunch({ tpSize: 2 }))
    assert.include(text, "[2026-05-10 12:00:03 TP0] Init torch distributed begin.")
    assert.include(text, "[2026-05-10 12:00:03 TP1] Init torch distributed begin.")
    const single = L.toText(L.successfulLaunch({ tpSize: 1 }))
    assert.include(single, "[2026-05-10 12:00:03] Init torch distributed begin.")
  })

  it("failure tracebacks end with the exception line SGLang users see", () => {
    assert.strictEqual(L.bareAssertion().at(-1), "AssertionError")
    assert.match(
      L.mambaValueError().at(-1)!,
      /^ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration/
    )
    assert.match(
      L.portInUse(0, "0.0.0.0", 30000),
      /\[Errno 98\] .*\('0\.0\.0\.0', 30000\): address already in use$/
    )
    const oom = L.oomTraceback({
      epochMs: 0,
      process: "TP1",
      gpu: 1,
      triedGiB: 2,
      totalGiB: 80,
      freeMiB: 100
    })
    assert.match(oom[0]!, /TP1\] Scheduler hit an exception: Traceback/)
    assert.match(
      oom.at(-1)!,
      /^torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate 2\.00 GiB\. GPU 1/
    )
  })
})
