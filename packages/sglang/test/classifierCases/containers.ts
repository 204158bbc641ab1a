/** Expectations for the fixtures of a server run in a container: its daemon, GPUs, driver and shared memory. */
import type { Fix } from "@mlops/serve/Failures"
import { type Expected, exit1, killed } from "./shared.js"

const shmFix = (full: boolean): Fix => ({
  action: `give the server more shared memory: in a container a larger /dev/shm (mlops: \`--shm-size 64g\`, or \`"shm"\` in the host's hosts.json entry, default 32g; \`host\` shares the host's; docker: --shm-size 32g; Kubernetes: an emptyDir with medium: Memory at /dev/shm)${full ? "; if it is already large, /dev/shm is full: `df -h /dev/shm` and remove stale nccl-* segments" : ""}`
})

const toolkitFix: Fix = {
  action:
    "docker cannot give the container GPUs: install nvidia-container-toolkit, run `sudo nvidia-ctk runtime configure --runtime=docker` and restart docker (podman: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`). A host without an NVIDIA GPU cannot give one"
}

export const containersCases: Record<string, Expected> = {
  "container-shm-nccl-tp2.log": {
    tag: "SharedMemoryTooSmall",
    process: "TP1",
    phase: "distributed-init",
    fix: shmFix(true),
    evidence: [
      "TP1] Scheduler hit an exception",
      "Error while creating shared memory segment /dev/shm/nccl-Q8rT2m"
    ],
    exit: killed,
    fields: {
      kind: "nccl",
      requestedBytes: 9637888,
      reason:
        "Error while creating shared memory segment /dev/shm/nccl-Q8rT2m (size 9637888), error: No space left on device (28)"
    }
  },
  "container-shm-dataloader.log": {
    tag: "SharedMemoryTooSmall",
    process: "scheduler",
    phase: "weights-loading",
    fix: shmFix(false),
    evidence: ["RuntimeError: DataLoader worker (pid 418) is killed by signal: Bus error"],
    exit: exit1,
    fields: { kind: "torch" }
  },
  "container-driver-requirement.log": {
    tag: "CudaDriverTooOld",
    process: "launcher",
    phase: "starting",
    fix: {
      action:
        "the image needs CUDA 12.9 and the host's NVIDIA driver is older: upgrade the driver to one that runs CUDA 12.9, or use an image built for the driver's CUDA (`nvidia-smi` shows it): an older tag or a -cuXY variant"
    },
    evidence: ["nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.9"],
    exit: { exitCode: 125 },
    fields: { kind: "container-requirement", requiredCuda: "12.9" }
  },
  "container-no-toolkit.log": {
    tag: "ContainerGpuUnavailable",
    process: "launcher",
    phase: "starting",
    fix: toolkitFix,
    evidence: ['could not select device driver "" with capabilities: [[gpu]]'],
    exit: { exitCode: 125 },
    fields: { kind: "no-runtime", tool: "docker" }
  },
  "container-nvml-lost.log": {
    tag: "ContainerGpuUnavailable",
    process: "launcher",
    phase: "starting",
    fix: {
      action:
        "the container cannot open the GPUs (a running one loses them when the host's systemd reloads its cgroups, e.g. `systemctl daemon-reload`): restart the container; to keep them, let the NVIDIA container toolkit inject them with CDI (toolkit 1.18+, or `nvidia-ctk cdi generate`) or set `no-cgroups = true` in /etc/nvidia-container-runtime/config.toml and pass the /dev/nvidia* devices"
    },
    evidence: ["RuntimeError: nvidia-smi error: Failed to initialize NVML: Unknown Error"],
    exit: exit1,
    fields: { kind: "lost" }
  },
  "container-docker-denied.log": {
    tag: "ContainerEngineUnreachable",
    process: "launcher",
    phase: "starting",
    fix: {
      action:
        "this user may not use the Docker daemon's socket: add it to the docker group (`sudo usermod -aG docker $USER`, then log in again) or use rootless podman"
    },
    evidence: ["permission denied while trying to connect to the docker API at unix:///var/run/docker.sock"],
    exit: exit1,
    fields: { kind: "permission-denied", socket: "unix:///var/run/docker.sock" }
  },
  "container-podman-down.log": {
    tag: "ContainerEngineUnreachable",
    process: "launcher",
    phase: "starting",
    fix: {
      action:
        "no podman service answers: start it (`podman machine start`, or `systemctl --user start podman.socket`) or fix the connection (`podman system connection list`)"
    },
    evidence: ["Error: unable to connect to Podman socket"],
    exit: { exitCode: 125 },
    fields: { kind: "not-running", socket: "/run/user/1000/podman/podman.sock" }
  }
}
