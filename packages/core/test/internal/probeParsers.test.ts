import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as parsers from "../../src/internal/probeParsers.js"

describe("probeParsers", () => {
  it("parseGpus reads nvidia-smi csv rows with and without compute_cap", () => {
    const output = [
      "0, NVIDIA A100-SXM4-80GB, 81920, 4, GPU-6a1b7c2d-0000-1111-2222-333344445555, 8.0",
      "1, NVIDIA GeForce RTX 3090, 24576, [N/A], GPU-aaaa, 8.6",
      ""
    ].join("\n")
    assert.deepStrictEqual(
      parsers.parseGpus(output, true),
      Either.right([
        {
          index: 0,
          name: "NVIDIA A100-SXM4-80GB",
          memoryTotalMiB: 81920,
          memoryUsedMiB: 4,
          uuid: "GPU-6a1b7c2d-0000-1111-2222-333344445555",
          computeCapability: "8.0"
        },
        {
          index: 1,
          name: "NVIDIA GeForce RTX 3090",
          memoryTotalMiB: 24576,
          memoryUsedMiB: 0,
          uuid: "GPU-aaaa",
          computeCapability: "8.6"
        }
      ])
    )
    assert.deepStrictEqual(
      parsers.parseGpus("0, Tesla T4, 15360, 0, GPU-t4\n", false),
      Either.right([{ index: 0, name: "Tesla T4", memoryTotalMiB: 15360, memoryUsedMiB: 0, uuid: "GPU-t4" }])
    )
    assert.deepStrictEqual(parsers.parseGpus("", true), Either.right([]))
    assert.isTrue(Either.isLeft(parsers.parseGpus("0, Tesla T4, 15360\n", true)))
    assert.isTrue(Either.isLeft(parsers.parseGpus("x, Tesla T4, lots, 0, GPU-t4, 7.5\n", true)))
  })

  it("isUnknownField recognises an old driver's rejection", () => {
    assert.isTrue(
      parsers.isUnknownField('Field "compute_cap" is not a valid field to query.\n', "compute_cap")
    )
    assert.isFalse(parsers.isUnknownField("0, T4, 1, 0, GPU-x, 7.5", "compute_cap"))
  })

  it("parseGpuProcesses reads pid, uuid and memory; [N/A] memory is absent", () => {
    assert.deepStrictEqual(
      parsers.parseGpuProcesses("1234, GPU-aaaa, 70000\n5678, GPU-bbbb, [N/A]\n"),
      Either.right([
        { pid: 1234, gpuUuid: "GPU-aaaa", usedMemoryMiB: 70000 },
        { pid: 5678, gpuUuid: "GPU-bbbb" }
      ])
    )
    assert.deepStrictEqual(parsers.parseGpuProcesses(""), Either.right([]))
    assert.isTrue(Either.isLeft(parsers.parseGpuProcesses("abc, GPU-x, 1\n")))
  })

  it("parsePortHolder reads ss -ltnpH lines in their several address forms", () => {
    const line = 'LISTEN 0      2048       0.0.0.0:30000      0.0.0.0:*    users:(("python3",pid=4242,fd=17))'
    assert.deepStrictEqual(parsers.parsePortHolder(line, 30000), {
      port: 30000,
      pid: 4242,
      command: "python3"
    })
    assert.deepStrictEqual(
      parsers.parsePortHolder(
        'LISTEN 0 4096 [::]:8080 [::]:* users:(("sglang::sched",pid=9,fd=3),("x",pid=10,fd=3))',
        8080
      ),
      { port: 8080, pid: 9, command: "sglang::sched" }
    )
    assert.deepStrictEqual(parsers.parsePortHolder("LISTEN 0 128 *:22 *:*", 22), { port: 22 })
    assert.isUndefined(parsers.parsePortHolder(line, 3000))
    assert.isUndefined(parsers.parsePortHolder("", 30000))
  })
})
