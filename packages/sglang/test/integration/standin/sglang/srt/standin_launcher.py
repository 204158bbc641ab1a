"""The stand-in launcher: spawns one scheduler process per TP rank, waits for them, binds the
HTTP port (after the ranks are ready, like uvicorn in SGLang), warms up with one request to
itself, prints the ready line and serves /health, /model_info, /v1/models, /generate,
/server_info, /v1/completions and (with --enable-metrics) /metrics until killed.

Streamed completions are paced like a batched decoder (written for the tests from the issue's
description, not from mlops' sim): the prefill step gives the first token, then each decoding
step gives L tokens on average, where L = 1 without speculative decoding and
min(draft tokens, 1 + a + a^2 + ... + a^steps) with it (a = STANDIN_ACCEPT_RATE, default 0.7);
after j decoding steps a request has 1 + floor(j * L) tokens. A step lasts STANDIN_STEP_MS
(default 20) x (1 + STANDIN_BATCH_SLOWDOWN x (running requests - 1)) (default 0), x (1 +
STANDIN_DRAFT_COST x steps) (default 0.15) with speculative decoding. /metrics counts what
was generated in SGLang's names (sglang:generation_tokens_total, sglang:spec_accept_length ...).
"""

import dataclasses
import json
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import sglang
from sglang.srt import standin_group
from sglang.srt.server_args import ServerArgs
from sglang.srt.standin_common import configure_logger, cuda_lazy_init, pause, stamp

logger = logging.getLogger(__name__)
UVICORN_INFO = "INFO:     "
UVICORN_ERROR = "ERROR:    "


class State:
    ready = False
    children: list = []
    # this node's part of a multi-node group (None on one node)
    group = None


class Decoding:
    """The pace and the totals of every streamed request (one lock: the HTTP server is threaded)."""

    lock = threading.Lock()
    running = 0
    prompt_tokens = 0
    generation_tokens = 0
    requests = 0
    verify_steps = 0
    accepted_tokens = 0


def env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def speculation(server_args: ServerArgs):
    """(steps, draft tokens) when speculative decoding is on, else None."""
    if server_args.speculative_algorithm is None:
        return None
    steps = server_args.speculative_num_steps or 1
    return steps, server_args.speculative_num_draft_tokens or steps + 1


def accept_length(server_args: ServerArgs) -> float:
    spec = speculation(server_args)
    if spec is None:
        return 1.0
    steps, draft_tokens = spec
    a = env_float("STANDIN_ACCEPT_RATE", 0.7)
    return min(float(draft_tokens), 1.0 + sum(a**i for i in range(1, steps + 1)))


def step_seconds(server_args: ServerArgs) -> float:
    with Decoding.lock:
        running = Decoding.running
    t = env_float("STANDIN_STEP_MS", 20.0) / 1000.0
    t *= 1.0 + env_float("STANDIN_BATCH_SLOWDOWN", 0.0) * max(0, running - 1)
    spec = speculation(server_args)
    if spec is not None:
        t *= 1.0 + env_float("STANDIN_DRAFT_COST", 0.15) * spec[0]
    return t


def metrics_page(model_name: str, speculative: bool) -> str:
    label = '{model_name="%s"}' % model_name
    with Decoding.lock:
        rows = [
            ("prompt_tokens_total", "counter", "Number of prefill tokens processed.", Decoding.prompt_tokens),
            ("generation_tokens_total", "counter", "Number of generation tokens processed.", Decoding.generation_tokens),
            ("num_requests_total", "counter", "Number of requests processed.", Decoding.requests),
            ("num_running_reqs", "gauge", "The number of running requests.", Decoding.running),
        ]
        if speculative:
            accept = 1.0 + Decoding.accepted_tokens / Decoding.verify_steps if Decoding.verify_steps else 0.0
            rows.append(("spec_accept_length", "gauge", "The average acceptance length of speculative decoding.", accept))
    return "".join(
        f"# HELP sglang:{name} {help}\n# TYPE sglang:{name} {kind}\nsglang:{name}{label} {float(value)!r}\n"
        for name, kind, help, value in rows
    )


def kill_children() -> None:
    for child in State.children:
        try:
            child.kill()
        except ProcessLookupError:
            pass


def on_sigquit(signum, frame):
    logger.error("Received sigquit from a child process. It usually means the child failed.")
    # the failed rank's communicator is gone at once (the other nodes can notice); tearing the
    # rest down takes STANDIN_TEARDOWN_SECONDS (default 0; seconds on real GPUs)
    if State.group is not None:
        State.group.close()
    time.sleep(float(os.environ.get("STANDIN_TEARDOWN_SECONDS", "0")))
    kill_children()
    os.kill(os.getpid(), signal.SIGKILL)


def on_sigterm(signum, frame):
    kill_children()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def spawn_schedulers(server_args: ServerArgs) -> tuple:
    """One process per rank of this node (`tp_size / nnodes` of them, numbered from `node_rank x`
    that); returns the read ends of their readiness pipes and the write ends of their `go` pipes
    (a rank initialises once the nodes have met)."""
    pipes, gos = [], []
    local = max(1, server_args.tp_size // max(1, server_args.nnodes))
    for local_rank in range(local):
        read_fd, write_fd = os.pipe()
        go_read, go_write = os.pipe()
        config = {
            "rank": server_args.node_rank * local + local_rank,
            "local_rank": local_rank,
            "tp_size": server_args.tp_size,
            "ready_fd": write_fd,
            "go_fd": go_read,
            "parent_pid": os.getpid(),
            "server_args": dataclasses.asdict(server_args),
        }
        # like SGLang's multiprocessing children, the rank gets its arguments over a pipe, not argv
        child = subprocess.Popen(
            [sys.executable, "-m", "sglang.srt.standin_scheduler"],
            pass_fds=(write_fd, go_read),
            stdin=subprocess.PIPE,
        )
        child.stdin.write(json.dumps(config).encode())
        child.stdin.close()
        os.close(write_fd)
        os.close(go_read)
        State.children.append(child)
        pipes.append(read_fd)
        gos.append(go_write)
    return pipes, gos


def release(gos: list) -> None:
    for fd in gos:
        os.write(fd, b"go")
        os.close(fd)


def wait_for_schedulers(pipes: list) -> None:
    for rank, read_fd in enumerate(pipes):
        message = os.read(read_fd, 16)
        os.close(read_fd)
        if message != b"ready":
            child = State.children[rank]
            code = child.wait()
            raise RuntimeError(
                f"Rank {rank} scheduler died during initialization (exit code: {code}). If exit code is -9 "
                "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check."
            )


def watch_children() -> None:
    while True:
        for child in State.children:
            code = child.poll()
            if code is not None:
                logger.error(
                    f"Subprocess scheduler (pid={child.pid}) crashed with exit code {code}. "
                    "Triggering SIGQUIT for cleanup..."
                )
                kill_children()
                os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.2)


class Server(ThreadingHTTPServer):
    # uvicorn listens with a backlog of 2048: many clients connecting at once are queued, not reset
    request_queue_size = 2048
    daemon_threads = True


def make_handler(server_args: ServerArgs):
    model_name = server_args.served_model_name

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):
            pass

        def log_request(self, code="-", size="-"):
            client = f"{self.client_address[0]}:{self.client_address[1]}"
            logger.info(f'{UVICORN_INFO}{client} - "{self.requestline}" {code}')

        def reply(self, status: int, body) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def completions(self, request) -> None:
            """OpenAI's /v1/completions (SGLang's openai_api): the fixed words, one per token,
            as server-sent events when `stream` is true. STANDIN_NO_STREAM=1, or once the file
            STANDIN_HANG_FILE names exists: the stream's headers go out and no token ever follows (a
            server whose generation hangs while /health is 200)."""
            if not State.ready:
                self.reply(503, {"error": {"message": "The server is not ready yet"}})
                return
            sentence = [" Paris.", " It", " is", " the", " capital"]
            asked = max(1, int(request.get("max_tokens") or 16))
            # ignore_eos: every token asked for (the sentence repeated)
            count = asked if request.get("ignore_eos") else min(asked, len(sentence))
            words = [sentence[i % len(sentence)] for i in range(count)]
            base = {"id": uuid.uuid4().hex, "object": "text_completion", "created": int(time.time()), "model": model_name}
            prompt = request.get("prompt") or ""
            prompt_tokens = len(prompt.split()) if isinstance(prompt, str) else 0
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": count, "total_tokens": prompt_tokens + count}
            if not request.get("stream"):
                choice = {"index": 0, "text": "".join(words), "logprobs": None, "finish_reason": "length"}
                self.reply(200, {**base, "choices": [choice], "usage": usage})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            hang_file = os.environ.get("STANDIN_HANG_FILE")
            if os.environ.get("STANDIN_NO_STREAM") == "1" or (hang_file is not None and os.path.exists(hang_file)):
                while True:
                    time.sleep(3600)

            def chunk(data: str) -> None:
                payload = f"data: {data}\n\n".encode()
                self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
                self.wfile.flush()

            length = accept_length(server_args)
            speculative = speculation(server_args) is not None
            with Decoding.lock:
                Decoding.running += 1
            try:
                given, steps = 0, -1
                while given < count:
                    time.sleep(step_seconds(server_args))
                    steps += 1
                    total = min(count, 1 if steps == 0 else 1 + math.floor(steps * length + 1e-9))
                    made = total - given
                    with Decoding.lock:
                        Decoding.generation_tokens += made
                        if steps == 0:
                            Decoding.prompt_tokens += prompt_tokens
                        elif speculative:
                            Decoding.verify_steps += 1
                            Decoding.accepted_tokens += max(0, made - 1)
                        if total >= count:
                            Decoding.requests += 1
                    text = "".join(words[given:total])
                    given = total
                    chunk(json.dumps({**base, "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": None}]}))
            finally:
                with Decoding.lock:
                    Decoding.running -= 1
            chunk(json.dumps({**base, "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": "length"}]}))
            if (request.get("stream_options") or {}).get("include_usage"):
                chunk(json.dumps({**base, "choices": [], "usage": usage}))
            chunk("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def authorized(self) -> bool:
            # utils/auth.py: with --api-key every path but /health* and /metrics needs the key
            if server_args.api_key is None or self.path.startswith("/health") or self.path.startswith("/metrics"):
                return True
            if self.headers.get("Authorization") == f"Bearer {server_args.api_key}":
                return True
            self.reply(401, {"error": "Unauthorized"})
            return False

        def do_GET(self):
            if not self.authorized():
                return
            if self.path == "/health" or self.path == "/health_generate":
                self.reply(200 if State.ready else 503, None)
            elif self.path == "/model_info":
                self.reply(
                    200,
                    {
                        "model_path": server_args.model_path,
                        "tokenizer_path": server_args.tokenizer_path,
                        "is_generation": True,
                        "architectures": ["Qwen3_5ForConditionalGeneration"],
                    },
                )
            elif self.path == "/v1/models":
                card = {
                    "id": model_name,
                    "object": "model",
                    "created": int(time.time()),
                    "owned_by": "sglang",
                    "root": model_name,
                    "parent": None,
                    "max_model_len": 262144,
                }
                self.reply(200, {"object": "list", "data": [card]})
            elif self.path == "/metrics":
                if not server_args.enable_metrics:
                    self.reply(404, {"detail": "Not Found"})
                    return
                data = metrics_page(model_name, speculation(server_args) is not None).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            elif self.path == "/server_info":
                info = dataclasses.asdict(server_args)
                info.update(status="ready", max_total_num_tokens=212480, version=sglang.__version__)
                self.reply(200, info)
            else:
                self.reply(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            if not self.authorized():
                return
            if self.path == "/v1/completions":
                self.completions(request)
                return
            if self.path != "/generate":
                self.reply(404, {"detail": "Not Found"})
                return
            max_new = (request.get("sampling_params") or {}).get("max_new_tokens", 8)
            prefix = " TP0" if server_args.tp_size > 1 else ""
            stamp_line = time.strftime("%Y-%m-%d %H:%M:%S")
            sys.stderr.write(
                f"[{stamp_line}{prefix}] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, "
                "token usage: 0.00, #running-req: 0, #queue-req: 0, \n"
            )
            sys.stderr.flush()
            self.reply(
                200,
                {
                    "text": " Paris. It is the capital"[: 4 * max_new],
                    "output_ids": list(range(12, 12 + max_new)),
                    "meta_info": {
                        "id": uuid.uuid4().hex,
                        "finish_reason": {"type": "length", "length": max_new},
                        "prompt_tokens": 7,
                        "completion_tokens": max_new,
                        "cached_tokens": 0,
                    },
                },
            )

    return Handler


def warmup(server_args: ServerArgs) -> None:
    base = f"http://{server_args.host}:{server_args.port}"
    auth = {} if server_args.api_key is None else {"Authorization": f"Bearer {server_args.api_key}"}
    urllib.request.urlopen(urllib.request.Request(f"{base}/model_info", headers=auth), timeout=10).read()
    if not server_args.skip_server_warmup:
        body = json.dumps(
            {"text": "The capital city of France is", "sampling_params": {"temperature": 0, "max_new_tokens": 8}}
        ).encode()
        request = urllib.request.Request(
            f"{base}/generate", data=body, headers={"Content-Type": "application/json", **auth}
        )
        urllib.request.urlopen(request, timeout=10).read()
    State.ready = True
    logger.info("The server is fired up and ready to roll!")
    stamp("ready")


def launch_server(server_args: ServerArgs) -> None:
    configure_logger()
    stamp("start")
    signal.signal(signal.SIGQUIT, on_sigquit)
    signal.signal(signal.SIGTERM, on_sigterm)
    logger.info(f"server_args={server_args.describe()}")
    # in a container given no GPU, torch's first CUDA call fails before any rank starts (exit 1)
    cuda_lazy_init()
    try:
        group = State.group = standin_group.make(dataclasses.asdict(server_args))
        pipes, gos = spawn_schedulers(server_args)
        if group is not None:
            group.meet()
        release(gos)
        wait_for_schedulers(pipes)
        threading.Thread(target=watch_children, daemon=True).start()
        if group is not None:
            group.loaded()
        if server_args.node_rank >= 1:
            # only node 0 serves HTTP; the others run their ranks until stopped
            standin_group.hang()
        pause()
        try:
            httpd = Server((server_args.host, server_args.port), make_handler(server_args))
        except OSError as e:
            logger.error(
                f"{UVICORN_ERROR}[Errno {e.errno}] error while attempting to bind on address "
                f"('{server_args.host}', {server_args.port}): address already in use"
            )
            sys.exit(1)
        logger.info(f"{UVICORN_INFO}Started server process [{os.getpid()}]")
        logger.info(f"{UVICORN_INFO}Waiting for application startup.")
        logger.info(f"{UVICORN_INFO}Application startup complete.")
        logger.info(
            f"{UVICORN_INFO}Uvicorn running on http://{server_args.host}:{server_args.port} (Press CTRL+C to quit)"
        )
        threading.Thread(target=warmup, args=(server_args,), daemon=True).start()
        httpd.serve_forever()
    finally:
        kill_children()
