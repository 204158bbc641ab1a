"""Shared helpers of the stand-in launcher and scheduler processes: logging in SGLang's
format, the phase pacing, timing stamps for benches, the fake GPU memory registry that
the stand-in `nvidia-smi` reads, and what a container changes: which GPUs it was given, torch's
error when it was given none, NCCL's when its /dev/shm is too small.
"""

import json
import logging
import os
import random
import re
import socket
import string
import sys
import threading
import time

GPU_TOTAL_MIB = 49140


def configure_logger(prefix: str = "") -> logging.Logger:
    """`[%(asctime)s{prefix}] %(message)s` on stderr, flushed per record (the log is a file)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"[%(asctime)s{prefix}] %(message)s", datefmt="%Y-%m-%d %H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    return root


def phase_seconds() -> float:
    """Seconds each startup phase takes; real SGLang takes minutes, tests want a fraction of a second."""
    return float(os.environ.get("STANDIN_PHASE_SECONDS", "0.05"))


def pause(phases: float = 1.0) -> None:
    time.sleep(phase_seconds() * phases)


def stamp(event: str, **fields) -> None:
    """Append `{"event", "ms", ...}` to $STANDIN_STAMP_FILE (benches measure from these)."""
    path = os.environ.get("STANDIN_STAMP_FILE")
    if not path:
        return
    record = {"event": event, "ms": time.time() * 1000, "pid": os.getpid(), **fields}
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def gpu_registry_dir() -> str:
    """`$STANDIN_GPU_REGISTRY`, else `<venv>/standin-gpu`: one file per process holding fake GPU
    memory (`<gpu index> <MiB> <start time>`). Images set it to /var/lib/standin-gpu, where the
    host's stand-in nvidia-smi looks through /proc/<pid>/root."""
    return os.environ.get("STANDIN_GPU_REGISTRY") or os.path.join(sys.prefix, "standin-gpu")


def in_container() -> bool:
    """Inside a container that an engine started: its marker (/.dockerenv from docker,
    /run/.containerenv from podman) written when the container was made, so after this machine
    booted. A machine that was itself built from a container image keeps a stale /.dockerenv from
    before its boot (these test machines do): that is a plain host."""
    try:
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, StopIteration, ValueError, IndexError):
        boot = 0
    for marker in ("/.dockerenv", "/run/.containerenv"):
        try:
            if os.stat(marker).st_mtime >= boot:
                return True
        except OSError:
            pass
    return False


def visible_gpus():
    """The physical GPU indices a container was given, in order; None when unrestricted (a plain
    host, or NVIDIA_VISIBLE_DEVICES=all). Device nodes /dev/nvidia<N> first (CDI puts them
    there; a container given several CDI devices sees only the last one's env), then
    NVIDIA_VISIBLE_DEVICES as `docker run --gpus` sets it (`void`, `none` or unset: no GPU)."""
    if not in_container():
        return None
    try:
        nodes = sorted(int(name[6:]) for name in os.listdir("/dev") if re.fullmatch(r"nvidia[0-9]+", name))
    except OSError:
        nodes = []
    if nodes:
        return nodes
    devices = os.environ.get("NVIDIA_VISIBLE_DEVICES", "").strip()
    if devices in ("", "void", "none"):
        return []
    if devices == "all":
        return None
    return [int(d) for d in devices.split(",") if d.strip().isdigit()] or None


def physical_gpu(rank: int) -> int:
    """The GPU a rank uses, as the driver (and the host's nvidia-smi) numbers it: in a container
    given `--gpus '"device=1"'` rank 0 runs on GPU 1."""
    gpus = visible_gpus()
    return rank if not gpus else gpus[rank % len(gpus)]


def cuda_lazy_init() -> None:
    """torch.cuda's first use in a container started without a GPU (no --gpus, no CDI device)."""
    if visible_gpus() == []:
        raise RuntimeError("No CUDA GPUs are available")


class DistBackendError(RuntimeError):
    pass


# Printed by tracebacks as `torch.distributed.DistBackendError`, like PyTorch's own error.
DistBackendError.__module__ = "torch.distributed"

NCCL_SEGMENT = 9637888


def shm_needed_mib() -> float:
    return float(os.environ.get("STANDIN_SHM_NEEDED_MB", "256"))


def shm_size_mib() -> float:
    st = os.statvfs("/dev/shm")
    return st.f_blocks * st.f_frsize / (1024 * 1024)


def nccl_shm_check(rank: int) -> None:
    """NCCL's shared-memory transport between the ranks of one machine: with /dev/shm smaller
    than STANDIN_SHM_NEEDED_MB (default 256; docker's default /dev/shm is 64 MB) creating the
    segment fails. The WARN lines appear only with NCCL_DEBUG set (WARN/INFO/TRACE), as NCCL
    prints nothing by default; their text is NCCL's, from
    https://github.com/NVIDIA/nccl-tests/issues/166 (host:pid:tid [dev] prefix, NCCL's format).
    The exception is torch's, verbatim from a SGLang server's log in
    https://github.com/sgl-project/sgl-project.github.io/issues/5 (and
    https://github.com/pytorch/torchtitan/issues/853)."""
    if shm_size_mib() >= shm_needed_mib():
        return
    segment = "/dev/shm/nccl-" + "".join(random.choice(string.ascii_letters + string.digits) for _ in range(6))
    level = os.environ.get("NCCL_DEBUG", "").upper()
    if level in ("WARN", "INFO", "TRACE"):
        prefix = f"{socket.gethostname()}:{os.getpid()}:{threading.get_native_id()} [{rank}]"
        lines = [
            "",
            f"{prefix} misc/shmutils.cc:71 NCCL WARN Error: failed to extend {segment} to {NCCL_SEGMENT + 4} bytes",
            "",
            f"{prefix} misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment {segment} "
            f"(size {NCCL_SEGMENT})",
        ]
        if level != "WARN":
            lines += [f"{prefix} NCCL INFO transport/shm.cc:114 -> 2", f"{prefix} NCCL INFO transport.cc:33 -> 2"]
        print("\n".join(lines), flush=True)
    raise DistBackendError(
        "NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:81, unhandled system error (run with "
        "NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
        "Last error:\n"
        f"Error while creating shared memory segment {segment} (size {NCCL_SEGMENT})"
    )


def start_time(pid: int) -> str:
    """Field 22 of /proc/<pid>/stat: tells this process from a later one that reuses its pid."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def hold_gpu_memory(gpu_index: int, mib: int) -> None:
    os.makedirs(gpu_registry_dir(), exist_ok=True)
    with open(os.path.join(gpu_registry_dir(), str(os.getpid())), "w") as f:
        f.write(f"{gpu_index} {mib} {start_time(os.getpid())}\n")


def release_gpu_memory() -> None:
    try:
        os.remove(os.path.join(gpu_registry_dir(), str(os.getpid())))
    except FileNotFoundError:
        pass
