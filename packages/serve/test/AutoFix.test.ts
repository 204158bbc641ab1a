import { assert, describe, it } from "@effect/vitest"
import { applyFix } from "../src/AutoFix.js"
import type { FlagInfo } from "../src/Engine.js"

// a tiny flag table written for this test: how argv words name flags, as an engine would say
const table: ReadonlyArray<FlagInfo> = [
  { flag: "--model-path", field: "model_path", takesValue: true, list: false, secret: false },
  { flag: "--tp-size", field: "tp_size", takesValue: true, list: false, secret: false },
  { flag: "--port", field: "port", takesValue: true, list: false, secret: false },
  {
    flag: "--mem-fraction-static",
    field: "mem_fraction_static",
    takesValue: true,
    list: false,
    secret: false
  },
  { flag: "--cuda-graph-bs", field: "cuda_graph_bs", takesValue: true, list: true, secret: false },
  {
    flag: "--disable-cuda-graph",
    field: "disable_cuda_graph",
    takesValue: false,
    list: false,
    secret: false
  },
  { flag: "--served-model-name", field: "served_model_name", takesValue: true, list: false, secret: false }
]
const aliases: Record<string, string> = {
  "--tp": "--tp-size",
  "--tensor-parallel-size": "--tp-size",
  "--m": "--model-path"
}
const flags = {
  spec: (word: string) => {
    const head = word.split("=", 1)[0]!
    const name = aliases[head] ?? head
    return table.find((f) => f.flag === name)
  }
}

describe("autofix", () => {
  it("sets a flag given under another spelling, keeping everything else in place", () => {
    assert.deepStrictEqual(
      applyFix(["--model-path", "/m", "--tp", "2", "--port=31000"], { flags: { "--tp-size": 1 } }, flags),
      ["--model-path", "/m", "--port=31000", "--tp-size", "1"]
    )
  })

  it("adds switches, drops flags with their values, and splits list values", () => {
    assert.deepStrictEqual(
      applyFix(
        ["--model-path", "/m", "--mem-fraction-static", "0.99", "--cuda-graph-bs", "1", "2"],
        {
          flags: { "--disable-cuda-graph": null, "--cuda-graph-bs": "4 8" },
          removeFlags: ["--mem-fraction-static"]
        },
        flags
      ),
      ["--model-path", "/m", "--disable-cuda-graph", "--cuda-graph-bs", "4", "8"]
    )
  })

  it("has nothing to apply without flags", () => {
    assert.isUndefined(applyFix(["--model-path", "/m"], { action: "free some GPU memory" }, flags))
    assert.isUndefined(applyFix(["--model-path", "/m"], undefined, flags))
  })

  it("splits a list flag's values on spaces but keeps a scalar's value whole", () => {
    assert.deepStrictEqual(applyFix(["--m", "/m"], { flags: { "--served-model-name": "a b" } }, flags), [
      "--m",
      "/m",
      "--served-model-name",
      "a b"
    ])
  })
})
