/**
 * How a launch comes to run from an image: the runtime and placement chosen together from the
 * host's hosts.json entry and the request (each form with the placements that run it), the
 * specs a deployment records, and what the image runtime reads from an image (its CUDA
 * requirement, the version its tag names). The containers themselves run on a real Docker
 * Engine and podman in the e2e tests.
 */
import { assert, describe, it } from "@effect/vitest"
import * as HostConfig from "@mlops/core/HostConfig"
import * as Probes from "@mlops/core/Probes"
import * as ContainerPlacement from "@mlops/serve/ContainerPlacement"
import * as ImageRuntime from "@mlops/serve/ImageRuntime"
import * as Placement from "@mlops/serve/Placement"
import * as Placements from "@mlops/serve/Placements"
import * as ProcessGroupPlacement from "@mlops/serve/ProcessGroupPlacement"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import * as Runtime from "@mlops/serve/Runtime"
import * as Runtimes from "@mlops/serve/Runtimes"
import * as SlurmPlacement from "@mlops/serve/SlurmPlacement"
import { Either } from "effect"

const plain = HostConfig.inMemory({ alias: "ct129", user: "ml" })
const withImage = HostConfig.inMemory({
  alias: "ct129",
  user: "ml",
  container: { image: "lmsysorg/sglang:v0.5.11", runtime: "podman", shm: "64g" }
})
const login = HostConfig.HostConfig.make({
  ...HostConfig.inMemory({ alias: "login1", user: "ml" }),
  slurm: { partition: "gpu" }
})

const choose = (
  host: HostConfig.HostConfig,
  asked: { runtime?: Runtime.Spec; placement?: Placement.Spec } = {}
) =>
  Either.flatMap(Runtime.resolve(Runtimes.builtIn, host, asked.runtime), (runtime) =>
    Either.map(Placement.resolve(Placements.builtIn, host, runtime.form, asked.placement), (placement) => ({
      runtime,
      placement
    }))
  )

describe("an image runtime and a container placement, chosen together", () => {
  it("a host whose entry names an image runs every launch from it in a container, with the entry's tool and shared memory", () => {
    const chosen = Either.getOrThrow(choose(withImage))
    assert.deepStrictEqual(chosen.runtime.spec, {
      kind: "image",
      image: "lmsysorg/sglang:v0.5.11",
      tool: "podman"
    })
    assert.strictEqual(chosen.runtime.form, "InImage")
    assert.deepStrictEqual(chosen.placement.spec, { kind: "container", shm: "64g" })
    assert.isTrue(chosen.placement.onHost)
  })

  it("--image on a plain host: docker and a private 32g /dev/shm by default", () => {
    const chosen = Either.getOrThrow(
      choose(plain, { runtime: ImageRuntime.spec({ image: "vllm/vllm-openai:v0.13.0" }) })
    )
    assert.deepStrictEqual(chosen.runtime.spec, {
      kind: "image",
      image: "vllm/vllm-openai:v0.13.0",
      tool: "docker"
    })
    assert.deepStrictEqual(chosen.placement.spec, { kind: "container", shm: "32g" })
  })

  it("--python on a host whose entry names an image: a Python environment on the host, in a process group", () => {
    const chosen = Either.getOrThrow(choose(withImage, { runtime: PythonEnvRuntime.spec("~/ml-env") }))
    assert.strictEqual(chosen.runtime.form, "OnHost")
    assert.deepStrictEqual(chosen.placement.spec, ProcessGroupPlacement.spec)
  })

  it("--runtime docker alone on a host whose entry names an image: that image, with docker", () => {
    const chosen = Either.getOrThrow(choose(withImage, { runtime: ImageRuntime.spec({ tool: "docker" }) }))
    assert.deepStrictEqual(chosen.runtime.spec, {
      kind: "image",
      image: "lmsysorg/sglang:v0.5.11",
      tool: "docker"
    })
  })

  it("an image runtime without an image anywhere is refused, naming both ways to give one", () => {
    const refused = choose(plain, { runtime: ImageRuntime.spec({ tool: "podman" }) })
    assert.isTrue(Either.isLeft(refused))
    if (Either.isLeft(refused)) {
      assert.strictEqual(refused.left._tag, "InvalidRuntime")
      assert.include(refused.left.message, "--image")
      assert.include(refused.left.message, "hosts.json")
    }
  })

  it("a container asked for without an image, and a process group asked for with one, are refused", () => {
    const noImage = choose(plain, { placement: ContainerPlacement.spec({ shm: "16g" }) })
    assert.isTrue(Either.isLeft(noImage) && noImage.left._tag === "InvalidPlacement")
    const group = choose(plain, {
      runtime: ImageRuntime.spec({ image: "img:1" }),
      placement: ProcessGroupPlacement.spec
    })
    assert.isTrue(Either.isLeft(group) && group.left.message.includes("not an image"))
  })

  it("a Slurm login node does not quietly run an image on itself: the choice is refused with what to do", () => {
    const refused = choose(login, { runtime: ImageRuntime.spec({ image: "lmsysorg/sglang:v0.5.11" }) })
    assert.isTrue(Either.isLeft(refused))
    if (Either.isLeft(refused)) {
      assert.strictEqual(refused.left._tag, "InvalidPlacement")
      assert.include(refused.left.message, "enroot")
    }
    // a Python environment there is a Slurm job as before
    const job = Either.getOrThrow(choose(login))
    assert.strictEqual(job.placement.spec.kind, SlurmPlacement.name)
  })

  it("the recorded runtime spec names the image and the tool, not how this launch pulled it (a relaunch with --pull always is the same deployment)", () => {
    const always = Either.getOrThrow(
      choose(plain, { runtime: ImageRuntime.spec({ image: "img:1", pull: "always" }) })
    ).runtime.spec
    const never = Either.getOrThrow(
      choose(plain, { runtime: ImageRuntime.spec({ image: "img:1", pull: "never" }) })
    ).runtime.spec
    assert.deepStrictEqual(always, never)
    // and a record's spec makes the runtime again
    assert.isTrue(Either.isRight(Runtime.fromRecord(Runtimes.builtIn, always, plain)))
  })

  it("settings are checked strictly: a shared memory that is not a size, an unknown setting", () => {
    const shm = choose(plain, {
      runtime: ImageRuntime.spec({ image: "img:1" }),
      placement: { kind: "container", shm: "lots" }
    })
    assert.isTrue(Either.isLeft(shm) && shm.left.message.includes("shared memory"))
    const extra = choose(plain, { runtime: { kind: "image", image: "img:1", gpus: "all" } })
    assert.isTrue(Either.isLeft(extra) && extra.left._tag === "InvalidRuntime")
  })
})

describe("what the image runtime reads from an image", () => {
  it("the CUDA it needs: NVIDIA_REQUIRE_CUDA's first condition, else CUDA_VERSION's major.minor", () => {
    assert.strictEqual(
      ImageRuntime.requiredCuda({ NVIDIA_REQUIRE_CUDA: "cuda>=12.8 brand=tesla,driver>=470,driver<471" }),
      "12.8"
    )
    assert.strictEqual(ImageRuntime.requiredCuda({ CUDA_VERSION: "12.4.1" }), "12.4")
    assert.isUndefined(ImageRuntime.requiredCuda({ PATH: "/usr/bin" }))
  })

  it("the version a tag names (v0.5.14, 0.5.18-cu130, v0.13.0), and none for latest, dev or a digest", () => {
    assert.strictEqual(ImageRuntime.tagVersion("lmsysorg/sglang:v0.5.14"), "0.5.14")
    assert.strictEqual(ImageRuntime.tagVersion("lmsysorg/sglang:v0.5.18-cu130"), "0.5.18")
    assert.strictEqual(ImageRuntime.tagVersion("127.0.0.1:5000/vllm/vllm-openai:v0.13.0"), "0.13.0")
    assert.isUndefined(ImageRuntime.tagVersion("lmsysorg/sglang:latest"))
    assert.isUndefined(ImageRuntime.tagVersion("lmsysorg/sglang:dev"))
    assert.isUndefined(ImageRuntime.tagVersion("127.0.0.1:5000/sglang"))
    assert.isUndefined(ImageRuntime.tagVersion("lmsysorg/sglang@sha256:0123"))
  })

  it("the driver's CUDA, as nvidia-container-cli compares it (NVIDIA's table of first drivers per CUDA)", () => {
    assert.strictEqual(Probes.cudaOfDriver("550.54.15"), "12.4")
    assert.strictEqual(Probes.cudaOfDriver("570.86.10"), "12.8")
    assert.strictEqual(Probes.cudaOfDriver("580.65.06"), "13.0")
    assert.strictEqual(Probes.cudaOfDriver("535.183.01"), "12.2")
    assert.isUndefined(Probes.cudaOfDriver("440.33.01"))
  })
})

describe("the container's name", () => {
  it("derived from the deployment and its run directory: the same for one deployment, another for another user's", () => {
    const a = ContainerPlacement.containerName("qwen", "/home/ml/.mlops/deployments/qwen")
    assert.strictEqual(a, ContainerPlacement.containerName("qwen", "/home/ml/.mlops/deployments/qwen"))
    assert.match(a, /^mlops-qwen-[0-9a-f]{8}$/)
    assert.notStrictEqual(a, ContainerPlacement.containerName("qwen", "/home/bob/.mlops/deployments/qwen"))
  })
})
