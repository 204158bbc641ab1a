/** Expected verdicts: unsupported configs, distributed, CUDA, dependencies, stalls, exits. */
import type { Fix } from "@mlops/serve/Failures"
import { type Expected, exit1, killed } from "./shared.js"

const depFix: Fix = {
  action:
    "install the missing package or the versions this SGLang release pins (pip install 'sglang[all]==<version>')"
}
const ncclFix: Fix = {
  action: "rerun with NCCL_DEBUG=INFO; check that all GPUs are visible and idle (nvidia-smi topo -m)"
}

export const ranksAndExitsCases: Record<string, Expected> = {
  "unsupported-arch.log": {
    tag: "UnsupportedConfig",
    process: "TP0",
    phase: "weights-loading",
    fix: { action: "upgrade SGLang (and transformers) to a release that supports this model" },
    evidence: ["Model architectures ['FooBarForCausalLM'] are not supported for now"],
    exit: killed,
    fields: { kind: "architecture", architectures: ["FooBarForCausalLM"] }
  },
  "unsupported-gdn-blackwell.log": {
    tag: "UnsupportedConfig",
    process: "TP0",
    phase: "kv-cache",
    fix: { flags: { "--attention-backend": "triton" } },
    evidence: ["only supported backends on Blackwell GPUs for hybrid GDN models"],
    exit: killed,
    fields: { kind: "backend" }
  },
  // transformers that does not know the model type is too old: a dependency, not the engine
  "unsupported-transformers-arch.log": {
    tag: "DependencyError",
    process: "launcher",
    phase: "starting",
    fix: {
      action:
        "upgrade transformers to a release that knows this model type (pip install -U transformers), within the engine's pins"
    },
    evidence: ["Transformers does not recognize this architecture"],
    exit: exit1
  },
  "unsupported-trtllm-mla.log": {
    tag: "UnsupportedConfig",
    process: "launcher",
    phase: "starting",
    fix: { action: "choose another --attention-backend for this GPU" },
    evidence: ["TRTLLM MLA backend is only supported on Blackwell GPUs"],
    exit: exit1,
    fields: { kind: "backend" }
  },
  "nccl-unhandled.log": {
    tag: "DistributedError",
    process: "TP1",
    phase: "distributed-init",
    fix: ncclFix,
    evidence: ["TP1] Scheduler hit an exception", "RuntimeError: NCCL error: unhandled system error"],
    exit: killed
  },
  "dist-backend-error.log": {
    tag: "DistributedError",
    process: "TP0",
    phase: "distributed-init",
    fix: ncclFix,
    evidence: ["torch.distributed.DistBackendError: NCCL error in:", "peer access is not supported"],
    exit: killed
  },
  "dist-store-timeout.log": {
    tag: "DistributedError",
    process: "TP1",
    phase: "distributed-init",
    fix: ncclFix,
    evidence: ["DistStoreError: Timed out after 601 seconds"],
    exit: killed
  },
  "cuda-driver.log": {
    tag: "CudaDriverTooOld",
    process: "scheduler",
    phase: "distributed-init",
    fix: {
      action:
        "SGLang's CUDA build is newer than the NVIDIA driver (it runs CUDA 12.2): upgrade the driver, or use an image or wheels (torch, the engine) built for CUDA 12.2"
    },
    evidence: ["The NVIDIA driver on your system is too old"],
    exit: killed,
    fields: { kind: "cuda-init", driverCuda: "12.2" }
  },
  "cuda-no-kernel-image.log": {
    tag: "CudaError",
    process: "scheduler",
    phase: "weights-loaded",
    fix: {
      action:
        "the installed kernels were not built for this GPU: install a build for its compute capability (an image or wheels built for it: Blackwell needs CUDA 12.8+ builds), or build the image with TORCH_CUDA_ARCH_LIST including it"
    },
    evidence: ["CUDA error: no kernel image is available"],
    exit: killed
  },
  "cuda-illegal-memory.log": {
    tag: "CudaError",
    process: "TP0",
    phase: "cuda-graph",
    fix: { action: "rerun with CUDA_LAUNCH_BLOCKING=1 to locate the failing kernel" },
    evidence: ["Capture cuda graph failed: CUDA error: an illegal memory access"],
    exit: killed
  },
  "cuda-ecc.log": {
    tag: "CudaError",
    process: "TP1",
    phase: "cuda-graph",
    fix: { action: "GPU hardware fault: check nvidia-smi -q for ECC errors and reset or drain the GPU" },
    evidence: ["uncorrectable ECC error encountered"],
    exit: killed
  },
  "dep-module-not-found.log": {
    tag: "DependencyError",
    process: "launcher",
    phase: "starting",
    fix: depFix,
    evidence: ["ModuleNotFoundError: No module named 'sgl_kernel'"],
    exit: exit1,
    fields: { module: "sgl_kernel" }
  },
  "dep-undefined-symbol.log": {
    tag: "DependencyError",
    process: "TP0",
    phase: "distributed-init",
    fix: depFix,
    evidence: ["undefined symbol: _ZN3c104cuda9SetDeviceEi"],
    exit: killed,
    fields: { module: "_ZN3c104cuda9SetDeviceEi" }
  },
  "dep-jit-build.log": {
    tag: "DependencyError",
    process: "scheduler",
    phase: "weights-loaded",
    fix: {
      action:
        "a kernel failed to build for this GPU: install a prebuilt wheel for this CUDA and GPU, or a CUDA toolkit that knows the GPU"
    },
    evidence: [
      "Error building extension 'flashinfer_jit_batch_prefill_with_kv_cache'",
      "ninja: build stopped"
    ],
    exit: killed
  },
  "dep-linked-import-error.log": {
    tag: "DependencyError",
    process: "TP0",
    phase: "weights-loading",
    fix: depFix,
    evidence: [
      "Ignore import error when loading sglang.srt.models.qwen3_5: cannot import name 'Qwen3_5Config'",
      "Model architectures ['Qwen3_5ForConditionalGeneration'] are not supported"
    ],
    exit: killed,
    fields: { module: "sglang.srt.models.qwen3_5" }
  },
  "stalled-watchdog.log": {
    tag: "StartupStalled",
    process: "TP0",
    phase: "warmup",
    fix: {
      action:
        "a forward pass hung: raise --watchdog-timeout if it is only slow, else look for a stuck collective (NCCL_DEBUG=INFO)"
    },
    evidence: ["watchdog timeout (self.watchdog_timeout=300"],
    exit: killed
  },
  "stalled-warmup-timeout.log": {
    tag: "StartupStalled",
    process: "launcher",
    phase: "warmup",
    fix: {
      action:
        "the first request did not finish: check the scheduler lines above; raise SGLANG_WARMUP_TIMEOUT if the model is only slow"
    },
    evidence: ["Initialization failed. warmup error", "Read timed out"],
    exit: killed
  },
  "exited-sigkill-silent.log": {
    tag: "ProcessExited",
    process: "launcher",
    phase: "weights-loading",
    evidence: ["Loading safetensors checkpoint shards"],
    exit: killed,
    fields: { exitCode: 137, signal: "SIGKILL" }
  },
  "exited-segfault.log": {
    tag: "ProcessExited",
    process: "scheduler",
    phase: "cuda-graph",
    evidence: ["Fatal Python error: Segmentation fault"],
    exit: { exitCode: 139 },
    fields: { exitCode: 139, signal: "SIGSEGV" }
  },
  // an exception no signature knows is the finding itself, not "the process exited"
  "exited-unknown-exception.log": {
    tag: "Unclassified",
    process: "TP0",
    phase: "warmup",
    fix: {
      action:
        "no known cause matches: read the exception and the lines above it; `mlops diagnose --json` shows the evidence"
    },
    evidence: ["RuntimeError: Sampler state is corrupted"],
    exit: { signal: "SIGKILL" },
    fields: { exception: "RuntimeError" }
  },
  "exited-scheduler-died.log": {
    tag: "ProcessExited",
    process: "rank 0",
    phase: "weights-loading",
    fix: { action: "likely the OS OOM killer (host RAM): check `dmesg -T | grep -i oom`" },
    evidence: ["Rank 0 scheduler died during initialization (exit code: -9)"],
    exit: exit1,
    fields: { exitCode: 1, signal: "SIGKILL" }
  }
}
