"""
Inventory of the failure messages SGLang and vLLM can print before or while they start, read
from their own sources (bare git mirrors) at sampled releases. Writes one JSON object per
distinct message template to corpus/inventory/<engine>.jsonl (see README.md here).

Only the message text leaves the sources: where it is raised (file, function), the exception
type, the template (f-string fields as {name}), the releases that have it, and the class mlops
should name, assigned by the rules in classify() below (written from the labels of
corpus/logs/README.md, never from the classifier's output).

    /root/.pyenv/versions/3.13.0/bin/python3 corpus/inventory/extract.py

Python 3.13's parser reads every sampled release (the newest use PEP 695 syntax).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
MIRRORS = "/work/.mirror"

# ---------------------------------------------------------------------------------------------
# Sampled releases. SGLang: the release points of /work/shared/reference/sglang/versions/index.json
# (0.4.x's last patch and every 0.5.x the project ships). vLLM: the mirror has no tags; a release
# is main (first parent) at the day of its branch cut, from the release dates; the newer points
# are dated main snapshots (no reliable release date to map them to).
SGLANG = {
    "git": f"{MIRRORS}/modal-projects+sglang/repo",
    "releases": [
        ("0.4.10", "023288645b"),
        ("0.5.0rc2", "fab0f6e77d"),
        ("0.5.1", "97a38ee85b"),
        ("0.5.2", "b0d25e72c4"),
        ("0.5.3", "a4a3d82393"),
        ("0.5.4", "1053e1be17"),
        ("0.5.5", "0c006b8809"),
        ("0.5.6", "7ae368efde"),
        ("0.5.7", "98225be6e5"),
        ("0.5.8", "f2ae066a6b"),
        ("0.5.9", "c36a10aabb"),
        ("0.5.10", "17f43d1518"),
        ("0.5.11", "88bb5dffe4"),
        ("0.5.13", "0f8673851c"),
        ("0.5.14", "7e6587c94a"),
        ("0.5.15", "9a6f8e5992"),
    ],
    "roots": ["python/sglang"],
    # every statement of these files counts (argument, config, model loading, distributed setup)
    "all": [
        r"python/sglang/srt/server_args\.py",
        r"python/sglang/srt/server_args_config_parser\.py",
        r"python/sglang/srt/arg_groups/[\w/]+\.py",
        r"python/sglang/srt/configs/[\w]+\.py",
        r"python/sglang/srt/model_loader/[\w]+\.py",
        r"python/sglang/srt/hf_transformers_utils\.py",
        r"python/sglang/srt/utils/hf_transformers_utils\.py",
        r"python/sglang/srt/utils/hf_transformers/[\w]+\.py",
        r"python/sglang/launch_server\.py",
        r"python/sglang/srt/distributed/parallel_state\.py",
        r"python/sglang/srt/distributed/utils\.py",
        r"python/sglang/srt/layers/attention/attention_registry\.py",
    ],
    # only what their start-up functions raise (they also serve requests)
    "init": [
        r"python/sglang/srt/mem_cache/[\w]+\.py",
        r"python/sglang/srt/model_executor/[\w/]+\.py",
        r"python/sglang/srt/managers/scheduler\.py",
        r"python/sglang/srt/managers/tp_worker\.py",
        r"python/sglang/srt/managers/data_parallel_controller\.py",
        r"python/sglang/srt/managers/tokenizer_manager\.py",
        r"python/sglang/srt/entrypoints/engine\.py",
        r"python/sglang/srt/entrypoints/http_server\.py",
        r"python/sglang/srt/distributed/device_communicators/[\w]+\.py",
        r"python/sglang/srt/utils\.py",
        r"python/sglang/srt/utils/common\.py",
    ],
}

VLLM = {
    "git": f"{MIRRORS}/local-inference-lab+vllm/repo",
    "releases": [
        ("v0.6.6", "2024-12-26"),
        ("v0.7.3", "2025-02-19"),
        ("v0.8.5", "2025-04-27"),
        ("v0.9.2", "2025-07-06"),
        ("v0.10.2", "2025-09-12"),
        ("v0.11.0", "4778b426"),
        ("v0.12.0", "2025-12-01"),
        ("v0.13.0", "e087fbc3"),
        ("v0.14.0", "2026-01-18"),
        ("v0.15.0", "2026-01-27"),
        ("main-2026-02-20", "2026-02-20"),
        ("main-2026-03-20", "2026-03-20"),
        ("main-2026-04-20", "2026-04-20"),
        ("main-2026-05-19", "9aaf83ef"),
    ],
    "roots": ["vllm"],
    "all": [
        r"vllm/engine/arg_utils\.py",
        r"vllm/config\.py",
        r"vllm/config/[\w]+\.py",
        r"vllm/transformers_utils/config\.py",
        r"vllm/transformers_utils/configs/[\w]+\.py",
        r"vllm/model_executor/model_loader/[\w]+\.py",
        r"vllm/v1/core/kv_cache_utils\.py",
        r"vllm/distributed/parallel_state\.py",
        r"vllm/distributed/utils\.py",
        r"vllm/entrypoints/openai/cli_args\.py",
        r"vllm/entrypoints/cli/serve\.py",
        r"vllm/attention/selector\.py",
        r"vllm/v1/attention/selector\.py",
        r"vllm/platforms/(?:__init__|cuda|interface)\.py",
        r"vllm/executor/ray_utils\.py",
        r"vllm/v1/executor/ray_utils\.py",
        r"vllm/v1/engine/utils\.py",
    ],
    "init": [
        r"vllm/worker/(?:worker|worker_base|model_runner|cache_engine)\.py",
        r"vllm/v1/worker/(?:gpu_worker|gpu_model_runner|worker_base|utils)\.py",
        r"vllm/v1/worker/gpu/[\w]+\.py",
        r"vllm/utils\.py",
        r"vllm/utils/(?:__init__|mem_utils|network_utils|system_utils|import_utils)\.py",
        r"vllm/distributed/device_communicators/[\w]+\.py",
        r"vllm/entrypoints/openai/api_server\.py",
        r"vllm/entrypoints/utils\.py",
        r"vllm/v1/engine/(?:core|core_client|async_llm|llm_engine)\.py",
        r"vllm/engine/(?:llm_engine|async_llm_engine)\.py",
        r"vllm/engine/multiprocessing/(?:engine|client)\.py",
        r"vllm/executor/[\w]+\.py",
        r"vllm/v1/executor/[\w]+\.py",
    ],
}

# a function that runs while the server starts (the innermost or any enclosing def)
INIT_FN = re.compile(
    r"^(?:__init__|__post_init__|main)$|init|setup|set_up|load|profile|capture|check|verify|validate|ensure|"
    r"launch|startup|start|build|create|from_|determine|configure|handshake|run_engine_core|run_scheduler_process|"
    r"run_data_parallel|run_server|serve|_wait|warmup|kv_cache|memory|pkg_version|port|select|get_attn|backend|"
    r"get_model|get_config|get_tokenizer|resolve|available|num_blocks|max_num|spawn|bind|socket|listen",
    re.I,
)
# ... except these, which run while serving
RUNTIME_FN = re.compile(
    r"leak|check_memory|self_check|watchdog|health|abort|_check_tree|sanity_check|check_req|check_batch|^profile$|"
    r"^start_profile$|^stop_profile$|weight_update|update_weight|weight_transfer|lora|request|_reqs?$|input|tokeniz|"
    r"generate|event_loop|_send_|_recv_|image|audio|video|release|^free|_free|evict|cache_finished|cache_unfinished|insert|match_prefix",
    re.I,
)

LOGGERS = {"logger", "_logger", "log", "LOGGER", "LOG"}
LOG_LEVELS = {"error", "critical", "fatal", "exception"}


def git(gitdir: str, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], check=True, capture_output=True, text=True).stdout


def resolve_commit(gitdir: str, ref: str) -> str:
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", ref):
        return git(gitdir, "rev-list", "-1", "--first-parent", f"--before={ref}T23:59:59", "main").strip()
    return git(gitdir, "rev-parse", f"{ref}^{{commit}}").strip()


def read_blobs(gitdir: str, commit: str, paths: list[str]) -> dict[str, str]:
    spec = "".join(f"{commit}:{p}\n" for p in paths).encode()
    out = subprocess.run(["git", f"--git-dir={gitdir}", "cat-file", "--batch"], input=spec, capture_output=True, check=True).stdout
    files: dict[str, str] = {}
    i = 0
    for p in paths:
        nl = out.index(b"\n", i)
        header = out[i:nl].split()
        size = int(header[2])
        files[p] = out[nl + 1 : nl + 1 + size].decode("utf-8", "replace")
        i = nl + 1 + size + 1
    return files


# ---------------------------------------------------------------------------------------------
# Message templates

PREFIXES = re.compile(r"^(?:self\.server_args\.|self\.vllm_config\.|self\.model_config\.|self\.|server_args\.|args\.|cls\.)")


def placeholder(expr: ast.expr) -> str:
    text = PREFIXES.sub("", ast.unparse(expr))
    text = text.replace("\n", " ")
    if len(text) > 40:
        # keep the last name of a long expression
        names = [n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(expr) if isinstance(n, (ast.Attribute, ast.Name))]
        text = names[0] if names else "value"
    return "{" + text + "}"


PCT = re.compile(r"%(?:\([\w]+\))?[-+ #0]*\d*(?:\.\d+)?[sdifrxgeEG%]")


def percent(fmt: str, args: list[ast.expr]) -> str:
    it = iter(args)

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "%%":
            return "%"
        a = next(it, None)
        return placeholder(a) if a is not None else "{value}"

    return PCT.sub(sub, fmt)


def fmt_call(fmt: str, args: list[ast.expr], kwargs: dict[str, ast.expr]) -> str:
    counter = iter(range(1000))

    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key == "":
            i = next(counter)
            return placeholder(args[i]) if i < len(args) else "{value}"
        if key.isdigit():
            i = int(key)
            return placeholder(args[i]) if i < len(args) else "{value}"
        return placeholder(kwargs[key]) if key in kwargs else "{" + key + "}"

    return re.sub(r"(?<!\{)\{([\w]*)(?:![rsa])?(?::[^{}]*)?\}(?!\})", sub, fmt).replace("{{", "{").replace("}}", "}")


class Scope:
    """Assignments of a function, to read `raise ValueError(msg)` back to its string."""

    def __init__(self, fn: ast.AST | None):
        self.assigns: dict[str, list[tuple[int, ast.expr, bool]]] = defaultdict(list)
        if fn is None:
            return
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.assigns[node.targets[0].id].append((node.lineno, node.value, False))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self.assigns[node.target.id].append((node.lineno, node.value, False))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
                self.assigns[node.target.id].append((node.lineno, node.value, True))

    def value(self, name: str, line: int, depth: int) -> str | None:
        parts = sorted((a for a in self.assigns.get(name, []) if a[0] < line), key=lambda a: a[0])
        if not parts:
            return None
        # the last plain assignment and the += after it
        start = max((i for i, a in enumerate(parts) if not a[2]), default=None)
        if start is None:
            return None
        out = ""
        for _, expr, _aug in parts[start:]:
            t = template(expr, self, line, depth + 1)
            if t is None:
                return None
            out += t
        return out


def template(node: ast.expr, scope: Scope, line: int, depth: int = 0) -> str | None:
    if depth > 4:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = ""
        for v in node.values:
            if isinstance(v, ast.Constant):
                out += str(v.value)
            elif isinstance(v, ast.FormattedValue):
                out += placeholder(v.value)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = template(node.left, scope, line, depth + 1)
        right = template(node.right, scope, line, depth + 1)
        left = placeholder(node.left) if left is None else left
        right = placeholder(node.right) if right is None else right
        return left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        fmt = template(node.left, scope, line, depth + 1)
        if fmt is None:
            return None
        args = list(node.right.elts) if isinstance(node.right, ast.Tuple) else [node.right]
        return percent(fmt, args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        fmt = template(node.func.value, scope, line, depth + 1)
        if fmt is None:
            return None
        return fmt_call(fmt, list(node.args), {k.arg: k.value for k in node.keywords if k.arg})
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        return None
    if isinstance(node, ast.Name):
        return scope.value(node.id, line, depth)
    return None


def literal_words(t: str) -> int:
    return len(re.findall(r"[A-Za-z]{3,}", re.sub(r"\{[^{}]*\}", " ", t)))


def exc_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class Visitor(ast.NodeVisitor):
    def __init__(self, init_only: bool):
        self.stack: list[ast.AST] = []
        self.classes: list[str] = []
        self.scopes: list[Scope] = [Scope(None)]
        self.init_only = init_only
        self.found: list[dict] = []
        self.skipped = 0

    # where we are
    def function(self) -> str | None:
        fns = [n for n in self.stack if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not fns:
            return None
        name = fns[-1].name
        return f"{self.classes[-1]}.{name}" if self.classes and self._method(fns[-1]) else name

    def _method(self, fn: ast.AST) -> bool:
        return len(self.stack) >= 2 and isinstance(self.stack[self.stack.index(fn) - 1], ast.ClassDef)

    def at_startup(self) -> bool:
        if not self.init_only:
            return True
        names = [n.name for n in self.stack if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not names:
            return True  # module level
        if any(RUNTIME_FN.search(n) for n in names):
            return False
        return any(INIT_FN.search(n) for n in names)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append(node)
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()
        self.stack.pop()

    def _fn(self, node: ast.AST) -> None:
        self.stack.append(node)
        self.scopes.append(Scope(node))
        self.generic_visit(node)
        self.scopes.pop()
        self.stack.pop()

    visit_FunctionDef = _fn
    visit_AsyncFunctionDef = _fn

    def add(self, kind: str, msg: ast.expr | None, line: int, extra_args: list[ast.expr] | None = None) -> None:
        if msg is None or not self.at_startup():
            return
        t = template(msg, self.scopes[-1], line)
        if t is not None and extra_args:
            t = percent(t, extra_args)
        if t is None or literal_words(t) < 2:
            self.skipped += 1
            return
        self.found.append({"exceptionType": kind, "template": t.strip(), "function": self.function()})

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call):
            name = exc_name(exc.func)
            if name and (name.endswith("Error") or name.endswith("Exception") or name in {"Exception", "SystemExit"}):
                self.add(name, exc.args[0] if exc.args else None, node.lineno)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        if node.msg is not None:
            self.add("AssertionError", node.msg, node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and f.attr in LOG_LEVELS
            and isinstance(f.value, ast.Name)
            and f.value.id in LOGGERS
            and node.args
        ):
            self.add(f"logger.{f.attr}", node.args[0], node.lineno, list(node.args[1:]))
        self.generic_visit(node)


# ---------------------------------------------------------------------------------------------
# Classes: the label a person would give the log, by the rules of corpus/logs/README.md (the first
# class of its precedence order that fits wins). Written from the message, its type and its module.

ARG_MODULE = re.compile(r"server_args|arg_groups|arg_utils\.py|cli_args\.py|entrypoints/cli/serve\.py|server_args_config_parser")
CONFIG_MODULE = re.compile(r"/configs?/|/config\.py|model_config|load_config|device_config")
DIST_MODULE = re.compile(r"/distributed/|ray_utils|parallel_state")

R_OOM = re.compile(
    r"out of memory|OutOfMemory|not enough (?:gpu |device |kv cache |free )?memory|insufficient (?:gpu |device )?memory|"
    r"memory is (?:not enough|insufficient)|no available memory for the cache blocks|"
    r"KV cache is needed, which is larger than the available|larger than the available KV cache|"
    r"(?:increase|Try increasing|raise) `?(?:--)?(?:gpu[-_]memory[-_]utilization|mem[-_]fraction[-_]static)`?|"
    r"Free memory on device .* is less than desired|less than desired GPU memory utilization|"
    r"memory (?:usage|pool) .* (?:too small|exceeds)|max_total_num_tokens.*(?:<=|too small)|too small.*KV cache|"
    r"KV cache (?:pool )?(?:is )?too small|Not enough memory|cannot allocate (?:the )?(?:KV|kv)|"
    r"num_gpu_blocks.*(?:<=|negative)|no (?:KV|kv) cache blocks|Can not alloc|could not allocate|"
    r"memory profiling.*(?:negative|less)|remaining memory|available GPU memory.*(?:negative|not enough)|leave no GPU memory|HBM is free|memory capacity is unbalanced",
    re.I,
)
R_HOST_OOM = re.compile(
    r"Cannot allocate memory|\[Errno 12\]|host memory is not enough|not enough (?:host|CPU|system|pinned) memory|"
    r"(?:host|CPU) memory.*(?:not enough|insufficient)|less than desired CPU memory",
    re.I,
)
R_PORT = re.compile(
    r"address already in use|EADDRINUSE|(?:\bport|_port)\b.{0,40}(?:is )?(?:already )?(?:in use|occupied|not available|is used by)|"
    r"(?:is )?not available in \d+ seconds|failed to bind|Could not bind|no free port|"
    r"(?:Cannot|Could not|Unable to) find (?:an? )?(?:open|free|available|unused) port",
    re.I,
)
R_MODEL = re.compile(
    r"(?:\bmodel\b|\brepo(?:sitory)?\b|\bcheckpoint|\bweights?\b|\btokenizer\b|config\.json|safetensors|snapshot|\bgguf|mm_proj)"
    r"[^.]{0,80}(?:not found|does not exist|doesn't exist|could not be found|cannot be found|not a (?:valid )?(?:local )?(?:directory|path|file))|"
    r"(?:Cannot|Could not|Can't|Unable to|Failed to) (?:find|locate|access|download|resolve)\b[^.]{0,60}"
    r"(?:\bmodel\b|\brepo|model weights|\bcheckpoint|config\.json|config file|\btokenizer\b|snapshot|safetensors)|"
    r"Invalid repository ID or local directory|No supported config format found|gated repo|Repository Not Found|"
    r"no (?:model )?(?:weights?|safetensors|checkpoint|\.bin|model)(?: files?)? (?:found|were found)|"
    r"is not a (?:local )?folder and is not a valid model identifier|\bis not a file\b|"
    r"must be authenticated|HF_TOKEN|huggingface-cli login",
    re.I,
)
R_TRUST = re.compile(r"trust[-_ ]remote[-_ ]code|requires you to execute the configuration file|contains custom code", re.I)
R_MAMBA_STRATEGY = re.compile(
    r"mamba[-_ ](?:scheduler|radix[-_ ]cache)[-_ ]strategy|\bextra_buffer|\bno_buffer|Page size must be 1 for MambaRadixCache|"
    r"page_size=1 in mamba radix cache|not compatible with radix cache",
    re.I,
)
R_UNSUPPORTED = re.compile(
    r"not (?:yet |currently |fully |officially )?supported|unsupported|does not support|do not support|doesn't support|"
    r"don't support|is only supported|are only supported|only support(?:s|ed)?\b|is not (?:yet )?compatible|are not (?:yet )?compatible|"
    r"not (?:yet |currently )?compatible with|incompatible with|is incompatible|cannot be used (?:with|together|in combination|when|for)|"
    r"can not be used with|can't be used with|not implemented|NotImplemented|is not available (?:for|on|with|in)|"
    r"only (?:works|available|valid|applicable|be used|be enabled) (?:with|on|for|when|in)|requires? (?:a )?(?:GPU|device|compute capability|CUDA|SM\s?\d|Hopper|Blackwell|NVIDIA)|"
    r"compute capability|Unknown quantization method|SM\s?(?:>=|<=|\d)|\bsm_?\d{2,3}\b|\bonly\b.{0,100}\b(?:is|are) supported|"
    r"architectures? .{0,40}(?:are|is) not supported|is not a supported|no (?:supported|available) (?:attention )?backend|"
    r"(?:cannot|can not|can't) (?:be )?(?:enabled|combined|run) (?:with|together|on|when)|not (?:allowed|permitted) (?:with|when|for)|"
    r"must not be (?:used|set|enabled) (?:with|when|together)|mutually exclusive|cannot both be|can not both be|"
    r"no valid (?:attention )?backend|(?:has|have) been removed|no longer supported|requires? the V1 engine|"
    r"\bNot support\b|require an attention backend|is not a registered model",
    re.I,
)
R_CUDA = re.compile(
    r"\bCUDA (?:error|driver|runtime|is not available|not available|device|initialization|version)|cudaError|CUDA_ERROR|"
    r"No CUDA GPUs|no GPUs? (?:are |is )?(?:found|available|detected)|nvidia-smi|NVML|driver version|"
    r"CUDA_VISIBLE_DEVICES|cuInit|cudaGetDevice|device-side|Failed to get device|libcuda|libcudart|invalid device ordinal|"
    r"GPU (?:is )?not (?:found|available)|\bUVA\b|CUDART|Failed to infer device type",
    re.I,
)
R_DEPENDENCY = re.compile(
    r"pip install|please install|is not installed|are not installed|(?<!hook )not installed|No module named|"
    r"(?:requires?|needs?|need) (?!--)[\w.-]+ ?(?:version )?(?:>=|==|<=|~=|>|<)? ?v?\d+\.\d+|"
    r"(?:upgrade|update|downgrade) (?:your |the )?(?:[\w-]+ )?(?:package|version|library|to (?:the )?(?:latest|version))|"
    r"version (?:of [\w-]+ )?(?:is )?(?:too old|not supported|mismatch|incompatible|must be|should be|is lower|>=|<)|"
    r"minimum required version|Please (?:upgrade|update|downgrade)|installed version|version \S+ is required|is required, but found|"
    r"(?:failed to|cannot|could not|unable to) import|ImportError|ModuleNotFoundError|undefined symbol|"
    r"is required (?:for|to)\b.{0,40}(?:install|package|library)|(?:library|package) (?:is )?(?:required|missing)|"
    r"built without|was not compiled|not built with|compiled without|requires the [\w-]+ (?:package|library|extension)",
    re.I,
)
R_DISTRIBUTED = re.compile(
    r"\bNCCL\b|\bGloo\b|process group|ProcessGroup|torch\.distributed|distributed environment|"
    r"(?:is|are|has|have) (?:not been |not |already (?:been )?)?initiali[sz]ed|world[_ ]size|"
    r"\brank\b|\branks\b|init_method|MASTER_ADDR|MASTER_PORT|dist[-_]init[-_]addr|nnodes|node[-_]rank|"
    r"\bRay\b|placement group|all[-_]?reduce|all[-_]?gather|communicator|custom allreduce|peer access|P2P|"
    r"NVLink|shared memory broadcast|MessageQueue|TCPStore|rendezvous|number of (?:required |available )?GPUs|"
    r"\bnodes?\b|\bDP (?:ranks?|workers?|master)",
    re.I,
)
R_STRONG_DIST = re.compile(
    r"\bNCCL\b|\bGloo\b|process group|ProcessGroup|torch\.distributed|(?-i:\bRay\b)|placement group|TCPStore|rendezvous|"
    r"init_process_group|distributed environment",
    re.I,
)
R_EXITED = re.compile(
    r"\bdied\b|\bis dead\b|initiali[sz]ation failed|failed to start|terminated with|Exit code|exited unexpectedly|"
    r"got fatal signal|fatal error|received sigquit|child (?:process )?failed|failed to initialize: \{|"
    r"other ranks that did(?:n't| not) finish",
    re.I,
)
R_STALL = re.compile(
    r"timed out|time ?out waiting|did not (?:receive|respond|become ready|start)|not ready after waiting|"
    r"within \{[^}]*\} (?:seconds|minutes)|still not ready",
    re.I,
)
R_NOT_FATAL = re.compile(
    r"Assuming|continu|fall(?:ing)? ?back|skipping|ignor|will retry|retrying|Successfully|will be disabled|disabling", re.I
)
R_FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]+")
R_VALUE_WORDS = re.compile(
    r"must be|should be|must have|must (?:use|not|match|set)|(?<!un)expected|invalid|is not a valid|got (?:an? )?unexpected|"
    r"cannot be (?:negative|zero|larger|greater|smaller|less|empty|set|specified|None)|greater than|less than|larger than|"
    r"smaller than|divisible|exceeds|out of range|\bUnknown\b|not (?:a )?valid|please (?:set|specify|provide|use|pass|make sure)|not registered|"
    r"is required|are required|must specify|must provide|need to (?:set|specify)|only one of|both .* and|either .* or",
    re.I,
)
R_INTERNAL = re.compile(r"\bshape\b|index type|of type\b|spec type|Expected output|supported size", re.I)
ARG_TYPES = {"ValueError", "TypeError", "KeyError", "ArgumentError"}


R_HW_MODEL = re.compile(
    r"\bGPUs?\b|\bdevices?\b|platform|hardware|SM\s?\d|\bsm_?\d|compute capability|\bCUDA\b|ROCm|\bHIP\b|\bNPU\b|\bXPU\b|"
    r"\bTPU\b|\bCPU\b|Blackwell|Hopper|Ampere|architecture|\bmodels?\b|\barch\b|For(?:Causal|Conditional)|\bbackends?\b|"
    r"quantiz|dtype|kernel|\bbuild\b|\bfp8\b|\bbf16\b|bfloat16|float16|\bint[48]\b",
    re.I,
)
R_COMBO = re.compile(
    r"(?:cannot|can not|can't) be (?:used|enabled|set) (?:together|at the same time)|at the same time|mutually exclusive|"
    r"cannot both|can not both|together with|incompatible with --|are incompatible|conflicts? with",
    re.I,
)
R_VERSION_DEP = re.compile(
    r"(?:transformers|torch|pytorch|flashinfer|triton|cuda-python|ray|xgrammar|pydantic|numpy|huggingface_hub|"
    r"sgl[-_]kernel|deep_?gemm|deep_?ep|vllm|nccl) version",
    re.I,
)


def classify(engine: str, file: str, etype: str, t: str) -> tuple[str, str]:
    """The label of the corpus for a log whose root cause is this message (first rule that fits)."""
    text = t
    is_assert = etype == "AssertionError"
    if etype.startswith("logger.") and R_NOT_FATAL.search(text):
        return "none", "logged while the start goes on (it falls back, retries or continues): not a failure"
    if etype == "ArgumentTypeError":
        return "ArgparseError", "raised inside an argparse type=: argparse prints it as `error: argument ...` and exits 2"
    if R_HOST_OOM.search(text):
        return "HostOutOfMemory", "the host's RAM is too small for what was asked"
    if R_OOM.search(text) and not re.search(
        r"must be (?:between|in|a|greater|positive|less)|should be (?:between|in)|out of range|Invalid value", text, re.I
    ):
        return "OOM", "GPU or KV-cache memory is too small, or it asks for more memory"
    if R_PORT.search(text):
        return "PortInUse", "a port the server needs is taken"
    if R_TRUST.search(text):
        return "TrustRemoteCodeRequired", "asks for --trust-remote-code"
    if R_MODEL.search(text) and not re.search(
        r"not supported|unsupported|not a registered|registered model|librar|\bmodule\b|\bpackage\b", text, re.I
    ):
        return "ModelNotFound", "the model, its files or its repo cannot be found or reached"
    if engine == "sglang" and R_MAMBA_STRATEGY.search(text):
        return "MissingSchedulerStrategy", "hybrid (mamba) model: the mamba scheduler strategy (extra_buffer / no_buffer)"
    if etype in {"ImportError", "ModuleNotFoundError"}:
        return "DependencyError", "an import fails"
    if re.search(r"`rope_scaling` must be a dictionary with two fields", text):
        return "DependencyError", "a checkpoint's rope_scaling newer than the code that reads it (the corpus labels this wording DependencyError)"
    if R_VERSION_DEP.search(text) or re.search(r"Failed to load .{0,30}librar", text, re.I):
        return "DependencyError", "a library's version, or a library that cannot be loaded"
    if etype == "NotImplementedError":
        return "UnsupportedConfig", "NotImplementedError: this combination is not implemented"
    if R_UNSUPPORTED.search(text):
        if (R_COMBO.search(text) or len(set(R_FLAG.findall(text))) >= 2) and not R_HW_MODEL.search(text):
            if is_assert:
                return "AssertionFailure", "an assert that two settings conflict"
            return "InvalidArgument", "two flags or settings that cannot go together"
        return "UnsupportedConfig", "this build, GPU, model or backend cannot do what was asked"
    if R_CUDA.search(text) and not re.search(r"may (?:lead to|cause|result in)", text, re.I):
        return "CudaError", "the CUDA driver, runtime or device"
    if R_DEPENDENCY.search(text):
        return "DependencyError", "a package is missing or at the wrong version"
    if is_assert:
        return "AssertionFailure", "an assert with a message that names no other class"
    if R_STRONG_DIST.search(text) and etype != "TypeError" and not (
        etype in ARG_TYPES and (ARG_MODULE.search(file) or CONFIG_MODULE.search(file))
    ):
        return "DistributedError", "NCCL, Gloo, Ray or torch.distributed: the ranks could not be set up"
    if etype in ARG_TYPES and (ARG_MODULE.search(file) or CONFIG_MODULE.search(file)):
        return "InvalidArgument", "a ValueError/TypeError from the argument or config checks"
    if R_FLAG.search(text) and R_VALUE_WORDS.search(text):
        return "InvalidArgument", "names a --flag whose value must change"
    if R_EXITED.search(text):
        return "ProcessExited", "a launcher's word on a child that failed: a consequence, its cause is above it"
    if DIST_MODULE.search(file) and etype not in ARG_TYPES:
        return "DistributedError", "raised by the distributed setup (process groups, communicators)"
    if R_DISTRIBUTED.search(text) and etype not in ARG_TYPES:
        return "DistributedError", "the ranks, nodes or communicators failed"
    if R_STALL.search(text):
        return "StartupStalled", "the start waited for a process that never answered"
    if etype in ARG_TYPES and R_INTERNAL.search(text):
        return "other", "an internal invariant (a type, shape or index), not a setting"
    if etype in ARG_TYPES and R_VALUE_WORDS.search(text):
        return "InvalidArgument", "a ValueError naming a value that must change"
    if R_DISTRIBUTED.search(text) and etype == "ValueError":
        return "DistributedError", "the ranks, nodes or placement do not fit"
    return "other", "a stated cause that fits no class"


# ---------------------------------------------------------------------------------------------
# Examples: the template rendered with plausible values

VALUES = [
    (r"^e$|^err|^exc|error$|exception$|traceback|^tb$|message$|^msg$|reason", "see above"),
    (r"exitcode|exit_code|returncode", "-9"),
    (r"port_name", "port_base"),
    (r"timeout", "30"),
    (r"suffix", "K"),
    (r"model_path|model_name|model$|^model|repo|name_or_path|checkpoint|hf_config_path", "/models/Qwen2.5-7B-Instruct"),
    (r"tokenizer", "/models/Qwen2.5-7B-Instruct"),
    (r"path|dir|file|folder|location|url|uri", "/models/Qwen2.5-7B-Instruct/config.json"),
    (r"arch", "Qwen2ForCausalLM"),
    (r"backend", "flashinfer"),
    (r"quant|method", "fp8"),
    (r"dtype|kv_cache_dtype", "bfloat16"),
    (r"device_name|gpu_name", "NVIDIA A10G"),
    (r"device", "cuda"),
    (r"capability|sm", "8.6"),
    (r"version|__version__", "0.2.0"),
    (r"host|addr|ip", "127.0.0.1"),
    (r"port", "30000"),
    (r"util|fraction|ratio|percent", "0.9"),
    (r"mem|memory|gib|gb|bytes|size_in|free|total|avail", "12.34"),
    (r"len|length|tokens|token", "32768"),
    (r"tp|pp|dp|ep|world|rank|size|num|count|heads|layers|dim|degree|nodes|gpus|batch|steps|block|page|chunk|max|min|id|idx|index", "8"),
    (r"algorithm|strategy|mode|policy|type|kind|format|parser|task|runner", "auto"),
    (r"args|kwargs|config|cfg|params|options", "{...}"),
    (r"keys|list|names|choices|supported|valid|allowed|options", "['auto', 'none']"),
]


def value_for(name: str) -> str:
    key = re.sub(r"^[{]|[}]$", "", name)
    bare = re.sub(r".*[.(\[]", "", key).strip(")]'\" ").lower() or key.lower()
    for pat, val in VALUES:
        if re.search(pat, bare, re.I):
            return val
    return "8" if re.search(r"^(?:n|k|i|x)$", bare) else "auto"


def argparse_flag(t: str) -> str:
    """The flag whose `type=` raises it: argparse names it in its error line."""
    if re.search(r"\bport\b", t, re.I):
        return "--port"
    if re.search(r"binary suffix", t, re.I):
        return "--max-model-len"
    if re.search(r"serialization_kwargs|deserializ", t, re.I):
        return "--model-loader-extra-config"
    return "--hf-overrides"


def example(engine: str, etype: str, t: str) -> str:
    msg = re.sub(r"\{[^{}\n]{1,120}\}", lambda m: value_for(m.group(0)), t)
    if etype.startswith("logger."):
        return msg
    if etype == "ArgumentTypeError":
        # argparse turns it into its usage line and `error: argument <flag>: <message>`, exit 2
        prog = "vllm serve" if engine == "vllm" else "launch_server.py"
        return f"usage: {prog} [-h] [options]\n{prog}: error: argument {argparse_flag(t)}: {msg}"
    return f"{etype}: {msg}"


# ---------------------------------------------------------------------------------------------


def extract(engine: str, cfg: dict) -> tuple[list[dict], dict]:
    gitdir = cfg["git"]
    all_res = [re.compile(p + "$") for p in cfg["all"]]
    init_res = [re.compile(p + "$") for p in cfg["init"]]
    names = [r for r, _ in cfg["releases"]]
    entries: dict[tuple[str, str, str], dict] = {}
    stats = {"releases": {}, "parse_errors": [], "skipped": 0}
    for rel, ref in cfg["releases"]:
        commit = resolve_commit(gitdir, ref)
        tree = git(gitdir, "ls-tree", "-r", "--name-only", commit, "--", *cfg["roots"]).splitlines()
        chosen = [(p, False) for p in tree if any(r.match(p) for r in all_res)]
        chosen += [(p, True) for p in tree if any(r.match(p) for r in init_res) and not any(r.match(p) for r in all_res)]
        blobs = read_blobs(gitdir, commit, [p for p, _ in chosen])
        count = 0
        for path, init_only in chosen:
            try:
                tree_ = ast.parse(blobs[path])
            except SyntaxError as e:
                stats["parse_errors"].append(f"{rel} {path}: {e}")
                continue
            v = Visitor(init_only)
            v.visit(tree_)
            stats["skipped"] += v.skipped
            for f in v.found:
                key = (path, f["exceptionType"], f["template"])
                count += 1
                e = entries.get(key)
                if e is None:
                    entries[key] = {"file": path, "function": f["function"], "exceptionType": f["exceptionType"], "template": f["template"], "seen": [rel]}
                elif rel not in e["seen"]:
                    e["seen"].append(rel)
        stats["releases"][rel] = {"commit": commit, "files": len(chosen), "messages": count}
        print(f"{engine} {rel} {commit[:10]}: {len(chosen)} files, {count} messages", file=sys.stderr)
    out = []
    for e in entries.values():
        seen = sorted(e.pop("seen"), key=names.index)
        cls, why = classify(engine, e["file"], e["exceptionType"], e["template"])
        out.append(
            {
                "engine": engine,
                "file": e["file"],
                "function": e["function"],
                "exceptionType": e["exceptionType"],
                "template": e["template"],
                "example": example(engine, e["exceptionType"], e["template"]),
                "releases": [seen[0], seen[-1]],
                "seenIn": len(seen),
                "class": cls,
                "why": why,
            }
        )
    out.sort(key=lambda e: (e["file"], e["exceptionType"], e["template"]))
    return out, stats


def main() -> None:
    engines = {"sglang": SGLANG, "vllm": VLLM}
    only = sys.argv[1:] or list(engines)
    summary = {}
    for engine in only:
        rows, stats = extract(engine, engines[engine])
        with open(os.path.join(HERE, f"{engine}.jsonl"), "w") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        summary[engine] = {"messages": len(rows), **stats}
        print(f"{engine}: {len(rows)} templates; parse errors {len(stats['parse_errors'])}; skipped (no literal words) {stats['skipped']}", file=sys.stderr)
        for pe in stats["parse_errors"]:
            print("  parse error:", pe, file=sys.stderr)
    with open(os.path.join(HERE, "releases.json"), "w") as fh:
        json.dump({k: v["releases"] for k, v in summary.items()}, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
