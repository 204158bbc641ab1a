"""Stand-in `vllm serve` for mlops' end-to-end tests, written from the reference facts
(shared/reference/vllm/README.md), not from mlops' code.

- `vllm serve MODEL [flags]` (or `--model MODEL`); flag names with underscores or dashes.
- The API server process binds its HTTP socket first, then starts the engine core in a child
  process (`EngineCore_DP0`), whose lines carry the `(EngineCore_DP0 pid=N)` prefix.
- A normal start prints the reference's lines in order and only then serves: `/health` (200),
  `/v1/models`, `/v1/completions`, `/version`, `/ping`; `--api-key` guards `/v1/*`.
- The KV cache holds `STANDIN_KV_GIB` GiB (default 4): when one sequence of max_model_len needs
  more, the engine core fails with vLLM's message and the front end ends with
  `Engine core initialization failed`.
- `STANDIN_PHASE_SECONDS` paces the phases (default 0.02).
- In a container (`/.dockerenv` or `/run/.containerenv`, written since boot) given no GPU (no `--gpus`, no CDI device),
  the engine core fails as torch does: `RuntimeError: No CUDA GPUs are available`.
- With `--tensor-parallel-size` > 1 and a /dev/shm smaller than `STANDIN_SHM_NEEDED_MB` (default
  256; docker's default is 64 MB), a worker fails as NCCL does, then the engine core.
- Several nodes (`--nnodes N --node-rank i --master-addr head --master-port port`, `--headless` on
  all but node 0, which alone serves HTTP): node 0's engine core listens on the master port (every
  address, as torch's store does) and the others connect (retrying every 100 ms) and send the
  arguments that shape the model; when all came and all agree, node 0 says go and they load;
  node 0 becomes ready once every node has loaded. Arguments that differ, a node that never
  comes or one that goes away before it loaded leave the others waiting forever, silently, as
  NCCL does; a master port node 0 cannot bind fails at once, as the store does.
- Data parallel across nodes (`--data-parallel-size N --data-parallel-size-local L
  --data-parallel-address head --data-parallel-rpc-port port`, the others `--headless
  --data-parallel-start-rank k`): N / L nodes meet the same way, node 0 (start rank 0) listening
  on the RPC port; the node's place is its start rank / L.
- With `STANDIN_GPU_REGISTRY` set (images set /var/lib/standin-gpu), the engine core registers
  its fake GPU memory there (`<pid>`: `<physical GPU> <MiB> <start time>`) for the host's stand-in
  nvidia-smi; unset (a plain host), it registers nothing, as before.
"""

import argparse
import json
import math
import os
import random
import re
import signal
import socket
import string
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "0.13.0"
PACE = float(os.environ.get("STANDIN_PHASE_SECONDS", "0.02"))
GIB = 1024**3


def stamp():
    return time.strftime("%m-%d %H:%M:%S", time.localtime())


def log(file, message, level="INFO", worker=None):
    prefix = f"({worker}) " if worker else ""
    print(f"{prefix}{level} {stamp()} [{file}] {message}", flush=True)


def in_container():
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
    """Physical GPU indices a container was given (device nodes /dev/nvidia<N> first, then
    NVIDIA_VISIBLE_DEVICES); None when unrestricted (a plain host, or `all`)."""
    if not in_container():
        return None
    try:
        nodes = sorted(int(n[6:]) for n in os.listdir("/dev") if re.fullmatch(r"nvidia[0-9]+", n))
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


def start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def register_gpu_memory(mib):
    registry = os.environ.get("STANDIN_GPU_REGISTRY")
    if not registry:
        return
    gpus = visible_gpus()
    os.makedirs(registry, exist_ok=True)
    with open(os.path.join(registry, str(os.getpid())), "w") as f:
        f.write(f"{gpus[0] if gpus else 0} {mib} {start_time(os.getpid())}\n")


def release_gpu_memory():
    registry = os.environ.get("STANDIN_GPU_REGISTRY")
    if registry:
        try:
            os.remove(os.path.join(registry, str(os.getpid())))
        except FileNotFoundError:
            pass


def engine_failed(me, frames, last):
    """`EngineCore failed to start.` and its traceback, each line with the engine core's prefix."""
    log("core.py:708", "EngineCore failed to start.", level="ERROR", worker=me)
    lines = ["Traceback (most recent call last):"]
    for file, line, function, code in frames:
        lines += [f'  File "/usr/lib/python3/site-packages/{file}", line {line}, in {function}', f"    {code}"]
    for line in lines + last:
        log("core.py:708", line, level="ERROR", worker=me)


def no_cuda_gpus(me):
    engine_failed(
        me,
        [
            ("vllm/v1/engine/core.py", 699, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
            ("vllm/v1/worker/gpu_worker.py", 190, "init_device", "torch.cuda.set_device(self.device)"),
            ("torch/cuda/__init__.py", 567, "set_device", "torch._C._cuda_setDevice(device)"),
            ("torch/cuda/__init__.py", 372, "_lazy_init", "torch._C._cuda_init()"),
        ],
        ["RuntimeError: No CUDA GPUs are available"],
    )


def shm_too_small():
    st = os.statvfs("/dev/shm")
    return st.f_blocks * st.f_frsize / (1024 * 1024) < float(os.environ.get("STANDIN_SHM_NEEDED_MB", "256"))


def nccl_shm_failure(me, tp):
    """Every worker fails creating NCCL's shared-memory segment, then the engine core. The WARN
    lines (printed only with NCCL_DEBUG set, as by NCCL) are NCCL's, from
    https://github.com/NVIDIA/nccl-tests/issues/166; the DistBackendError is torch's as a vLLM
    worker printed it in https://github.com/MiniMax-AI/MiniMax-01/issues/42 (with the lines after
    it from https://github.com/pytorch/torchtitan/issues/853); the worker/engine wrapping is
    vLLM's multiproc executor's (reference: `WorkerProc initialization failed ...`)."""
    size = 9637888
    for rank in range(tp):
        worker = f"VllmWorker rank={rank} pid={os.getpid() + 1 + rank}"
        segment = "/dev/shm/nccl-" + "".join(random.choice(string.ascii_letters + string.digits) for _ in range(6))
        if os.environ.get("NCCL_DEBUG", "").upper() in ("WARN", "INFO", "TRACE"):
            prefix = f"{socket.gethostname()}:{os.getpid() + 1 + rank}:{threading.get_native_id()} [{rank}]"
            print(f"\n{prefix} misc/shmutils.cc:71 NCCL WARN Error: failed to extend {segment} to {size + 4} bytes", flush=True)
            print(f"\n{prefix} misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment {segment} (size {size})", flush=True)
        log("multiproc_executor.py:585", "WorkerProc failed to start.", level="ERROR", worker=worker)
        for line in [
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3/site-packages/vllm/v1/executor/multiproc_executor.py", line 559, in worker_main',
            "    worker = WorkerProc(*args, **kwargs)",
            '  File "/usr/lib/python3/site-packages/vllm/distributed/device_communicators/pynccl.py", line 103, in __init__',
            "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
            '  File "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py", line 4635, in barrier',
            "    work = group.barrier(opts=opts)",
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
            "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
            "Last error:",
            f"Error while creating shared memory segment {segment} (size {size})",
        ]:
            log("multiproc_executor.py:585", line, level="ERROR", worker=worker)
    engine_failed(
        me,
        [
            ("vllm/v1/engine/core.py", 699, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
            ("vllm/v1/executor/multiproc_executor.py", 129, "_init_executor", "self.workers = WorkerProc.wait_for_ready(unready_workers)"),
            ("vllm/v1/executor/multiproc_executor.py", 498, "wait_for_ready", "raise e from None"),
        ],
        [
            "Exception: WorkerProc initialization failed due to an exception in a background process. See stack "
            "trace for root cause."
        ],
    )


def parser():
    p = argparse.ArgumentParser(prog="vllm serve", usage="vllm serve [model_tag] [options]")
    p.add_argument("model_tag", nargs="?")
    p.add_argument("--model")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--max-model-len", type=int, default=None)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--max-num-seqs", type=int, default=None)
    p.add_argument("--served-model-name", nargs="+", default=None)
    p.add_argument("--api-key", nargs="+", default=None)
    p.add_argument("--dtype", default="auto", choices=["auto", "half", "float16", "bfloat16", "float", "float32"])
    p.add_argument("--enforce-eager", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--trust-remote-code", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--speculative-config", type=json.loads, default=None)
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29501)
    p.add_argument("--headless", action="store_true")
    p.add_argument("--data-parallel-size", "-dp", type=int, default=1)
    p.add_argument("--data-parallel-size-local", "-dpl", type=int, default=None)
    p.add_argument("--data-parallel-start-rank", "-dpr", type=int, default=0)
    p.add_argument("--data-parallel-address", "-dpa", default=None)
    p.add_argument("--data-parallel-rpc-port", "-dpp", type=int, default=29550)
    return p


def data_parallel_nodes(args):
    """The data-parallel form across nodes as the nodes' meeting: N / L nodes, this one at start rank / L."""
    local = args.data_parallel_size_local
    if args.data_parallel_size > 1 and local and local < args.data_parallel_size:
        args.nnodes = args.data_parallel_size // local
        args.node_rank = args.data_parallel_start_rank // local
        args.master_addr = args.data_parallel_address or "127.0.0.1"
        args.master_port = args.data_parallel_rpc_port


# what may differ between the nodes of one deployment: where a node listens, which node it is, secrets
NOT_SHAPING = (
    "host", "port", "node_rank", "master_addr", "master_port", "headless", "api_key", "model_tag",
    "data_parallel_start_rank", "data_parallel_address", "data_parallel_rpc_port",
)


def shape_of(args):
    shape = {k: v for k, v in vars(args).items() if k not in NOT_SHAPING}
    shape["version"] = VERSION
    return shape


def hang():
    while True:
        time.sleep(3600)


class Head:
    """Node 0: the store's server, bound before anything loads."""

    def __init__(self, args):
        self.nnodes, self.shape, self.peers = args.nnodes, shape_of(args), []
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind(("0.0.0.0", args.master_port))
        except OSError as e:
            print(f"torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
                  f"address. port: {args.master_port}, useIpv6: false, code: -{e.errno}, name: EADDRINUSE, message: "
                  "address already in use", file=sys.stderr, flush=True)
            sys.exit(1)
        self.listener.listen(64)

    def meet(self):
        while len(self.peers) < self.nnodes - 1:
            conn, _ = self.listener.accept()
            hello = json.loads(conn.makefile("r").readline() or "null")
            if hello is not None:
                self.peers.append((conn, hello))
        if any(hello["shape"] != self.shape for _, hello in self.peers):
            hang()
        for conn, _ in self.peers:
            conn.sendall(b"go\n")

    def loaded(self):
        for conn, _ in self.peers:
            if conn.makefile("r").readline().strip() != "loaded":
                hang()


class Peer:
    """The other nodes: the store's clients."""

    def __init__(self, args):
        self.args, self.conn = args, None

    def meet(self):
        while self.conn is None:
            try:
                self.conn = socket.create_connection((self.args.master_addr, self.args.master_port), timeout=5)
                self.conn.settimeout(None)
            except OSError:
                time.sleep(0.1)
        hello = {"node_rank": self.args.node_rank, "shape": shape_of(self.args)}
        self.conn.sendall((json.dumps(hello) + "\n").encode())
        if self.conn.makefile("r").readline().strip() != "go":
            hang()

    def loaded(self):
        self.conn.sendall(b"loaded\n")


class Decoding:
    """Streams paced like a batched decoder (written for the tests from the issue, not from mlops'
    sim): the prefill step gives the first token, each decoding step L tokens on average, L = 1
    without --speculative-config, else min(k + 1, 1 + a + ... + a^k) with k its
    num_speculative_tokens and a = STANDIN_ACCEPT_RATE (0.7); after j steps a request has
    1 + floor(j * L) tokens. A step lasts STANDIN_STEP_MS (20) x (1 + STANDIN_BATCH_SLOWDOWN (0)
    x (running - 1)) x (1 + STANDIN_DRAFT_COST (0.15) x k). /metrics counts them in vLLM's names."""

    lock = threading.Lock()
    k = 0
    running = prompt_tokens = generation_tokens = requests = drafts = draft_tokens = accepted = 0

    @staticmethod
    def env(name, default):
        try:
            return float(os.environ.get(name, default))
        except ValueError:
            return default

    @classmethod
    def length(cls):
        if cls.k == 0:
            return 1.0
        a = cls.env("STANDIN_ACCEPT_RATE", 0.7)
        return min(float(cls.k + 1), 1.0 + sum(a**i for i in range(1, cls.k + 1)))

    @classmethod
    def step(cls):
        with cls.lock:
            running = cls.running
        t = cls.env("STANDIN_STEP_MS", 20.0) / 1000.0
        t *= 1.0 + cls.env("STANDIN_BATCH_SLOWDOWN", 0.0) * max(0, running - 1)
        return t * (1.0 + cls.env("STANDIN_DRAFT_COST", 0.15) * cls.k)


def metrics_page(model):
    label = f'{{engine="0",model_name="{model}"}}'
    with Decoding.lock:
        rows = [
            ("num_requests_running", "gauge", Decoding.running),
            ("prompt_tokens_total", "counter", Decoding.prompt_tokens),
            ("generation_tokens_total", "counter", Decoding.generation_tokens),
            ("request_success_total", "counter", Decoding.requests),
        ]
        if Decoding.k > 0:
            rows += [
                ("spec_decode_num_drafts_total", "counter", Decoding.drafts),
                ("spec_decode_num_draft_tokens_total", "counter", Decoding.draft_tokens),
                ("spec_decode_num_accepted_tokens_total", "counter", Decoding.accepted),
            ]
    return "".join(f"# TYPE vllm:{n} {t}\nvllm:{n}{label} {float(v)!r}\n" for n, t, v in rows)


def dashes(words):
    out = []
    for w in words:
        if w.startswith("--"):
            key, eq, value = w.partition("=")
            w = key.replace("_", "-") + eq + value
        out.append(w)
    return out


def engine_core(args, config, ready_w, group=None):
    """The engine core process: meet the other nodes (several), load, size the KV cache, capture
    graphs, wait until every node loaded, report ready (a headless node has no one to report to)."""
    me = f"EngineCore_DP0 pid={os.getpid()}"
    if visible_gpus() == []:
        no_cuda_gpus(me)
        os._exit(1)
    if args.tensor_parallel_size > 1 and shm_too_small():
        nccl_shm_failure(me, args.tensor_parallel_size)
        os._exit(1)
    if group is not None:
        group.meet()
    model = args.model
    log("gpu_model_runner.py:2602", f"Starting to load model {model}...", worker=me)
    time.sleep(PACE)
    print("Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:00<00:00, 9.99it/s]", flush=True)
    log("default_loader.py:267", "Loading weights took 0.41 seconds", worker=me)
    log("gpu_model_runner.py:2653", "Model loading took 14.9875 GiB memory and 0.512345 seconds", worker=me)
    time.sleep(PACE)
    log("monitor.py:34", "torch.compile takes 0.20 s in total", worker=me)
    available = float(os.environ.get("STANDIN_KV_GIB", "4"))
    layers = config.get("num_hidden_layers", 32)
    heads = config.get("num_attention_heads", 32)
    kv_heads = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim", config.get("hidden_size", 4096) // heads)
    tp = args.tensor_parallel_size
    per_token = 2 * layers * max(1, kv_heads // tp) * head_dim * 2
    max_len = args.max_model_len or config.get("max_position_embeddings", 2048)
    needed = per_token * max_len / GIB
    log("gpu_worker.py:376", f"Available KV cache memory: {available:.2f} GiB", worker=me)
    if needed > available:
        fits = int(available * GIB // per_token)
        log("core.py:708", "EngineCore failed to start.", level="ERROR", worker=me)
        lines = [
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3/site-packages/vllm/v1/engine/core.py", line 699, in run_engine_core',
            "    engine_core = EngineCoreProc(*args, **kwargs)",
            '  File "/usr/lib/python3/site-packages/vllm/v1/core/kv_cache_utils.py", line 686, in check_enough_kv_cache_memory',
            "    raise ValueError(",
            f"ValueError: To serve at least one request with the models's max seq len ({max_len}), ({needed:.2f} GiB KV "
            f"cache is needed, which is larger than the available KV cache memory ({available:.2f} GiB). Based on the "
            f"available memory, the estimated maximum model length is {fits}. Try increasing `gpu_memory_utilization` "
            "or decreasing `max_model_len` when initializing the engine.",
        ]
        for line in lines:
            log("core.py:708", line, level="ERROR", worker=me)
        os._exit(1)
    tokens = int(available * GIB // per_token)
    register_gpu_memory(15348 + int(available * 1024))
    log("kv_cache_utils.py:1291", f"GPU KV cache size: {tokens:,} tokens", worker=me)
    log("kv_cache_utils.py:1296", f"Maximum concurrency for {max_len:,} tokens per request: {tokens / max_len:.2f}x", worker=me)
    if not args.enforce_eager:
        time.sleep(PACE)
        print("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 [00:01<00:00, 50.1it/s]", flush=True)
        log("gpu_model_runner.py:3480", "Graph capturing finished in 1 secs, took 0.52 GiB", worker=me)
    log("core.py:210", "init engine (profile, create kv cache, warmup model) took 1.20 seconds", worker=me)
    if group is not None:
        group.loaded()
    if ready_w is not None:
        os.write(ready_w, b"ready")

    def on_term(*_):
        release_gpu_memory()
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    while True:
        time.sleep(3600)


class Server(ThreadingHTTPServer):
    # uvicorn's backlog: many clients connecting at once are queued, not reset
    request_queue_size = 2048
    daemon_threads = True


class Api(BaseHTTPRequestHandler):
    served = ""
    root = ""
    api_key = None
    max_len = 0

    def log_message(self, format, *args):  # noqa: A002 - uvicorn-like access lines
        print(f'INFO:     {self.client_address[0]}:{self.client_address[1]} - "{self.requestline}" {args[1]}', flush=True)

    def reply(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def authorized(self):
        if self.api_key is None or not self.path.startswith("/v1/"):
            return True
        return self.headers.get("Authorization") == f"Bearer {self.api_key}"

    def do_GET(self):  # noqa: N802
        if self.path == "/health" or self.path == "/ping":
            return self.reply(200)
        if self.path == "/version":
            return self.reply(200, {"version": VERSION})
        if self.path == "/metrics":
            data = metrics_page(self.served).encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if not self.authorized():
            return self.reply(401, {"error": "Unauthorized"})
        if self.path == "/v1/models":
            card = {"id": self.served, "object": "model", "owned_by": "vllm", "root": self.root, "max_model_len": self.max_len}
            return self.reply(200, {"object": "list", "data": [card]})
        return self.reply(404, {"detail": "Not Found"})

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/ping":
            return self.reply(200)
        if not self.authorized():
            return self.reply(401, {"error": "Unauthorized"})
        if self.path == "/v1/completions":
            if body.get("model") not in (None, self.served):
                message = f"The model `{body.get('model')}` does not exist."
                return self.reply(404, {"object": "error", "message": message, "type": "NotFoundError", "code": 404})
            if body.get("stream"):
                # server-sent events, one chunk per token, the body ending with the connection (HTTP/1.0)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                self.wfile.flush()
                if os.environ.get("STANDIN_NO_STREAM") == "1":
                    while True:
                        time.sleep(3600)
                count = max(1, int(body.get("max_tokens") or 16)) if body.get("ignore_eos") else 1
                prompt = body.get("prompt") if isinstance(body.get("prompt"), str) else ""
                base = {"id": "cmpl-standin", "object": "text_completion", "model": self.served}

                def send(data):
                    self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

                length = Decoding.length()
                with Decoding.lock:
                    Decoding.running += 1
                try:
                    given, steps = 0, -1
                    while given < count:
                        time.sleep(Decoding.step())
                        steps += 1
                        total = min(count, 1 if steps == 0 else 1 + math.floor(steps * length + 1e-9))
                        made = total - given
                        with Decoding.lock:
                            Decoding.generation_tokens += made
                            if steps == 0:
                                Decoding.prompt_tokens += len(prompt.split())
                            elif Decoding.k > 0:
                                Decoding.drafts += 1
                                Decoding.draft_tokens += Decoding.k
                                Decoding.accepted += max(0, made - 1)
                            if total >= count:
                                Decoding.requests += 1
                        given = total
                        send({**base, "choices": [{"index": 0, "text": " world" * made, "logprobs": None, "finish_reason": None}]})
                finally:
                    with Decoding.lock:
                        Decoding.running -= 1
                send({**base, "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": "length"}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    send({**base, "choices": [], "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": count, "total_tokens": len(prompt.split()) + count}})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                return
            choice = {"index": 0, "text": " world", "finish_reason": "length"}
            return self.reply(200, {"id": "cmpl-standin", "object": "text_completion", "model": self.served, "choices": [choice]})
        return self.reply(404, {"detail": "Not Found"})


def serve(argv):
    args = parser().parse_args(dashes(argv))
    data_parallel_nodes(args)
    args.model = args.model or args.model_tag
    if args.model is None:
        args.model = "Qwen/Qwen3-0.6B"
    log("api_server.py:1351", f"vLLM API server version {VERSION}")
    given = {k: v for k, v in vars(args).items() if v is not None and v is not False and k not in ("model_tag",)}
    log("utils.py:253", f"non-default args: {given!r}")
    config_path = os.path.join(args.model, "config.json")
    if not os.path.isfile(config_path):
        print(f"OSError: {args.model} is not a local folder and is not a valid model identifier listed on "
              "'https://huggingface.co/models'", file=sys.stderr, flush=True)
        return 1
    with open(config_path) as f:
        config = json.load(f)
    heads = config.get("num_attention_heads", 1)
    if heads % args.tensor_parallel_size != 0:
        print("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig", file=sys.stderr)
        print(f"  Value error, Total number of attention heads ({heads}) must be divisible by tensor parallel size "
              f"({args.tensor_parallel_size}). [type=value_error]", file=sys.stderr, flush=True)
        return 1
    derived = config.get("max_position_embeddings", 2048)
    max_len = args.max_model_len or derived
    log("model.py:514", f"Resolved architecture: {(config.get('architectures') or ['?'])[0]}")
    log("model.py:1661", f"Using max model len {max_len}")
    if args.nnodes > 1 and args.headless:
        # a node that serves no HTTP: its engine core in this process, until stopped
        log("api_server.py:1351", f"Starting headless node {args.node_rank} of {args.nnodes}")
        engine_core(args, config, None, Peer(args))
        hang()
    group = Head(args) if args.nnodes > 1 else None
    host = args.host or "0.0.0.0"
    Api.served = (args.served_model_name or [args.model])[0]
    Api.root = args.model
    Api.api_key = (args.api_key or [os.environ.get("VLLM_API_KEY")])[0]
    Api.max_len = max_len
    Decoding.k = int((args.speculative_config or {}).get("num_speculative_tokens") or 0)
    # the socket is bound (and listening) before the engine starts; nothing answers until ready
    try:
        server = Server((host, args.port), Api)
    except OSError as error:
        print("Traceback (most recent call last):", file=sys.stderr)
        print(f'  File "/usr/lib/python3/site-packages/vllm/entrypoints/openai/api_server.py", line 1912, in run_server', file=sys.stderr)
        print(f"OSError: [Errno {error.errno}] {error.strerror}", file=sys.stderr, flush=True)
        return 1
    ready_r, ready_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(ready_r)
        server.socket.close()
        engine_core(args, config, ready_w, group)
    os.close(ready_w)

    def stop(*_):
        try:
            os.kill(child, signal.SIGTERM)
        except ProcessLookupError:
            pass
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    message = os.read(ready_r, 16)
    if message != b"ready":
        os.waitpid(child, 0)
        print("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
              "{'EngineCore_DP0': 1}", file=sys.stderr, flush=True)
        return 1
    log("api_server.py:1634", "Supported tasks: ['generate']")
    log("api_server.py:1912", f"Starting vLLM API server 0 on http://{host}:{args.port}")
    log("launcher.py:34", "Available routes are:")
    for route, methods in [("/health", "GET"), ("/v1/models", "GET"), ("/v1/completions", "POST"), ("/version", "GET")]:
        log("launcher.py:42", f"Route: {route}, Methods: {methods}")
    print(f"INFO:     Started server process [{os.getpid()}]", flush=True)
    print("INFO:     Waiting for application startup.", flush=True)
    print("INFO:     Application startup complete.", flush=True)
    server.serve_forever()
    return 0


def main():
    argv = sys.argv[1:]
    if not argv or argv[0] != "serve":
        print("usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...", file=sys.stderr)
        return 2
    return serve(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
