/**
 * How training jobs fail, on lines copied from the real-logs corpus (corpus/logs/cases, batch 6;
 * the development part only): a CUDA OOM with the allocator's numbers, NCCL's watchdog with the
 * collective, rank and timeout, torchrun's ChildFailedError (the rank's own root cause above it
 * wins; else the rank and exit code it names), the host's OOM killer and SIGKILLed ranks, SIGHUP
 * from a closing session, and a loss that diverged; NaN lines in a job that goes on are no failure.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Classifier from "../../../src/Classifier.js"
import type { LaunchFailure } from "../../../src/Failures.js"
import { oomNumbers, trainingFix } from "../../../src/internal/logs/signatures/memory.js"

const failureOf = (lines: ReadonlyArray<string>, exit?: Classifier.ExitStatus): LaunchFailure => {
  const { failure } = Classifier.classifyText(lines.join("\n"), exit)
  assert.isDefined(failure, lines.join("\n"))
  return failure!
}

describe("a CUDA OOM during training: the allocator's numbers", () => {
  // https://github.com/Instruction-Tuning-with-GPT-4/GPT-4-LLM/issues/16 (torch 1.x's words)
  const old = [
    "OutOfMemoryError: CUDA out of memory. Tried to allocate 172.00 MiB (GPU 0; 79.35 GiB total capacity; 73.95 GiB already allocated; 12.19 MiB free; 76.80 GiB reserved in total by PyTorch) If ",
    "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
  ]
  // https://github.com/hiyouga/LlamaFactory/issues/7781 (torch >= 2.1's words, under torchrun)
  const current = [
    "```text",
    "[rank7]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 270.00 MiB. GPU 7 has a total capacity of 23.65 GiB of which 208.06 MiB is free. Process 2271802 has 23.44 GiB memory in use. Of the allocated memory 22.87 GiB is allocated by PyTorch, and 6.23 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    "[rank4]: Traceback (most recent call last):",
    '[rank4]:   File "/root/filesystem/LOCAL/LLaMA-Factory/src/llamafactory/launcher.py", line 23, in <module>',
    "[rank4]:     launch()",
    '[rank4]:   File "/root/filesystem/LOCAL/LLaMA-Factory/src/llamafactory/train/tuner.py", line 69, in _training_function',
    "[rank4]:     run_sft(model_args, data_args, training_args, finetuning_args, generating_args, callbacks)"
  ]

  it("torch 1.x: tried, total, free, already allocated, reserved in total; unallocated derived", () => {
    const f = failureOf(old)
    assert(f._tag === "OOM")
    assert.deepInclude(f, {
      kind: "cuda-alloc",
      gpu: 0,
      triedGiB: 0.17,
      totalGiB: 79.35,
      freeGiB: 0.01,
      allocatedGiB: 73.95,
      reservedGiB: 76.8,
      reservedUnallocatedGiB: 2.85
    })
  })

  it("torch >= 2.1: the same numbers, reserved derived from allocated and unallocated", () => {
    const f = failureOf(current)
    assert(f._tag === "OOM")
    assert.deepInclude(f, {
      gpu: 7,
      triedGiB: 0.26,
      totalGiB: 23.65,
      freeGiB: 0.2,
      allocatedGiB: 22.87,
      reservedUnallocatedGiB: 0.01,
      reservedGiB: 22.88
    })
    assert.strictEqual(f.process, "rank 7")
  })

  it("a training step's fix: less memory per step, not a server's flag", () => {
    const f = failureOf(current)
    assert.isUndefined(f.fix?.flags)
    assert.include(f.fix?.action, "batch size")
    assert.include(f.fix?.action, "gradient accumulation")
    assert.include(f.fix?.action, "activation (gradient) checkpointing")
  })

  it("memory reserved but unallocated (fragmentation) is fixed by expandable segments first", () => {
    const fragmented = trainingFix(oomNumbers(old.join("")))
    assert.include(fragmented.action, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    assert.include(fragmented.action, "2.85 GiB is reserved by PyTorch but unallocated")
    // 6.23 MiB unallocated is no fragmentation
    assert.notInclude(trainingFix(oomNumbers(current[1]!)).action, "expandable_segments")
    // https://github.com/wxian3/NeuroLens/issues/2: one allocation larger than the GPU
    const tooLarge = oomNumbers(
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 55.57 GiB. GPU 0 has a total capacty of 12.00 GiB of which 9.02 GiB is free. Of the allocated memory 984.52 MiB is allocated by PyTorch, and 463.48 MiB is reserved by PyTorch but unallocated."
    )
    assert.deepInclude(tooLarge, { triedGiB: 55.57, totalGiB: 12, freeGiB: 9.02, allocatedGiB: 0.96 })
    assert.include(trainingFix(tooLarge).action, "more than the whole GPU (12 GiB)")
  })

  it("`0 bytes` free is a number too", () => {
    // https://github.com/richard-peng-xia/MMed-RAG/issues/38 (its wording: `capacty`, `0 bytes`)
    assert.deepInclude(
      oomNumbers(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacty of 8.00 GiB of which 0 bytes is free."
      ),
      { triedGiB: 0.06, totalGiB: 8, freeGiB: 0 }
    )
  })

  it("an OOM on a rank above torchrun's ChildFailedError is the OOM, not the launcher's failure", () => {
    // https://github.com/hiyouga/LlamaFactory/issues/3956
    const f = failureOf([
      "`torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 792.00 MiB. GPU `",
      "",
      "```",
      "raise ChildFailedError(",
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
      "============================================================",
      "/home/thomas/LLaMA-Factory/src/llamafactory/launcher.py FAILED",
      "------------------------------------------------------------",
      "```"
    ])
    assert.strictEqual(f._tag, "OOM")
    assert.deepInclude(f, { triedGiB: 0.77 })
    // the launcher's lines came after the OOM: the log is a job's, the fix a training step's
    assert.include(f.fix?.action, "batch size")
  })
})

describe("NCCL's watchdog: the collective, the rank and the timeout", () => {
  it("a collective timed out", () => {
    // https://github.com/hiyouga/LlamaFactory/issues/6269
    const f = failureOf([
      "[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.",
      "[rank0]:[E1206 18:44:12.715588844 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 7753, last enqueued NCCL work: 7755, last completed NCCL work: 7752."
    ])
    assert(f._tag === "DistributedError")
    assert.deepInclude(f, {
      kind: "collective-timeout",
      rank: 0,
      op: "_REDUCE_SCATTER_BASE",
      seqNum: 7753,
      timeoutMs: 600000,
      ranForMs: 600061
    })
    assert.include(f.fix?.action, "a collective timed out")
  })

  it("the watchdog itself stuck", () => {
    // https://github.com/verl-project/verl/issues/1158
    const f = failureOf([
      "```",
      "[rank2]:[E419 10:53:25.421620797 ProcessGroupNCCL.cpp:1484] [PG ID 2 PG GUID 9 Rank 2] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog, and could be triggered by another thread holding the GIL inside a CUDA api (for example, CudaEventDestroy), or other deadlock-prone behaviors.If you suspect the watchdog is not actually stuck and a longer timeout would help, you can either increase the timeout (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) to a larger value or disable the heartbeat monitor (TORCH_NCCL_ENABLE_MONITORING=0).If either of aforementioned helps, feel free to file an issue to PyTorch about the short timeout or false positive abort; otherwise, please attempt to debug the hang. "
    ])
    assert(f._tag === "DistributedError")
    assert.deepInclude(f, { kind: "watchdog-stuck", rank: 2 })
  })

  it("NCCL's unhandled cuda error", () => {
    // https://github.com/pytorch/pytorch/issues/62316
    const f = failureOf([
      '  File "/home/sevati/anaconda3/envs/cosypose/lib/python3.7/site-packages/torch/distributed/distributed_c10d.py", line 1960, in barrier',
      "    work = _default_pg.barrier()",
      "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:784, unhandled cuda error, NCCL version 2.7.8"
    ])
    assert(f._tag === "DistributedError")
    assert.strictEqual(f.kind, "nccl-error")
  })
})

describe("torchrun's ChildFailedError with no root cause above it: the rank it names", () => {
  it("the Root Cause table's rank and exit code", () => {
    // https://github.com/Vision-CAIR/MiniGPT-4/issues/237
    const f = failureOf([
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
      "============================================================",
      "train.py FAILED",
      "------------------------------------------------------------",
      "Failures:",
      "[1]:",
      "  time      : 2023-05-19_16:39:58",
      "  host      : n136-117-136.byted.org",
      "  rank      : 1 (local_rank: 1)",
      "  exitcode  : 1 (pid: 78971)",
      "  error_file: <N/A>",
      "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
      "------------------------------------------------------------",
      "Root Cause (first observed failure):",
      "[0]:",
      "  time      : 2023-05-19_16:39:58",
      "  host      : n136-117-136.byted.org",
      "  rank      : 0 (local_rank: 0)",
      "  exitcode  : 1 (pid: 78970)",
      "  error_file: <N/A>",
      "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
      "============================================================"
    ])
    assert(f._tag === "ProcessExited")
    assert.deepInclude(f, { rank: 0, exitCode: 1, process: "rank 0" })
    assert.include(f.reason, "rank 0 failed first with exitcode 1 (pid 78970)")
    assert.isTrue(f.evidence.some((e) => e.text.includes("exitcode  : 1 (pid: 78970)")))
  })

  it("a rank killed by SIGKILL with nothing else said is the host's OOM killer", () => {
    // https://github.com/meta-llama/llama/issues/856
    const f = failureOf([
      "> initializing pipeline with size 1",
      "[2023-10-13 17:40:02,544] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 0 (pid: 62498) of binary: /home/znr/miniconda3/envs/llama/bin/python",
      "Traceback (most recent call last):",
      '  File "/home/znr/miniconda3/envs/llama/bin/torchrun", line 8, in <module>',
      "    sys.exit(main())"
    ])
    assert(f._tag === "HostOutOfMemory")
    assert.deepInclude(f, { kind: "sigkill", rank: 0, pid: 62498, exitCode: -9, signal: "SIGKILL" })
    assert.include(f.fix?.action, "num_workers")
  })

  it("an exception the rank printed before its SIGKILL keeps its place", () => {
    // the bash job report of https://github.com/vllm-project/vllm/issues/12245, after the exception
    const f = failureOf([
      "ERROR 01-21 13:47:36 core.py:205] KeyError: 'Cannot find `mm_limits` for model=/mnt/bn/nas-develop-lyc/mlx/users/yuchen.lyc/src/ui_vllm_deploy/bin/../model/Qwen/Qwen2-VL-7B-Instruct. Did you forget to call `init_mm_limits_per_prompt`?'",
      "CRITICAL 01-21 13:47:36 core_client.py:146] Got fatal signal from worker processes, shutting down. See stack trace above for root cause issue.",
      `bin/qwen2_vl-deploy_vllm.sh: line 46:  7164 Killed                  vllm serve \${MODEL_DIR}/\${MODEL_ID} --served-model-name \${MODEL_TYPE} --host :: --port \${PORT} --guided-decoding-backend lm-format-enforcer --tensor-parallel-size \${NUM_DEVICE} --enable-prefix-caching --gpu-memory-utilization 0.9 --max-model-len \${MAX_MODEL_LEN} --mm-processor-kwargs "{\\"min_pixels\\": $MIN_PIXELS, \\"max_pixels\\": $MAX_PIXELS}" --limit-mm-per-prompt image=\${NUM_IMAGES_PER_REQUEST}`
    ])
    assert.strictEqual(f._tag, "Unclassified")
    assert.include(f.reason, "KeyError")
  })
})

describe("the host's memory", () => {
  it("the kernel's OOM killer, with the process it killed", () => {
    // https://github.com/ShengcaiLiao/QAConv/issues/19
    const f = failureOf([
      "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice/user-1000.slice/user@1000.service,task=python,pid=698405,uid=1000",
      "[441280.839852] Out of memory: Killed process 698405 (python) total-vm:49978204kB, anon-rss:12918388kB, file-rss:68668kB, shmem-rss:53352kB, UID:1000 pgtables:49772kB oom_score_adj:0"
    ])
    assert(f._tag === "HostOutOfMemory")
    assert.strictEqual(f.kind, "oom-killer")
    // the first line is the finding; the next names the process
    const killed = failureOf([
      "[441280.839852] Out of memory: Killed process 698405 (python) total-vm:49978204kB, anon-rss:12918388kB, file-rss:68668kB, shmem-rss:53352kB, UID:1000 pgtables:49772kB oom_score_adj:0"
    ])
    assert.deepInclude(killed, { kind: "oom-killer", pid: 698405, command: "python", residentGiB: 12.32 })
  })

  it("a shell's `Killed` after a python process", () => {
    // https://github.com/castorini/hedwig/issues/70
    const f = failureOf([
      "```Note: You are using GPU for training",
      "100%██████████████████| 3000001/3000001 [03:33<00:00, 14061.26it/s]",
      "Killed",
      "```"
    ])
    assert(f._tag === "HostOutOfMemory")
    assert.deepInclude(f, { kind: "sigkill", exitCode: 137, signal: "SIGKILL" })
  })

  it("deepspeed's launcher: a rank's return code -9", () => {
    // https://github.com/deepspeedai/DeepSpeed/issues/3232
    const f = failureOf([
      "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266",
      "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', '--local_rank=0', '--zero_stage', '2', '--deepspeed'] exits with return code = -9"
    ])
    assert(f._tag === "HostOutOfMemory")
    assert.deepInclude(f, { kind: "sigkill", rank: 0, exitCode: -9 })
  })
})

describe("the session hanging up", () => {
  it("torchrun's agent got SIGHUP (logged at WARNING level, still the cause)", () => {
    // https://github.com/JingyunLiang/VRT/issues/47
    const f = failureOf([
      "22-09-01 03:06:01.631 : <epoch:  0, iter:     800, lr:4.000e-04> G_loss: 7.941e-02 ",
      "WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers",
      "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2704351 closing signal SIGHUP",
      "Traceback (most recent call last):"
    ])
    assert(f._tag === "Hangup")
    assert.strictEqual(f.signal, "SIGHUP")
    assert.include(f.fix?.action, "run it detached")
  })

  it("the SignalException names the process", () => {
    // https://github.com/FlagOpen/FlagEmbedding/issues/695
    const f = failureOf([
      "torch.distributed.elastic.multiprocessing.api.SignalException: Process 792735 got signal: 1"
    ])
    assert(f._tag === "Hangup")
    assert.strictEqual(f.pid, 792735)
  })
})

describe("a diverged loss", () => {
  it("a trainer that raises on it", () => {
    // https://github.com/gist-ailab/uoais/issues/16
    const f = failureOf([
      "[11/15 02:06:37 adet.trainer]: Starting training from iteration 0",
      "Traceback (most recent call last):",
      '  File "/root/anaconda3/envs/uoais/lib/python3.7/site-packages/detectron2/engine/train_loop.py", line 339, in write_metrics',
      '    f"Loss became infinite or NaN at iteration={storage.iter}!\\n"',
      "FloatingPointError: Loss became infinite or NaN at iteration=0!"
    ])
    assert(f._tag === "LossDiverged")
    assert.deepInclude(f, { kind: "raised", step: 0 })
    assert.include(f.fix?.action, "bf16")
  })

  it("a script that says it stops", () => {
    // https://github.com/DIUx-xView/xview3-reference/issues/18
    const f = failureOf([
      "Epoch: [0]  [ 0/65]  eta: 0:01:55  lr: 0.000125  loss: 2.9749 (2.9749)  loss_classifier: 1.1639 (1.1639)",
      "Loss is nan, stopping training",
      "SystemExit: 1"
    ])
    assert.strictEqual(f._tag, "LossDiverged")
  })

  // https://github.com/LaVi-Lab/VG-LLM/issues/21: the HF Trainer logs NaN and goes on
  const goesOn = [
    "{'loss': 1.7018, 'grad_norm': nan, 'learning_rate': 1.3513513513513515e-06, 'epoch': 0.01}",
    "  1%|          | 10/1233 [07:54<14:12:16, 41.81s/it]",
    // https://github.com/AnswerDotAI/ModernBERT/issues/233
    "{'loss': 0.2051, 'grad_norm': nan, 'learning_rate': 9.774074342405685e-06, 'epoch': 0.53}",
    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 9.773696745450087e-06, 'epoch': 0.53}",
    // https://github.com/nv-tlabs/LION/issues/9 (a loss that is nan itself)
    "2023-01-25 00:21:34.569 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E6 iter[ 14/ 15] | [Loss] nan | [exp] ./exp/0125/car/3dbf3ah_hvae_lion_B40 | [step]   104 |",
    "2023-01-25 00:22:00.025 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E7 iter[ 14/ 15] | [Loss] nan | [exp] ./exp/0125/car/3dbf3ah_hvae_lion_B40 | [step]   119 |"
  ]

  it("NaN lines in a job that goes on and exits 0 are no failure", () => {
    const text = goesOn.join("\n")
    assert.isUndefined(Classifier.classifyText(text, { exitCode: 0, signal: null }).failure)
    // nor with the exit unknown (diagnose on a log)
    assert.isUndefined(Classifier.classifyText(text).failure)
    // and the classifier's stream says no Failed either
    assert.isFalse(Classifier.classifyText(text).events.some((e) => e._tag === "Failed"))
  })

  it("the same lines then a non-zero exit: the loss diverged, with the NaN line as evidence", () => {
    const f = failureOf(goesOn, { exitCode: 1, signal: null })
    assert(f._tag === "LossDiverged")
    assert.strictEqual(f.kind, "exited-after-nan")
    assert.include(f.evidence[0]?.text, "[Loss] nan")
  })

  it("NaN losses then torchrun's word on a rank's exit: the loss diverged", () => {
    const f = failureOf([
      ...goesOn,
      // https://github.com/hiyouga/LlamaFactory/issues/6827 (the table's root cause)
      "Root Cause (first observed failure):",
      "[0]:",
      "  rank      : 0 (local_rank: 0)",
      "  exitcode  : 1 (pid: 907695)",
      "============================================================"
    ])
    assert.strictEqual(f._tag, "LossDiverged")
  })

  it("a script that said its loss diverged but exited 0 is no failure", () => {
    assert.isUndefined(
      Classifier.classifyText("Loss is nan, stopping training", { exitCode: 0, signal: null }).failure
    )
  })
})
