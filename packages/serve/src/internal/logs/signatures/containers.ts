/**
 * What running the server in a container adds: the container tool cannot reach its daemon, the
 * container gets no GPUs (no NVIDIA container toolkit, runtime or CDI spec) or loses them while
 * it runs (NVML's `Unknown Error`), the host's driver is older than the image's CUDA, and the
 * shared memory (`/dev/shm`, 64 MB in a docker container unless given more) is too small for
 * NCCL, torch's shared tensors or Ray's object store. They come before every other cause: the
 * rest of such a log is their consequence.
 * @internal
 */
import * as F from "../../../Failures.js"
import {
  base,
  engineName,
  reasonOf,
  type Signature,
  type Subject,
  says,
  Tier
} from "../../../LogSignature.js"

/**
 * The line that says it: in a record, the message line that matches (NCCL's `Last error:` line
 * under torch's DistBackendError, docker's words inside a wrapper's exception), else the line.
 */
const sayingLine = (s: Subject, re: RegExp): string => {
  if (s.record === undefined) return s.text.trim()
  for (const e of s.record.exceptions) {
    const hit = `${e.type}: ${e.message}`.split("\n").find((line) => re.test(line))
    if (hit !== undefined) return hit.trim()
  }
  return reasonOf(s, re)
}

// ---- the container tool's daemon ----------------------------------------------------------------

const DAEMON_DENIED =
  /permission denied while trying to connect to the (?:Docker daemon socket|docker API) at|dial unix \S*docker\.sock: connect: permission denied/i
// docker-compose v1 words it `Couldn't connect to Docker daemon at http+docker://localhost - is it
// running?` (https://github.com/ShuhongChen/vroid-dataset/issues/5)
const DAEMON_DOWN =
  /Cannot connect to the Docker daemon at|Is the docker daemon running\?|Couldn't connect to Docker daemon|Cannot connect to Podman\.|unable to connect to Podman socket/i

const socketOf = (text: string): string | undefined =>
  (/(?:Docker daemon socket|docker API|Docker daemon) at ((?:unix|tcp|npipe|http\+docker|ssh):\/\/[^\s:]*[^\s:.])/i.exec(
    text
  ) ?? /dial unix (\S*\.sock)/.exec(text))?.[1]

export const engineUnreachable: Signature = {
  id: "container-daemon-unreachable",
  tag: "ContainerEngineUnreachable",
  tier: Tier.Root,
  variants: [
    // https://github.com/NVIDIA/nvidia-docker/issues/1138
    {
      from: "docker CLI 19.x-24.x",
      text: "docker: Got permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Post http://%2Fvar%2Frun%2Fdocker.sock/v1.40/containers/create?name=supervisely-agent-nvIRrxReD45ZBGxFQzVTlI1vV1ALy1H4: dial unix /var/run/docker.sock: connect: permission denied."
    },
    // https://github.com/docker-library/postgres/issues/1124
    {
      from: "docker CLI 24.x",
      text: 'permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Post "http://%2Fvar%2Frun%2Fdocker.sock/v1.24/images/create?fromImage=postgres&tag=latest": dial unix /var/run/docker.sock: connect: permission denied'
    },
    // https://github.com/chrisjbawden/cockpit-dockermanager/issues/37
    {
      from: "docker CLI 29.x",
      text: "permission denied while trying to connect to the docker API at unix:///var/run/docker.sock"
    },
    // https://github.com/ansible/ansible-navigator/issues/1867
    {
      from: "podman 5.x (remote, podman machine)",
      text: "Error: unable to connect to Podman socket: failed to connect: dial tcp 127.0.0.1:52298: connect: connection refused"
    },
    // https://github.com/trypromptly/LLMStack/issues/298 (docker's words inside a Python exception)
    {
      from: "python-on-whales",
      text: "python_on_whales.exceptions.DockerException: The docker command executed was `/usr/local/bin/docker compose --file /Users/adeveloper/.pyenv/versions/3.11.9/lib/python3.11/site-packages/llmstack/docker-compose.yml --env-file /var/folders/tz/qlbyq3yj6zzf79621tknz5j40000gn/T/tmppluusecx up --detach --pull missing`.\nIt returned with code 1\nThe content of stdout can be found above the stacktrace (it wasn't captured).\nThe content of stderr is 'unable to get image 'redis:latest': Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
    }
  ],
  match: (s) => says(DAEMON_DENIED)(s) || says(DAEMON_DOWN)(s),
  build: (s) => {
    const denied = says(DAEMON_DENIED)(s)
    const socket = socketOf(s.flat)
    const podman = /Podman/.test(s.flat)
    return new F.ContainerEngineUnreachable({
      ...base(
        s,
        sayingLine(s, denied ? DAEMON_DENIED : DAEMON_DOWN),
        denied
          ? {
              action:
                "this user may not use the Docker daemon's socket: add it to the docker group (`sudo usermod -aG docker $USER`, then log in again) or use rootless podman"
            }
          : {
              action: podman
                ? "no podman service answers: start it (`podman machine start`, or `systemctl --user start podman.socket`) or fix the connection (`podman system connection list`)"
                : `no Docker daemon answers${socket === undefined ? "" : ` at ${socket}`}: start it (\`sudo systemctl start docker\`; Docker Desktop: start the app) or point DOCKER_HOST or the docker context at a running one`
            }
      ),
      kind: denied ? "permission-denied" : "not-running",
      ...(socket === undefined ? {} : { socket })
    })
  }
}

// ---- the GPUs in the container ------------------------------------------------------------------

const NO_GPU_RUNTIME =
  /could not select device driver "[^"]*" with capabilities: \[\[gpu\]|unknown or invalid runtime name: nvidia|Unknown runtime specified nvidia|unresolvable CDI devices nvidia\.com\/gpu|failed to discover GPU vendor from CDI/i
// the device cgroup no longer lets the container open /dev/nvidia*
const GPU_LOST = /Failed to initialize NVML: Unknown Error/i

const toolOf = (text: string): "docker" | "podman" | undefined =>
  /podman|setting up CDI devices/i.test(text)
    ? "podman"
    : /docker|Error response from daemon/i.test(text)
      ? "docker"
      : undefined

export const gpuUnavailable: Signature = {
  id: "container-gpu-unavailable",
  tag: "ContainerGpuUnavailable",
  tier: Tier.Root,
  variants: [
    // https://github.com/gpustack/gpustack/issues/1436
    {
      from: "Docker Engine 19.03+ (--gpus, no NVIDIA toolkit)",
      text: 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]]. '
    },
    // https://github.com/AbdBarho/stable-diffusion-webui-docker/issues/423
    {
      from: "docker compose (deploy.resources.reservations.devices, driver: nvidia)",
      text: 'Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]]'
    },
    // https://github.com/NVIDIA-NeMo/labs-molt/issues/88
    {
      from: "Docker Engine (--runtime=nvidia, runtime not registered)",
      text: "docker: Error response from daemon: unknown or invalid runtime name: nvidia"
    },
    // https://github.com/warmshao/FasterLivePortrait/issues/116
    {
      from: "podman 4.x-5.x (CDI, no spec)",
      text: "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all"
    },
    // https://github.com/tensorchord/envd/issues/191
    {
      from: "Docker Engine (--gpus with more capabilities)",
      text: '> When I tried to run the mnist example, I got error: Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu] [nvidia] [compute] [compat32] [graphics] [utility] [video] [display]].'
    },
    // https://github.com/ShaneIsrael/fireshare/issues/689
    {
      from: "Docker Engine 28+ (--gpus resolved through CDI, no NVIDIA spec)",
      text: "`docker: Error response from daemon: failed to discover GPU vendor from CDI: no known GPU vendor found`"
    },
    // https://github.com/NVIDIA/nvidia-container-toolkit/issues/1227
    { from: "nvidia-smi / NVML in a container", text: "Failed to initialize NVML: Unknown Error" },
    // https://github.com/dstackai/dstack/issues/2601
    {
      from: "nvidia-smi in a dstack run container (quoted)",
      text: "Sometimes `nvidia-smi` fails with the error: `Failed to initialize NVML: Unknown Error`. To reliably trigger the issue:"
    }
  ],
  match: (s) => says(NO_GPU_RUNTIME)(s) || says(GPU_LOST)(s),
  build: (s) => {
    const lost = !says(NO_GPU_RUNTIME)(s)
    const tool = toolOf(s.flat)
    const podman = tool === "podman" || /CDI/.test(s.flat)
    return new F.ContainerGpuUnavailable({
      ...base(
        s,
        sayingLine(s, lost ? GPU_LOST : NO_GPU_RUNTIME),
        lost
          ? {
              action:
                "the container cannot open the GPUs (a running one loses them when the host's systemd reloads its cgroups, e.g. `systemctl daemon-reload`): restart the container; to keep them, let the NVIDIA container toolkit inject them with CDI (toolkit 1.18+, or `nvidia-ctk cdi generate`) or set `no-cgroups = true` in /etc/nvidia-container-runtime/config.toml and pass the /dev/nvidia* devices"
            }
          : podman
            ? {
                action:
                  "no CDI spec for the NVIDIA GPUs: install nvidia-container-toolkit and generate it (`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`); docker: `sudo nvidia-ctk runtime configure --runtime=docker` and restart docker. A host without an NVIDIA GPU cannot give one"
              }
            : {
                action:
                  "docker cannot give the container GPUs: install nvidia-container-toolkit, run `sudo nvidia-ctk runtime configure --runtime=docker` and restart docker (podman: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`). A host without an NVIDIA GPU cannot give one"
              }
      ),
      kind: lost ? "lost" : "no-runtime",
      ...(tool === undefined ? {} : { tool })
    })
  }
}

// ---- the driver and the image's CUDA ------------------------------------------------------------

// nvidia-container-cli (legacy mode) and the NVIDIA Container Runtime (CDI/CSV modes)
const REQUIREMENT =
  /(?:requirement error|requirements not met): unsatisfied condition: (cuda|driver) ?>= ?([\d.]+)(?: \((?:cuda|driver)=([\d.]+)\))?/i
const TOO_OLD =
  /NVIDIA driver on your system is too old|CUDA driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver/i
const FORWARD =
  /forward compatibility was attempted on non supported HW|cudaErrorCompatNotSupportedOnDevice|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE/i
const DRIVER = new RegExp(`${REQUIREMENT.source}|${TOO_OLD.source}|${FORWARD.source}`, "i")

/** torch's `found version 12080`: the CUDA the driver runs, `12.8`. */
const foundCuda = (text: string): string | undefined => {
  const m = /too old \(found version (\d{4,5})\)/.exec(text)
  if (m === null) return undefined
  const n = Number(m[1])
  return `${Math.floor(n / 1000)}.${Math.floor((n % 1000) / 10)}`
}

const driverFix = (
  kind: F.CudaDriverTooOld["kind"],
  engine: string,
  condition: { readonly on: string; readonly version: string } | undefined,
  required: string | undefined,
  runs: string | undefined
): F.Fix => {
  const driverRuns = runs === undefined ? "" : ` (it runs CUDA ${runs})`
  const forDriver = runs === undefined ? "the driver's CUDA (`nvidia-smi` shows it)" : `CUDA ${runs}`
  if (kind === "container-requirement")
    return {
      action:
        condition?.on === "driver"
          ? `the image needs NVIDIA driver ${condition.version} or newer: upgrade the host's driver, or use an image built for an older CUDA`
          : `the image needs CUDA ${required ?? "newer than the driver runs"} and the host's NVIDIA driver is older${driverRuns}: upgrade the driver to one that runs CUDA ${required ?? "the image's version"}, or use an image built for ${forDriver}: an older tag or a -cuXY variant`
    }
  if (kind === "forward-compatibility")
    return {
      action: `the image's CUDA is newer than the host's NVIDIA driver and CUDA forward compatibility works only on datacenter GPUs: upgrade the host's driver to one that runs the image's CUDA, or use an image built for ${forDriver}`
    }
  return {
    action: `${engine}'s CUDA build is newer than the NVIDIA driver${driverRuns}: upgrade the driver, or use an image or wheels (torch, the engine) built for ${forDriver}`
  }
}

export const driverTooOld: Signature = {
  id: "cuda-driver-too-old",
  tag: "CudaDriverTooOld",
  tier: Tier.Root,
  variants: [
    // https://github.com/ggml-org/llama.cpp/issues/9665
    {
      from: "nvidia-container-cli (legacy mode), llama.cpp full-cuda image",
      text: "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.6, please update your driver to a newer version, or use an earlier cuda container: unknown."
    },
    // https://github.com/dusty-nv/jetson-containers/pull/1459
    {
      from: "NVIDIA Container Runtime (CSV/CDI modes)",
      text: "failed to create task for container: failed to create shim task: OCI runtime create failed: failed to create NVIDIA Container Runtime: failed to construct OCI spec modifier: requirements not met: unsatisfied condition: cuda>=12.9 (cuda=12.6): unknown"
    },
    // https://github.com/chatchat-space/Langchain-Chatchat/issues/2420
    {
      from: "torch 2.1 cuda init (FastChat model worker)",
      text: "2023-12-20 13:39:58 | ERROR | stderr | RuntimeError: The NVIDIA driver on your system is too old (found version 11060). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver."
    },
    // https://github.com/vllm-project/vllm/issues/5510
    {
      from: "torch cudaGetDeviceCount, CUDA error 804 (vllm/vllm-openai:v0.5.0)",
      text: "ERROR 06-06 14:09:57 worker_base.py:148] RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW"
    },
    // https://github.com/SYSTRAN/faster-whisper/issues/1278
    {
      from: "CTranslate2, CUDA error 35",
      text: "RuntimeError: CUDA failed with error CUDA driver version is insufficient for CUDA runtime version"
    },
    // https://github.com/abetlen/llama-cpp-python/issues/763
    {
      from: "llama.cpp ggml-cuda",
      text: "web  | CUDA error 35 at /tmp/pip-install-iu4nd6_y/llama-cpp-python_ea6f0cbd4f6343bcbd9b3fd180bbd240/vendor/llama.cpp/ggml-cuda.cu:5522: CUDA driver version is insufficient for CUDA runtime version"
    }
  ],
  match: says(DRIVER),
  build: (s, ctx) => {
    const requirement = REQUIREMENT.exec(s.flat)
    const kind: F.CudaDriverTooOld["kind"] =
      requirement !== null
        ? "container-requirement"
        : FORWARD.test(s.flat)
          ? "forward-compatibility"
          : "cuda-init"
    const condition =
      requirement === null ? undefined : { on: requirement[1]!.toLowerCase(), version: requirement[2]! }
    const required = condition?.on === "cuda" ? condition.version : undefined
    const runs = requirement?.[3] ?? foundCuda(s.flat)
    return new F.CudaDriverTooOld({
      ...base(s, sayingLine(s, DRIVER), driverFix(kind, engineName(ctx), condition, required, runs)),
      kind,
      ...(required === undefined ? {} : { requiredCuda: required }),
      ...(runs === undefined ? {} : { driverCuda: runs })
    })
  }
}

// ---- shared memory ------------------------------------------------------------------------------

// NCCL's shm transport (misc/shmutils.cc since 2.12, include/shm.h before)
const NCCL_SHM =
  /Error while creating shared memory segment|failed to extend \/dev\/shm\/\S+ to \d+ bytes|Call to posix_fallocate failed ?: No space left on device/
// torch's DataLoader workers and shared tensors
const TORCH_SHM =
  /insufficient shared memory \(shm\)|out of shared memory\. Please try to raise your shared memory limit/
// Ray's plasma store at start
const RAY_SHM = /System memory request exceeds memory available in \/dev\/shm/
const SHM = new RegExp(`${NCCL_SHM.source}|${TORCH_SHM.source}|${RAY_SHM.source}`)

const requestedOf = (text: string): number | undefined => {
  const m = /\(size (\d+)\)|to (\d+) bytes|The request is for (\d+) bytes/.exec(text)
  return m === null ? undefined : Number(m[1] ?? m[2] ?? m[3])
}

const shmFix = (s: Subject): F.Fix => ({
  action: `give the server more shared memory: in a container a larger /dev/shm (mlops: \`--shm-size 64g\`, or \`"shm"\` in the host's hosts.json entry, default 32g; \`host\` shares the host's; docker: --shm-size 32g; Kubernetes: an emptyDir with medium: Memory at /dev/shm)${/No space left on device/i.test(s.flat) ? "; if it is already large, /dev/shm is full: `df -h /dev/shm` and remove stale nccl-* segments" : ""}`
})

export const sharedMemory: Signature = {
  id: "shared-memory-too-small",
  tag: "SharedMemoryTooSmall",
  tier: Tier.Root,
  variants: [
    // https://github.com/llm-d/llm-d/issues/352
    {
      from: "NCCL 2.2x (misc/shmutils.cc)",
      text: "[2025-10-13 09:06:25] vllm-deepseek-ep-decode-0:3663:4044 [0] misc/shmutils.cc:129 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-Ewjreo (size 33030528), error: No space left on device (28)"
    },
    // https://github.com/ai-dynamo/dynamo/issues/1408
    {
      from: "NCCL 2.2x (misc/shmutils.cc)",
      text: "[2025-06-06 09:52:01] ucwlai-k8snode-12-123:15016:15201 [1] misc/shmutils.cc:87 NCCL WARN Error: failed to extend /dev/shm/nccl-YrFC5V to 33030532 bytes, error: No space left on device (28)"
    },
    // https://github.com/vllm-project/production-stack/issues/276
    {
      from: "torch ProcessGroupNCCL (the NCCL error's last-error text)",
      text: "`torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\nncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \nLast error:\nError while creating shared memory segment /dev/shm/nccl-F9ffgB (size 9637888)`"
    },
    // https://github.com/NVIDIA/nccl/issues/290
    {
      from: "NCCL 2.4-2.7 (include/shm.h)",
      text: "gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device"
    },
    // https://github.com/pangeo-data/pangeo-docker-images/issues/258
    {
      from: "torch DataLoader worker",
      text: "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."
    },
    // https://github.com/aws/sagemaker-python-sdk/issues/5592
    {
      from: "torch DataLoader",
      text: "RuntimeError: DataLoader worker (pid 256) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit."
    },
    // https://github.com/gpustack/gpustack/issues/5014
    {
      from: "Ray raylet (vLLM's Ray executor)",
      text: "[2026-03-25 05:44:29,435 W 39 39] (raylet) store_runner.cc:83: System memory request exceeds memory available in /dev/shm. The request is for 10200547328 bytes, and the amount available is 9663676416 bytes."
    }
  ],
  match: says(SHM),
  build: (s) => {
    const kind = says(RAY_SHM)(s) ? "ray" : says(TORCH_SHM)(s) ? "torch" : "nccl"
    const requested = requestedOf(s.flat)
    return new F.SharedMemoryTooSmall({
      ...base(s, sayingLine(s, SHM), shmFix(s)),
      kind,
      ...(requested === undefined ? {} : { requestedBytes: requested })
    })
  }
}

/** In the order they are tried on a subject. */
export const containers: ReadonlyArray<Signature> = [
  engineUnreachable,
  gpuUnavailable,
  driverTooOld,
  sharedMemory
]

/**
 * The classes that name a container's refusal to start (no GPU toolkit, a CUDA requirement, no
 * daemon): where the tool's words say one of these, it is the launch's failure itself.
 */
export const startRefusals: ReadonlySet<string> = new Set([
  engineUnreachable.tag,
  gpuUnavailable.tag,
  driverTooOld.tag
])
