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
"""

import argparse
import json
import os
import signal
import sys
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
    return p


def dashes(words):
    out = []
    for w in words:
        if w.startswith("--"):
            key, eq, value = w.partition("=")
            w = key.replace("_", "-") + eq + value
        out.append(w)
    return out


def engine_core(args, config, ready_w):
    """The engine core process: load, size the KV cache, capture graphs, report ready."""
    me = f"EngineCore_DP0 pid={os.getpid()}"
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
    log("kv_cache_utils.py:1291", f"GPU KV cache size: {tokens:,} tokens", worker=me)
    log("kv_cache_utils.py:1296", f"Maximum concurrency for {max_len:,} tokens per request: {tokens / max_len:.2f}x", worker=me)
    if not args.enforce_eager:
        time.sleep(PACE)
        print("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 [00:01<00:00, 50.1it/s]", flush=True)
        log("gpu_model_runner.py:3480", "Graph capturing finished in 1 secs, took 0.52 GiB", worker=me)
    log("core.py:210", "init engine (profile, create kv cache, warmup model) took 1.20 seconds", worker=me)
    os.write(ready_w, b"ready")
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        time.sleep(3600)


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
            choice = {"index": 0, "text": " world", "finish_reason": "length"}
            return self.reply(200, {"id": "cmpl-standin", "object": "text_completion", "model": self.served, "choices": [choice]})
        return self.reply(404, {"detail": "Not Found"})


def serve(argv):
    args = parser().parse_args(dashes(argv))
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
    host = args.host or "0.0.0.0"
    Api.served = (args.served_model_name or [args.model])[0]
    Api.root = args.model
    Api.api_key = (args.api_key or [os.environ.get("VLLM_API_KEY")])[0]
    Api.max_len = max_len
    # the socket is bound (and listening) before the engine starts; nothing answers until ready
    try:
        server = ThreadingHTTPServer((host, args.port), Api)
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
        engine_core(args, config, ready_w)
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
