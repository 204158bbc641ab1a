#!/usr/bin/env python3
"""Stand-in training run for mlops' job tests, written from how torchrun and PyTorch behave
(not from mlops' code): `--nproc-per-node N` workers (forked children, one per GPU that
CUDA_VISIBLE_DEVICES gives), each registering the GPU memory it "allocates" where the stand-in
nvidia-smi reads it (`$STANDIN_GPU_REGISTRY/<pid>`, else `<venv>/standin-gpu/<pid>`: physical GPU
index, MiB, start time), printing one line per step. In a container the GPUs are those `--gpus`
gave (NVIDIA_VISIBLE_DEVICES), numbered from 0 as CUDA numbers them there. `--fail oom` at step `--fail-at K` prints PyTorch's CUDA out-of-memory error on rank 0
and torchrun's ChildFailedError report, then exits 1, as torchrun does.

Flags: --nproc-per-node N (1), --steps N (10), --step-seconds S (0.1), --fail oom, --fail-at K.
"""

import os
import signal
import sys
import time

VENV = sys.prefix
REGISTRY = os.environ.get("STANDIN_GPU_REGISTRY") or os.path.join(VENV, "standin-gpu")
WORKER_MIB = 21504


def flag(name, default):
    argv = sys.argv[1:]
    for i, word in enumerate(argv):
        if word == name and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return default


def start_time():
    with open("/proc/self/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def register(gpu):
    os.makedirs(REGISTRY, exist_ok=True)
    with open(os.path.join(REGISTRY, str(os.getpid())), "w") as f:
        f.write(f"{gpu} {WORKER_MIB} {start_time()}\n")


def unregister():
    try:
        os.unlink(os.path.join(REGISTRY, str(os.getpid())))
    except FileNotFoundError:
        pass


def worker(rank, gpu, steps, step_seconds, fail, fail_at):
    register(gpu)
    signal.signal(signal.SIGTERM, lambda *_: (unregister(), os._exit(143)))
    loss = 2.4
    for step in range(1, steps + 1):
        time.sleep(step_seconds)
        if fail == "oom" and step == fail_at and rank == 0:
            print("Traceback (most recent call last):", file=sys.stderr)
            print('  File "train.py", line 88, in <module>', file=sys.stderr)
            print("    loss.backward()", file=sys.stderr)
            print(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                "capacity of 47.41 GiB of which 1.13 GiB is free. Including non-PyTorch memory, this process "
                "has 46.27 GiB memory in use. Of the allocated memory 43.90 GiB is allocated by PyTorch, and "
                "1.87 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
                "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
                "documentation for Memory Management  "
                "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
                file=sys.stderr,
                flush=True,
            )
            unregister()
            os._exit(1)
        loss *= 0.93
        if rank == 0:
            print(f"{{'loss': {loss:.4f}, 'learning_rate': 0.0001, 'step': {step}}}", flush=True)
    unregister()
    os._exit(0)


def main():
    workers = int(flag("--nproc-per-node", "1"))
    steps = int(flag("--steps", "10"))
    step_seconds = float(flag("--step-seconds", "0.1"))
    fail = flag("--fail", None)
    fail_at = int(flag("--fail-at", str(max(1, steps // 2))))
    # the node's GPUs: a container's are its device nodes (CDI) or those `--gpus` gave it
    # (NVIDIA_VISIBLE_DEVICES), as physical indices; a host's both
    try:
        nodes = sorted(int(n[6:]) for n in os.listdir("/dev") if n.startswith("nvidia") and n[6:].isdigit())
    except OSError:
        nodes = []
    devices = os.environ.get("NVIDIA_VISIBLE_DEVICES")
    if nodes:
        node = [str(n) for n in nodes]
    elif devices is None or devices == "all":
        node = ["0", "1"]
    else:
        node = [d.strip() for d in devices.split(",") if d.strip().isdigit()]
    # as CUDA: unset, every GPU of the node; set, those it names (empty: none) as ordinals of the node's
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    visible = (
        node
        if given is None
        else [node[int(g)] for g in given.split(",") if g.strip().isdigit() and int(g) < len(node)]
    )
    if len(visible) < workers:
        print("RuntimeError: CUDA error: invalid device ordinal", file=sys.stderr, flush=True)
        sys.exit(1)
    print(f"training on GPU {','.join(visible)} with {workers} worker(s)", flush=True)
    children = []
    for rank in range(workers):
        pid = os.fork()
        if pid == 0:
            worker(rank, int(visible[rank]), steps, step_seconds, fail, fail_at)
        children.append(pid)
    failed = None
    for pid in children:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0 and failed is None:
            failed = (pid, code)
    if failed is not None:
        pid, code = failed
        now = time.strftime("%Y-%m-%d_%H:%M:%S")
        report = [
            f"E0000 00:00:00.000000 {os.getpid()} torch/distributed/elastic/multiprocessing/api.py:874] "
            f"failed (exitcode: {code}) local_rank: 0 (pid: {pid}) of binary: {sys.executable}",
            "Traceback (most recent call last):",
            '  File "/usr/local/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "============================================================",
            "train.py FAILED",
            "------------------------------------------------------------",
            "Failures:",
            "  <NO_OTHER_FAILURES>",
            "------------------------------------------------------------",
            "Root Cause (first observed failure):",
            "[0]:",
            f"  time      : {now}",
            f"  host      : {os.uname().nodename}",
            "  rank      : 0 (local_rank: 0)",
            f"  exitcode  : {code} (pid: {pid})",
            "  error_file: <N/A>",
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
            "============================================================",
        ]
        print("\n".join(report), file=sys.stderr, flush=True)
        sys.exit(1)
    print("{'train_runtime': %.1f}" % (steps * step_seconds), flush=True)


if __name__ == "__main__":
    main()
