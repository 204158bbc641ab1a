/**
 * What this build cannot run here: the model architecture, the GPU (bf16 below compute
 * capability 8.0, fp8 below 8.9, FlashAttention before Ampere), an attention backend on this
 * GPU, a quantization method; and the CUDA driver, runtime or hardware failing (no kernel image
 * for this GPU, illegal memory access, device-side assert, driver too old, NVML, no GPU visible).
 * @internal
 */
import * as F from "../../../Failures.js"
import { base, engineName, reasonOf, type Signature, says, Tier } from "../../../LogSignature.js"

const ARCHITECTURE =
  /Model architectures? \[[^\]]*\] (?:is|are) not supported|are not supported for now\. Supported architectures|Model architecture \S+ is not supported|Unsupported (?:model )?architecture|does not support (?:the )?(?:model )?architecture/i

export const architecture: Signature = {
  id: "architecture-unsupported",
  tag: "UnsupportedConfig",
  tier: Tier.Root,
  variants: [
    {
      from: "SGLang 0.3-0.5.x models/registry.py",
      text: "ValueError: Model architectures ['Glm4ForCausalLM'] are not supported for now. Supported architectures: dict_keys([...])"
    },
    {
      from: "vLLM 0.4-0.6",
      text: "ValueError: Model architectures ['Qwen2VLForConditionalGeneration'] are not supported for now. Supported architectures: [...]"
    }
  ],
  match: says(ARCHITECTURE),
  build: (s, ctx) => {
    const listed = /architectures? \[([^\]]*)\]/i.exec(s.flat)
    const architectures = listed ? [...listed[1]!.matchAll(/'([^']+)'/g)].map((m) => m[1]!) : []
    return new F.UnsupportedConfig({
      ...base(s, reasonOf(s, ARCHITECTURE), {
        action: `upgrade ${engineName(ctx)} (and transformers) to a release that supports this model`
      }),
      kind: "architecture",
      architectures
    })
  }
}

const HARDWARE =
  /Bfloat16 is only supported on GPUs with compute capability|not supported (?:in|on) this (?:architecture|GPU|device)|is only supported on (?:CUDA|GPUs?|devices|sm_?\d|compute capability|MI\d|Ampere|Hopper|Blackwell)|is not supported for the current GPU|Minimum capability: \d+|only supports? (?:Ampere|Hopper|Blackwell|sm_?\d+)(?: GPUs)?(?: or newer)?|FlashAttention only supports|requires (?:a GPU with )?compute capability|compute capability (?:of )?(?:at least|>=) ?\d/i

export const hardware: Signature = {
  id: "gpu-lacks-capability",
  tag: "UnsupportedConfig",
  tier: Tier.Root,
  variants: [
    {
      from: "vLLM 0.2-0.6 worker",
      text: "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` flag in CLI, for example: --dtype=half."
    },
    {
      from: "vLLM quantization",
      text: "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. Current capability: 86."
    },
    { from: "flash-attn 2", text: "RuntimeError: FlashAttention only supports Ampere GPUs or newer." }
  ],
  // a backend refused on this GPU is the backend signature's (its fix names --attention-backend)
  match: (s) => says(HARDWARE)(s) && !/\bbackend\b/i.test(s.flat),
  build: (s) =>
    new F.UnsupportedConfig({
      ...base(
        s,
        reasonOf(s, HARDWARE),
        /bfloat16/i.test(s.flat)
          ? { flags: { "--dtype": "half" } }
          : {
              action:
                "this GPU lacks the capability: choose another dtype, quantization or backend, or a newer GPU"
            }
      ),
      kind: "hardware"
    })
}

const BACKEND =
  /only supported backends? on|failed to dispatch (?:head_dim|group_size|page_size|\w+ \d)|(?:head_dim|head dim) \d+ (?:is )?not supported|Unsupported head_dim|backends? (?:is|are) (?:the )?only supported|backend is only supported on|attention backends? (?:is|are) supported for|not supported (?:with|on|by) (?:the )?\S+ (?:attention )?backend|backend \S+ is not supported|Unknown attention backend/i

export const backend: Signature = {
  id: "backend-unsupported",
  tag: "UnsupportedConfig",
  tier: Tier.Root,
  variants: [
    {
      from: "SGLang 0.5.x",
      text: "AssertionError: triton, trtllm_mha, fa4, or flashinfer backend are the only supported backends on Blackwell GPUs for hybrid GDN models, use --attention-backend to specify the backend."
    },
    {
      from: "SGLang 0.5.x",
      text: "ValueError: Currently only ['ascend', 'fa3', 'fa4', 'flashinfer', 'triton'] attention backends are supported for deterministic inference, but you explicitly specified 'trtllm_mha'."
    }
  ],
  match: says(BACKEND),
  build: (s) =>
    new F.UnsupportedConfig({
      ...base(
        s,
        reasonOf(s, BACKEND),
        /hybrid GDN/i.test(s.flat)
          ? { flags: { "--attention-backend": "triton" } }
          : { action: "choose another --attention-backend for this GPU" }
      ),
      kind: "backend"
    })
}

const CUDA =
  /CUDA error|Cuda error|invalid configuration argument|too many resources requested for launch|invalid device function|an illegal instruction was encountered|Memory access fault by GPU|CUDAContext\.cpp|device < num_gpus|is not compatible with the current PyTorch installation|CUDA Error|Triton Error \[CUDA\]|cudaError\w*|libcuda\.so|libnvidia-ml\.so|Cannot re-initialize CUDA in forked subprocess|CUDA_ERROR_\w+|CUDA driver (?:version is insufficient|initialization failed)|no kernel image is available|No CUDA GPUs are available|Found no NVIDIA driver|NVIDIA driver on your system is too old|NVMLError|Failed to initialize NVML|NVML Shared Library Not Found|cudaGetDeviceCount|Error 802|[Dd]evice-side assert|CUDART error|illegal memory access|uncorrectable ECC|ECC error|\bXid\b|invalid device ordinal|Failed to infer device type|CUDNN_STATUS_\w+|CUBLAS_STATUS_(?!ALLOC)\w+|nvrtc: error|unspecified launch failure|misaligned address|torch\.AcceleratorError|hipError\w+|HIP error|\.cu:\d+: \w+: block: \[[\d,]+\], thread: \[[\d,]+\] Assertion|NVML_SUCCESS == r|RuntimeError: Error Internal\b/

// the kernels in this build (torch, the engine, flashinfer) were not compiled for this GPU
const NOT_BUILT_FOR_GPU =
  /no kernel image|is not compatible with the current PyTorch installation|No supported GPU\(s\) detected to run this container/i

/** The architecture the log names (`CUDA capability sm_100`, `sm_120`), when it does. */
const archOf = (text: string): string | undefined => /\b(sm_\d{2,3}a?)\b/.exec(text)?.[1]

const cudaFix = (text: string): F.Fix =>
  NOT_BUILT_FOR_GPU.test(text)
    ? {
        action: `the installed kernels were not built for this GPU${archOf(text) === undefined ? "" : ` (${archOf(text)})`}: install a build for its compute capability (an image or wheels built for it: Blackwell needs CUDA 12.8+ builds), or build the image with TORCH_CUDA_ARCH_LIST including it`
      }
    : /driver|Error 802|system not yet initialized|NVML|No CUDA GPUs|infer device type|invalid device ordinal/i.test(
          text
        )
      ? {
          action:
            "the GPUs are not usable from this process: check nvidia-smi, the driver version and CUDA_VISIBLE_DEVICES"
        }
      : /ECC|Xid/.test(text)
        ? { action: "GPU hardware fault: check nvidia-smi -q for ECC errors and reset or drain the GPU" }
        : /peer access/i.test(text)
          ? { action: "the GPUs cannot talk directly (no P2P): pass --disable-custom-all-reduce" }
          : {
              action: "rerun with CUDA_LAUNCH_BLOCKING=1 to locate the failing kernel"
            }

export const cuda: Signature = {
  id: "cuda-runtime-error",
  tag: "CudaError",
  tier: Tier.Root,
  variants: [
    { from: "torch 2.x", text: "RuntimeError: CUDA error: an illegal memory access was encountered" },
    {
      from: "torch 2.8+",
      text: "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
    },
    {
      from: "torch",
      text: "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    },
    {
      from: "vLLM custom all-reduce",
      text: "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 'peer access is not supported between these two devices'"
    },
    {
      from: "torch cuda init",
      text: "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized"
    },
    {
      from: "flashinfer 0.1",
      text: "CUDA Error: device-side assert triggered (710) /include/flashinfer/attention/decode.cuh: line 749"
    },
    { from: "vLLM pynvml", text: "vllm.third_party.pynvml.NVMLError_InvalidArgument: Invalid Argument" },
    { from: "vLLM 0.7+", text: "RuntimeError: Failed to infer device type" },
    // https://github.com/sgl-project/sglang/pull/5071 (lmsysorg/sglang:latest on B200, April 2025)
    {
      from: "torch 2.5 (an image without Blackwell kernels)",
      text: "NVIDIA B200 with CUDA capability sm_100 is not compatible with the current PyTorch installation."
    }
  ],
  match: says(CUDA),
  build: (s) => new F.CudaError({ ...base(s, reasonOf(s, CUDA), cudaFix(s.flat)) })
}
