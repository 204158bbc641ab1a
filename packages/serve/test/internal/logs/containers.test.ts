/**
 * The container signatures: every listed wording is named with its kind and the numbers it
 * carries, the fix says what to do, and they win over the classes that used to name these lines
 * (a DistributedError for NCCL's shared memory, a CudaError for the driver and NVML).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Classifier from "../../../src/Classifier.js"
import type { LaunchFailure } from "../../../src/Failures.js"
import {
  driverTooOld,
  engineUnreachable,
  gpuUnavailable,
  sharedMemory
} from "../../../src/internal/logs/signatures/containers.js"

const failureOf = (text: string): LaunchFailure => {
  const { failure } = Classifier.classifyText(text)
  assert.isDefined(failure, text)
  return failure!
}

const field = (f: LaunchFailure, name: string): unknown => (f as unknown as Record<string, unknown>)[name]

describe("container signatures: each wording, its kind and numbers", () => {
  const kinds: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    [
      engineUnreachable.id,
      ["permission-denied", "permission-denied", "permission-denied", "not-running", "not-running"]
    ],
    [
      gpuUnavailable.id,
      ["no-runtime", "no-runtime", "no-runtime", "no-runtime", "no-runtime", "no-runtime", "lost", "lost"]
    ],
    [
      driverTooOld.id,
      [
        "container-requirement",
        "container-requirement",
        "cuda-init",
        "forward-compatibility",
        "cuda-init",
        "cuda-init"
      ]
    ],
    [sharedMemory.id, ["nccl", "nccl", "nccl", "nccl", "torch", "torch", "ray"]]
  ]
  for (const [id, expected] of kinds) {
    const signature = [engineUnreachable, gpuUnavailable, driverTooOld, sharedMemory].find(
      (s) => s.id === id
    )!
    it(`${id}: every wording is a ${signature.tag} of its kind, with a fix`, () => {
      assert.strictEqual(signature.variants.length, expected.length)
      signature.variants.forEach((variant, i) => {
        const f = failureOf(variant.text)
        assert.strictEqual(f._tag, signature.tag, variant.from)
        assert.strictEqual(field(f, "kind"), expected[i], variant.from)
        assert.isString(f.fix?.action, variant.from)
      })
    })
  }

  it("the driver's numbers: what the image needs and what the driver runs", () => {
    const requirement = failureOf(driverTooOld.variants[0]!.text)
    assert.strictEqual(field(requirement, "requiredCuda"), "12.6")
    assert.isUndefined(field(requirement, "driverCuda"))
    assert.include(requirement.fix?.action, "upgrade the driver to one that runs CUDA 12.6")
    const csv = failureOf(driverTooOld.variants[1]!.text)
    assert.deepInclude(csv, { requiredCuda: "12.9", driverCuda: "12.6" })
    assert.include(csv.fix?.action, "or use an image built for CUDA 12.6")
    // torch's `found version 11060` is the CUDA the driver runs
    const torch = failureOf(driverTooOld.variants[2]!.text)
    assert.strictEqual(field(torch, "driverCuda"), "11.6")
    assert.include(torch.fix?.action, "built for CUDA 11.6")
    const forward = failureOf(driverTooOld.variants[3]!.text)
    assert.include(forward.fix?.action, "forward compatibility works only on datacenter GPUs")
    const driverCondition = failureOf(
      "nvidia-container-cli: requirement error: unsatisfied condition: driver >= 410"
    )
    assert.strictEqual(field(driverCondition, "kind"), "container-requirement")
    assert.include(driverCondition.fix?.action, "NVIDIA driver 410 or newer")
  })

  it("shared memory: the bytes asked for, and a full /dev/shm named when the log says so", () => {
    const nccl = failureOf(sharedMemory.variants[0]!.text)
    assert.strictEqual(field(nccl, "requestedBytes"), 33030528)
    assert.include(nccl.fix?.action, `"shm"`)
    assert.include(nccl.fix?.action, "/dev/shm is full")
    const ray = failureOf(sharedMemory.variants[6]!.text)
    assert.strictEqual(field(ray, "requestedBytes"), 10200547328)
    assert.notInclude(ray.fix?.action, "is full")
  })

  it("the daemon: the socket, and the fix for a refused user or a stopped daemon", () => {
    const denied = failureOf(engineUnreachable.variants[0]!.text)
    assert.strictEqual(field(denied, "socket"), "unix:///var/run/docker.sock")
    assert.include(denied.fix?.action, "sudo usermod -aG docker $USER")
    const down = failureOf(engineUnreachable.variants[4]!.text)
    assert.strictEqual(field(down, "socket"), "unix:///var/run/docker.sock")
    assert.include(down.fix?.action, "sudo systemctl start docker")
    // docker's words inside a wrapper's exception are the reason, not the wrapper's
    assert.match(down.reason, /^The content of stderr is 'unable to get image 'redis:latest': Cannot connect/)
    const podman = failureOf(engineUnreachable.variants[3]!.text)
    assert.include(podman.fix?.action, "podman machine start")
  })

  it("the GPUs: docker's fix names the toolkit, podman's the CDI spec, a lost GPU a restart", () => {
    const docker = failureOf(gpuUnavailable.variants[0]!.text)
    assert.strictEqual(field(docker, "tool"), "docker")
    assert.include(docker.fix?.action, "sudo nvidia-ctk runtime configure --runtime=docker")
    const podman = failureOf(gpuUnavailable.variants[3]!.text)
    assert.strictEqual(field(podman, "tool"), "podman")
    assert.match(
      podman.fix?.action ?? "",
      /^no CDI spec.*nvidia-ctk cdi generate --output=\/etc\/cdi\/nvidia\.yaml/
    )
    const cdi = failureOf(gpuUnavailable.variants[5]!.text)
    assert.strictEqual(field(cdi, "tool"), "docker")
    assert.include(cdi.fix?.action, "nvidia-ctk cdi generate")
    const lost = failureOf(gpuUnavailable.variants[6]!.text)
    assert.include(lost.fix?.action, "restart the container")
    assert.include(lost.fix?.action, "no-cgroups = true")
  })
})

describe("container signatures come first", () => {
  it("NCCL's shared-memory segment under torch's DistBackendError is the root cause, named by its line", () => {
    const f = failureOf(sharedMemory.variants[2]!.text)
    assert.strictEqual(f._tag, "SharedMemoryTooSmall")
    assert.strictEqual(
      f.reason,
      "Error while creating shared memory segment /dev/shm/nccl-F9ffgB (size 9637888)`"
    )
  })

  it("a shared-memory line later in the log beats the NCCL error an earlier rank printed", () => {
    const f = failureOf(
      [
        "(VllmWorkerProcess pid=221) ERROR 04-06 20:46:48 [multiproc_worker_utils.py:238] torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
        "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-xxxxx (size 7340384)"
      ].join("\n")
    )
    assert.strictEqual(f._tag, "SharedMemoryTooSmall")
  })

  it("the driver and NVML's lost GPUs are not a generic CudaError any more; other NVML failures are", () => {
    assert.strictEqual(failureOf(driverTooOld.variants[3]!.text)._tag, "CudaDriverTooOld")
    assert.strictEqual(failureOf("Failed to initialize NVML: Unknown Error")._tag, "ContainerGpuUnavailable")
    assert.strictEqual(
      failureOf("Failed to initialize NVML: Driver/library version mismatch")._tag,
      "CudaError"
    )
  })

  it("attaching to another process's segment is not a size problem: it stays a DistributedError", () => {
    const f = failureOf(
      "[2026-05-22 10:26:17] d4fde3314201:13740:13740 [7] misc/shmutils.cc:132 NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl- (size 0), error: No such file or directory (2)"
    )
    assert.strictEqual(f._tag, "DistributedError")
  })

  it("an image without kernels for the GPU stays a CudaError, its fix names the architecture", () => {
    const f = failureOf(
      "NVIDIA B200 with CUDA capability sm_100 is not compatible with the current PyTorch installation."
    )
    assert.strictEqual(f._tag, "CudaError")
    assert.include(f.fix?.action, "not built for this GPU (sm_100)")
    assert.include(f.fix?.action, "TORCH_CUDA_ARCH_LIST")
  })

  it("a bare bus error stays a crash, its fix points at /dev/shm first", () => {
    const f = failureOf("Fatal Python error: Bus error")
    assert.strictEqual(f._tag, "ProcessExited")
    assert.include(f.fix?.action, "/dev/shm")
  })
})
