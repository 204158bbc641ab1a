"""Shared helpers of the stand-in launcher and scheduler processes: logging in SGLang's
format, the phase pacing, timing stamps for benches, and the fake GPU memory registry that
the stand-in `nvidia-smi` reads.
"""

import json
import logging
import os
import sys
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
    """`<venv>/standin-gpu`: one file per process holding fake GPU memory (`<gpu index> <MiB>`)."""
    return os.path.join(sys.prefix, "standin-gpu")


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
