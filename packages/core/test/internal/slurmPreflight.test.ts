import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { parseNodes, parsePartitions } from "../../src/internal/slurmClusterParsers.js"
import { check } from "../../src/internal/slurmPreflight.js"
import { describeProblem, problemFix } from "../../src/SlurmErrors.js"

/** A cluster in `scontrol show partition -o` and `sinfo -h -N -o %N|%P|%T|%G|%f` form (22.05 field names). */
const partitions = Either.getOrThrow(
  parsePartitions(
    [
      "PartitionName=gpu AllowGroups=ALL AllowAccounts=lab,ml AllowQos=normal,long AllocNodes=ALL Default=YES QoS=N/A DefaultTime=01:00:00 MaxTime=1-00:00:00 State=UP TotalNodes=3",
      "PartitionName=big AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL Default=NO MaxTime=UNLIMITED State=UP TotalNodes=1",
      "PartitionName=old AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL Default=NO MaxTime=UNLIMITED State=DRAIN TotalNodes=1"
    ].join("\n")
  )
)
const nodes = Either.getOrThrow(
  parseNodes(
    [
      "g01|gpu*|mixed|gpu:a100:4(S:0-1)|a100,ib",
      "g02|gpu*|idle|gpu:a100:4(S:0-1)|a100,ib",
      "g03|gpu*|down*|gpu:h100:8(S:0-1)|h100",
      "b01|big|idle|gpu:h100:8(S:0-1)|h100,ib",
      "o01|old|idle|(null)|(null)"
    ].join("\n")
  )
)

const problems = (request: Parameters<typeof check>[0]) => {
  const result = check(request, partitions, nodes)
  if (Either.isRight(result)) throw new Error(`passed: ${JSON.stringify(result.right)}`)
  return result.left.problems
}

describe("slurmPreflight", () => {
  it("a request that fits: the default partition, the nodes in service with enough GPUs", () => {
    const result = check({ gpus: 4, time: "8:00:00", account: "lab", qos: "normal" }, partitions, nodes)
    assert.deepStrictEqual(
      result,
      Either.right({ partition: "gpu", maxTime: "1-00:00:00", nodes: ["g01", "g02"], largestNode: 4 })
    )
  })

  it("more GPUs than any node of the partition has: refused, naming the largest node and a partition that fits", () => {
    const [problem, ...rest] = problems({ gpus: 8, gres: "gpu:a100" })
    assert.deepStrictEqual(rest, [])
    assert.deepStrictEqual(problem, {
      _tag: "NotEnoughGpus",
      partition: "gpu",
      gres: "gpu:a100",
      requested: 8,
      largestNode: 4,
      elsewhere: []
    })
    assert.include(problemFix(problem!), "lower tp × pp to 4")
    const viaIb = problems({ gpus: 6, constraint: "ib" })[0]!
    assert.deepStrictEqual(viaIb._tag === "NotEnoughGpus" ? viaIb.elsewhere : [], ["big"])
    assert.include(problemFix(viaIb), "or use partition big")
    const untyped = problems({ gpus: 16 })[0]!
    assert.include(
      describeProblem(untyped),
      "16 GPUs of GRES gpu on one node requested; the largest node of partition gpu has 8"
    )
    assert.deepStrictEqual(problems({ gpus: 8, partition: "gpu", constraint: "a100" })[0], {
      _tag: "NotEnoughGpus",
      partition: "gpu",
      gres: "gpu",
      requested: 8,
      largestNode: 4,
      elsewhere: []
    })
  })

  it("the only node with enough GPUs is down: NoUsableNode with its state", () => {
    assert.deepStrictEqual(problems({ gpus: 8 }), [
      { _tag: "NoUsableNode", partition: "gpu", states: ["down*"] }
    ])
  })

  it("every problem at once: time over MaxTime, account and QoS not allowed, GRES name of another case", () => {
    const found = problems({ gpus: 2, gres: "GPU", time: "2-00:00:00", account: "guest", qos: "high" })
    assert.deepStrictEqual(
      found.map((p) => p._tag),
      ["TimeLimitTooLong", "AccountNotAllowed", "QosNotAllowed", "GresNotFound"]
    )
    assert.include(problemFix(found[3]!), "gpu:a100, gpu:h100")
    assert.include(
      describeProblem(found[0]!),
      "time limit 2-00:00:00 exceeds partition gpu's MaxTime 1-00:00:00"
    )
  })

  it("an unknown partition lists the known ones; a drained partition and a missing feature are named", () => {
    assert.deepStrictEqual(problems({ gpus: 1, partition: "gpus" }), [
      { _tag: "PartitionNotFound", partition: "gpus", known: ["gpu", "big", "old"] }
    ])
    assert.deepStrictEqual(
      problems({ gpus: 0, partition: "old" }).map((p) => p._tag),
      ["PartitionNotUp"]
    )
    assert.deepStrictEqual(problems({ gpus: 1, constraint: "v100" }), [
      { _tag: "ConstraintUnmatched", partition: "gpu", constraint: "v100" }
    ])
  })

  it("a partition whose nodes have no GPUs at all says so", () => {
    assert.deepStrictEqual(
      problems({ gpus: 1, partition: "old" }).map((p) => p._tag),
      ["PartitionNotUp", "GresNotFound"]
    )
  })

  it("more nodes than the partition has in service with the GPUs each needs: refused, naming both counts", () => {
    const [problem, ...rest] = problems({ gpus: 4, nodes: 3 })
    assert.deepStrictEqual(rest, [])
    assert.deepStrictEqual(problem, {
      _tag: "TooFewNodes",
      partition: "gpu",
      requested: 3,
      usable: 2,
      gpusPerNode: 4
    })
    assert.include(describeProblem(problem!), "3 nodes with 4 GPUs each requested; partition gpu has 2")
    assert.include(problemFix(problem!), "span at most 2 node(s) (--nodes)")
    // two of them fit
    assert.isTrue(Either.isRight(check({ gpus: 4, nodes: 2 }, partitions, nodes)))
  })
})
