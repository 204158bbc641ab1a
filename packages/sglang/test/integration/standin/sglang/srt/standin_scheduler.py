"""One stand-in scheduler rank (`python -m sglang.srt.standin_scheduler`, its config as JSON on stdin).

Prints the per-rank startup lines of SGLang 0.5.11 with its ` TP{rank}` prefix, holds fake
GPU memory while alive (on its physical GPU: in a container, the rank-th one it was given),
reports readiness to the launcher through a pipe, and follows the child-failure path on OOM
or on NCCL's shared-memory failure (TP > 1 with a small /dev/shm): `Scheduler hit an
exception: <traceback>`, then SIGQUIT to the launcher, which kills the tree.
"""

import json
import logging
import os
import signal
import sys
import threading
import time
import traceback

from sglang.srt.standin_common import (
    GPU_TOTAL_MIB,
    configure_logger,
    hold_gpu_memory,
    nccl_shm_check,
    pause,
    physical_gpu,
    release_gpu_memory,
    stamp,
)

logger = logging.getLogger(__name__)


class OutOfMemoryError(RuntimeError):
    pass


# Printed by tracebacks as `torch.OutOfMemoryError`, like PyTorch's own error.
OutOfMemoryError.__module__ = "torch"


def allocate_kv_cache(rank: int, tp_size: int, mem_fraction_static: float):
    # The simple memory model of the stand-in: above 0.95 the static pool leaves no room for
    # activations and the allocator fails on the last rank.
    if mem_fraction_static > 0.95 and rank == tp_size - 1:
        free_mib = GPU_TOTAL_MIB * (1 - mem_fraction_static)
        raise OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate 2.50 GiB. GPU {rank} has a total capacity of 47.99 GiB of "
            f"which {free_mib:.2f} MiB is free. Including non-PyTorch memory, this process has 47.50 GiB memory "
            "in use. Of the allocated memory 46.10 GiB is allocated by PyTorch, and 0.90 GiB is reserved by "
            "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
            "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
        )


class Scheduler:
    def __init__(self, rank: int, local_rank: int, tp_size: int, go_fd: int, args: dict):
        self.rank = rank
        self.args = args
        logger.info("Init torch distributed begin.")
        # the launcher says go once the nodes have met (at once on one node)
        os.read(go_fd, 2)
        os.close(go_fd)
        if tp_size > 1:
            nccl_shm_check(rank)
        pause()
        logger.info("Init torch distributed ends. elapsed=0.41 s, mem usage=0.29 GB")
        logger.info("Load weight begin. avail mem=46.93 GB")
        if rank == 0:
            logger.info("Using model weights format ['*.safetensors']")
        pause(2)
        hold_gpu_memory(physical_gpu(local_rank), 27500)
        logger.info(
            "Load weight end. elapsed=2.15 s, type=Qwen3_5ForConditionalGeneration, avail mem=20.07 GB, "
            "mem usage=26.86 GB."
        )
        allocate_kv_cache(rank, tp_size, args["mem_fraction_static"])
        logger.info("Mamba Cache is allocated. max_mamba_cache_size: 96, conv_state size: 0.28GB, ssm_state size: 2.02GB ")
        logger.info("KV Cache is allocated. #tokens: 212480, K size: 6.48 GB, V size: 6.48 GB")
        hold_gpu_memory(physical_gpu(local_rank), 42800)
        logger.info("Memory pool end. avail mem=4.79 GB")
        if not args["disable_cuda_graph"]:
            logger.info("Capture cuda graph begin. This can take up to several minutes. avail mem=4.71 GB")
            logger.info("Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24, 32, 40, 48]")
            pause(2)
            logger.info("Capture cuda graph end. Time elapsed: 3.12 s. mem usage=0.64 GB. avail mem=4.07 GB.")
        if args["speculative_algorithm"] is not None:
            logger.info("Capture draft cuda graph begin. This can take up to several minutes. avail mem=4.05 GB")
            pause()
            logger.info("Capture draft cuda graph end. Time elapsed: 1.02 s. mem usage=0.21 GB. avail mem=3.84 GB.")
        if rank == 0:
            logger.info(
                "max_total_num_tokens=212480, chunked_prefill_size=%s, max_prefill_tokens=16384, "
                "max_running_requests=%s, context_len=262144, available_gpu_mem=3.84 GB",
                args["chunked_prefill_size"],
                args["max_running_requests"] or 2048,
            )


def exit_with_parent(parent_pid: int) -> None:
    # The launcher's tree kill normally takes us down; this covers a launcher killed alone.
    while True:
        if os.getppid() != parent_pid:
            release_gpu_memory()
            os._exit(0)
        time.sleep(0.2)


def main() -> None:
    config = json.loads(sys.stdin.read())
    rank, tp_size, ready_fd, parent_pid = config["rank"], config["tp_size"], config["ready_fd"], config["parent_pid"]
    configure_logger(f" TP{rank}" if tp_size > 1 else "")
    threading.Thread(target=exit_with_parent, args=(parent_pid,), daemon=True).start()
    try:
        Scheduler(rank, config["local_rank"], tp_size, config["go_fd"], config["server_args"])
    except Exception:
        logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        stamp("crash", rank=rank)
        os.kill(parent_pid, signal.SIGQUIT)
        time.sleep(60)
        sys.exit(1)
    os.write(ready_fd, b"ready")
    os.close(ready_fd)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
