import { assert, describe, it } from "@effect/vitest"
import * as CrossNodeCheck from "../src/CrossNodeCheck.js"

// documentation addresses (RFC 5737): data only, nothing is reached

const node = (host: string, over: Partial<CrossNodeCheck.NodeFacts> = {}): CrossNodeCheck.NodeFacts => ({
  host,
  install: "sglang 0.5.11",
  modelConfig: "a".repeat(64),
  gpus: 8,
  clockOffsetMs: 12,
  interfaces: [{ name: "eth0", address: `192.0.2.${host === "a" ? 1 : 2}`, prefix: 24 }],
  ...over
})
const o = { modelPath: "/models/DeepSeek-V3", gpusPerNode: 8, headAddress: "192.0.2.1" }

describe("CrossNodeCheck.compare", () => {
  it("nodes that agree: nothing to say", () => {
    assert.deepStrictEqual(CrossNodeCheck.compare([node("a"), node("b")], o), [])
  })

  it("every problem at once, each naming its host and its fix", () => {
    const problems = CrossNodeCheck.compare(
      [
        node("a"),
        node("b", { install: "sglang 0.5.9", gpus: 4 }),
        node("c", { modelConfig: undefined, clockOffsetMs: -42_000 }),
        node("d", { modelConfig: "b".repeat(64) })
      ],
      o
    )
    assert.deepStrictEqual(
      problems.map((p) => p._tag),
      ["InstallsDiffer", "ModelMissing", "ModelsDiffer", "TooFewGpus", "ClockSkew"]
    )
    const [installs, missing, differ, gpus, skew] = problems
    assert.deepStrictEqual(installs?._tag === "InstallsDiffer" ? installs.byHost : {}, {
      a: "sglang 0.5.11",
      b: "sglang 0.5.9",
      c: "sglang 0.5.11",
      d: "sglang 0.5.11"
    })
    assert.include(missing?.fix, "copy the model to /models/DeepSeek-V3 on c")
    assert.deepStrictEqual(differ?._tag === "ModelsDiffer" ? Object.keys(differ.byHost) : [], ["a", "b", "d"])
    assert.include(gpus?.fix, "give b 8 GPUs, or lower --tp/--pp")
    assert.deepStrictEqual(skew?._tag === "ClockSkew" ? [skew.host, skew.offsetMs] : [], ["c", -42_000])
  })

  it("a node with several interfaces: the one on the head's subnet is suggested for NCCL and Gloo", () => {
    const [choice] = CrossNodeCheck.compare(
      [
        node("a"),
        node("b", {
          interfaces: [
            { name: "docker0", address: "198.51.100.1", prefix: 24 },
            { name: "ib0", address: "192.0.2.2", prefix: 24 }
          ]
        })
      ],
      o
    )
    assert.strictEqual(choice?._tag, "ChooseInterface")
    if (choice?._tag !== "ChooseInterface") return
    assert.strictEqual(choice.suggested, "ib0")
    assert.include(choice.fix, "NCCL_SOCKET_IFNAME=ib0 GLOO_SOCKET_IFNAME=ib0")
    // none on the head's subnet: said, without a guess
    const [none] = CrossNodeCheck.compare(
      [
        node("a"),
        node("b", {
          interfaces: [node("x").interfaces[0]!, { name: "e1", address: "203.0.113.2", prefix: 24 }].map(
            (i) => ({ ...i, address: i.address.replace("192.0.2", "198.51.100") })
          )
        })
      ],
      o
    )
    assert.isUndefined(none?._tag === "ChooseInterface" ? none.suggested : "x")
  })
})
