/** Expected verdicts: argparse, ServerArgs assertions and ValueErrors, memory, ports, model access. */
import type { Fix } from "@mlops/serve/Failures"
import { type Expected, exit1, exit2, killed } from "./shared.js"

const specFix: Fix = {
  flags: { "--speculative-num-steps": 1, "--speculative-eagle-topk": 1 },
  action:
    "give --speculative-num-steps and --speculative-eagle-topk together with --speculative-num-draft-tokens, or none of the three"
}
const specFlags = ["--speculative-eagle-topk", "--speculative-num-draft-tokens", "--speculative-num-steps"]
const mamba: Expected = {
  tag: "MissingSchedulerStrategy",
  process: "launcher",
  phase: "starting",
  fix: { flags: { "--mamba-scheduler-strategy": "extra_buffer" } },
  evidence: [
    "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration",
    "_handle_mamba_radix_cache"
  ],
  exit: exit1,
  fields: { architecture: "Qwen3_5ForConditionalGeneration" }
}
const graphOom: Expected = {
  tag: "OOM",
  process: "TP1",
  phase: "cuda-graph",
  fix: { flags: { "--cuda-graph-max-bs": 16, "--mem-fraction-static": 0.8 } },
  evidence: ["TP1] Scheduler hit an exception", "Capture cuda graph failed: CUDA out of memory"],
  exit: killed,
  fields: { kind: "cuda-graph", triedGiB: 0.5, freeGiB: 0.29, memFractionStatic: 0.85 }
}

export const launcherAndMemoryCases: Record<string, Expected> = {
  "argparse-invalid-choice.log": {
    tag: "ArgparseError",
    process: "launcher",
    phase: "starting",
    fix: {
      action:
        "correct --attention-backend: argument --attention-backend: invalid choice: 'fa5' (choose from 'triton', 'torch_native', 'fa3', 'flashinfer', 'trtllm_mha')"
    },
    evidence: ["usage: sglang serve", "invalid choice: 'fa5'"],
    exit: exit2,
    fields: { kind: "invalid-choice", flags: ["--attention-backend"] }
  },
  "argparse-unrecognized.log": {
    tag: "ArgparseError",
    process: "launcher",
    phase: "starting",
    fix: {
      removeFlags: ["--max-loaded-loras"],
      action: "these flags do not exist in the installed SGLang version"
    },
    evidence: ["unrecognized arguments: --max-loaded-loras 4"],
    exit: exit2,
    fields: { kind: "unrecognized" }
  },
  "argparse-required.log": {
    tag: "ArgparseError",
    process: "launcher",
    phase: "starting",
    fix: { action: "add --model-path --model" },
    evidence: ["the following arguments are required"],
    exit: exit2,
    fields: { kind: "required" }
  },
  "assert-bare-speculative.log": {
    tag: "AssertionFailure",
    process: "launcher",
    phase: "starting",
    fix: specFix,
    evidence: ["assert self.speculative_eagle_topk is None", "AssertionError"],
    exit: exit1,
    fields: { function: "_handle_speculative_decoding", line: 3518, flags: specFlags }
  },
  "assert-bare-multiline.log": {
    tag: "AssertionFailure",
    process: "launcher",
    phase: "starting",
    fix: specFix,
    evidence: [
      "self.speculative_eagle_topk is None",
      "and self.speculative_num_draft_tokens is None",
      "AssertionError"
    ],
    exit: exit1,
    fields: {
      source: "assert (self.speculative_eagle_topk is None and self.speculative_num_draft_tokens is None)",
      flags: specFlags
    }
  },
  "assert-bare-first-line-only.log": {
    tag: "AssertionFailure",
    process: "launcher",
    phase: "starting",
    fix: specFix,
    evidence: ["in _handle_speculative_decoding", "AssertionError"],
    exit: exit1,
    fields: {
      source: "assert (",
      flags: ["--speculative-eagle-topk", "--speculative-num-draft-tokens", "--speculative-num-steps"]
    }
  },
  "assert-check-server-args.log": {
    tag: "AssertionFailure",
    process: "launcher",
    phase: "starting",
    evidence: ["AssertionError: tp_size must be divisible by number of nodes", "in check_server_args"],
    exit: exit1,
    fields: { function: "check_server_args", line: 6790 }
  },
  "assert-divide-rank.log": {
    tag: "AssertionFailure",
    process: "TP1",
    phase: "weights-loading",
    evidence: ["AssertionError: 40 is not divisible by 3"],
    exit: killed,
    fields: { function: "ensure_divisibility", flags: ["--tp-size"] }
  },
  "invalid-trtllm-topk.log": {
    // "only supports": a combination this build refuses, as the offline rule says too
    tag: "UnsupportedConfig",
    process: "launcher",
    phase: "starting",
    fix: {
      action:
        "change one of the settings this SGLang build refuses together (see its message), or use a release that supports the combination"
    },
    evidence: ["trtllm_mha backend only supports topk = 1"],
    exit: exit1
  },
  "invalid-dflash-window.log": {
    tag: "InvalidArgument",
    process: "launcher",
    phase: "starting",
    evidence: ["DFLASH requires --speculative-dflash-draft-window-size"],
    exit: exit1,
    fields: { flags: ["--speculative-dflash-draft-window-size"] }
  },
  "invalid-spec-typeerror.log": {
    tag: "InvalidArgument",
    process: "launcher",
    phase: "starting",
    fix: { flags: { "--speculative-eagle-topk": 1 } },
    evidence: ["TypeError: '>' not supported"],
    exit: exit1
  },
  "invalid-context-length.log": {
    tag: "InvalidArgument",
    process: "launcher",
    phase: "starting",
    fix: {
      action:
        "lower --context-length to the model's limit, or set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
    },
    evidence: ["User-specified context_length (300000)"],
    exit: exit1,
    fields: { flags: ["--context-length"] }
  },
  "mamba-radix-spec.log": mamba,
  "mamba-radix-spec-ansi.log": mamba,
  "mamba-radix-spec-crlf.log": mamba,
  "oom-weights-tp2.log": {
    tag: "OOM",
    process: "TP1",
    phase: "weights-loading",
    fix: { action: "the weights do not fit: use more GPUs (--tp-size) or a quantized checkpoint" },
    evidence: [
      "TP1] Scheduler hit an exception",
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB"
    ],
    exit: killed,
    fields: { kind: "cuda-alloc", gpu: 1, triedGiB: 1.5, totalGiB: 79.19, freeGiB: 0.79 }
  },
  "oom-kv-pool.log": {
    tag: "OOM",
    process: "scheduler",
    phase: "weights-loaded",
    fix: { flags: { "--mem-fraction-static": 0.75 } },
    evidence: ["RuntimeError: Not enough memory. Please try to increase --mem-fraction-static"],
    exit: killed,
    fields: { kind: "kv-pool", memFractionStatic: 0.7 }
  },
  "oom-cuda-graph.log": {
    ...graphOom,
    process: "TP0",
    evidence: ["TP0] Scheduler hit an exception", "Possible solutions:"]
  },
  "oom-then-nccl-echo.log": graphOom,
  "oom-after-nccl-echo.log": graphOom,
  "oom-unbalanced.log": {
    tag: "OOM",
    process: "TP0",
    phase: "distributed-init",
    fix: {
      action: "free the GPUs held by other processes (nvidia-smi), or pick idle GPUs with --base-gpu-id"
    },
    evidence: ["The memory capacity is unbalanced"],
    exit: killed,
    fields: { kind: "unbalanced" }
  },
  "port-http.log": {
    tag: "PortInUse",
    process: "launcher",
    phase: "cuda-graph",
    fix: { action: "stop the process listening on port 30000 (ss -ltnp), or pass another --port" },
    evidence: ["[Errno 98] error while attempting to bind on address ('0.0.0.0', 30000)"],
    exit: exit1,
    fields: { kind: "http", port: 30000 }
  },
  "port-nccl.log": {
    tag: "PortInUse",
    process: "TP0",
    phase: "distributed-init",
    fix: { action: "pass a free --nccl-port (outside the ephemeral range), or stop the process holding it" },
    evidence: ["EADDRINUSE"],
    exit: killed,
    fields: { kind: "nccl", port: 29500 }
  },
  "port-zmq.log": {
    tag: "PortInUse",
    process: "launcher",
    phase: "starting",
    fix: { action: "stop the other SGLang server on this host, or change --port / --dist-init-addr" },
    evidence: ["dist_init_port at 25000 is not available in 30 seconds"],
    exit: exit1,
    fields: { kind: "zmq", port: 25000 }
  },
  "model-not-found-local.log": {
    tag: "ModelNotFound",
    process: "launcher",
    phase: "starting",
    fix: {
      action:
        "check --model-path (a local directory with config.json, or an existing repo id); for a private repo log in with `hf auth login`"
    },
    evidence: ["is not a local folder and is not a valid model identifier"],
    exit: exit1,
    fields: { model: "/models/Qwen3-8B-typo" }
  },
  "model-bad-repo-id.log": {
    tag: "ModelNotFound",
    process: "launcher",
    phase: "starting",
    fix: {
      action:
        "check --model-path (a local directory with config.json, or an existing repo id); for a private repo log in with `hf auth login`"
    },
    evidence: ["HFValidationError: Repo id must be in the form"],
    exit: exit1,
    fields: { model: "/data/models//qwen" }
  },
  "model-offline.log": {
    tag: "ModelNotFound",
    process: "launcher",
    phase: "starting",
    fix: {
      action: "the host cannot reach huggingface.co: download the model there first and pass its local path"
    },
    evidence: ["We couldn't connect to 'https://huggingface.co'", "Check your internet connection"],
    exit: exit1
  },
  "trust-remote-code-new.log": {
    tag: "TrustRemoteCodeRequired",
    process: "launcher",
    phase: "starting",
    fix: { flags: { "--trust-remote-code": null } },
    evidence: ["contains custom code", "Please pass the argument `trust_remote_code=True`"],
    exit: exit1
  },
  "trust-remote-code-old.log": {
    tag: "TrustRemoteCodeRequired",
    process: "launcher",
    phase: "starting",
    fix: { flags: { "--trust-remote-code": null } },
    evidence: ["requires you to execute the configuration file"],
    exit: exit1
  },
  "trust-remote-code-rank.log": {
    tag: "TrustRemoteCodeRequired",
    process: "TP0",
    phase: "distributed-init",
    fix: { flags: { "--trust-remote-code": null } },
    evidence: ["TP0] Scheduler hit an exception", "trust_remote_code=True"],
    exit: killed
  }
}
