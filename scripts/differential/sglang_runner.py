"""Run one SGLang source tree's own argument handling on many launch commands, with its heavy
imports replaced by small fakes, and print what SGLang did with each (one JSON line per command).

    python3 sglang_runner.py <dir holding python/sglang> <commands.jsonl>

Each input line: {"id": "...", "argv": [...]}. Each output line: {"id", "outcome": "accepted",
"values": {...chosen fields...}} or {"id", "outcome": "error", "type": "ValueError", "message": "..."}.

The device is fixed: an SM86 GPU (RTX A6000), 2 of them, 48 GiB each, CUDA, driver 550. Anything
that is not the standard library or `sglang` itself imports as a fake module whose attributes are
permissive stand-ins (`_Fake`), except `transformers`, whose `AutoConfig` reads the model
directory's config.json as the real one does (the model's architecture decides many checks).
This file holds no SGLang code: it imports the tree it is given.
"""

import abc
import argparse
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import io
import json
import logging
import os
import sys
import types

ROOT = sys.argv[1]
COMMANDS = sys.argv[2]

GPU_MEMORY_MIB = 49140
GPU_COUNT = 2
SM = (8, 6)


class _FakeMeta(abc.ABCMeta):
    def __new__(mcs, name, bases, namespace, **kwargs):
        return super().__new__(mcs, name, bases, namespace)

    def __init__(cls, name, bases, namespace, **kwargs):
        super().__init__(name, bases, namespace)

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        # kept, so that a fact set on a path (`triton.runtime.driver.active`) stays
        value = fake_class(name)
        setattr(cls, name, value)
        return value

    def __getitem__(cls, item):
        return cls

    def __setitem__(cls, item, value):
        pass

    def __contains__(cls, item):
        return False

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    # ABCMeta's own `register` would shadow a fake registry's (`AutoProcessor.register(A, B)`)
    def register(cls, *args, **kwargs):
        return args[0] if args else None

    def __int__(cls):
        return 0

    __index__ = __int__

    def __float__(cls):
        return 0.0

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __call__(cls, *args, **kwargs):
        # used as a decorator (`@torch.compile`, `@triton.jit`): the function itself
        if len(args) == 1 and not kwargs and isinstance(args[0], types.FunctionType):
            return args[0]
        return type.__call__(cls, *args, **kwargs)


class _Fake(metaclass=_FakeMeta):
    def __init_subclass__(cls, **kwargs):
        pass

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return fake_class(name)()

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], types.FunctionType):
            return args[0]
        return _Fake()

    def __getitem__(self, item):
        return _Fake()

    def __setitem__(self, item, value):
        pass

    def __contains__(self, item):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __int__(self):
        return 0

    def __index__(self):
        return 0

    def __float__(self):
        return 0.0

    def __lt__(self, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def __str__(self):
        return "fake"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _arithmetic(*args, **kwargs):
    return _Fake()


# numbers computed at import time from fake dtypes (`-torch.finfo(...).max`): fakes too
for _op in (
    "neg pos abs invert add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod "
    "pow rpow lshift rlshift rshift rrshift and rand xor rxor matmul rmatmul"
).split():
    setattr(_Fake, f"__{_op}__", _arithmetic)
    if _op not in ("and", "rand", "xor", "rxor"):
        setattr(_FakeMeta, f"__{_op}__", _arithmetic)


def fake_class(name):
    return _FakeMeta(str(name), (_Fake,), {})


# attributes a CUDA build of torch does not have (other accelerators' namespaces)
MISSING_ATTRIBUTES = {"torch": {"npu", "hpu", "xpu", "musa", "mlu"}}


class FakeModule(types.ModuleType):
    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []
        self.__file__ = f"<fake {name}>"
        self.__version__ = "2.9.0" if name.split(".")[0] == "torch" else "0.0.0"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name in MISSING_ATTRIBUTES.get(self.__name__, ()):
            raise AttributeError(name)
        value = transformers_attribute(name) if self.__name__.split(".")[0] == "transformers" else None
        if value is None:
            value = fake_class(name)
        setattr(self, name, value)
        return value


class PretrainedConfig:
    """transformers' PretrainedConfig as far as reading a model's config goes: its keys as
    attributes, a missing one an AttributeError."""

    model_type = ""

    def __init__(self, **kwargs):
        # the defaults transformers' own __init__ sets
        self.architectures = None
        self.torch_dtype = None
        self.tie_word_embeddings = True
        self.is_encoder_decoder = False
        for key, value in kwargs.items():
            setattr(self, key, value)

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        config_file = os.path.join(str(path), "config.json")
        with open(config_file) as f:
            data = json.load(f)
        return cls(**data)

    @classmethod
    def from_dict(cls, data, **kwargs):
        return cls(**data)

    @classmethod
    def get_config_dict(cls, path, **kwargs):
        with open(os.path.join(str(path), "config.json")) as f:
            return json.load(f), kwargs

    def to_dict(self):
        return dict(self.__dict__)

    def get_text_config(self, *args, **kwargs):
        return getattr(self, "text_config", None) or self

    def update(self, data):
        for key, value in data.items():
            setattr(self, key, value)


def transformers_attribute(name):
    """transformers' configuration classes, wherever they are imported from: configs that read
    their keys (SGLang's own configs derive from them), and the AutoConfig that reads config.json."""
    if name in ("PretrainedConfig", "PreTrainedConfig"):
        return PretrainedConfig
    if name == "AutoConfig":
        return AutoConfig
    if name.endswith("Config"):
        return type(name, (PretrainedConfig,), {})
    if name == "CONFIG_MAPPING":
        return _Mapping()
    return None


class _Mapping(dict):
    _extra_content = {}

    def register(self, *args, **kwargs):
        pass


def sub_config(value):
    return PretrainedConfig(**value) if isinstance(value, dict) else value


class AutoConfig:
    @classmethod
    def from_pretrained(cls, path, **kwargs):
        config = PretrainedConfig.from_pretrained(path)
        for key in ("text_config", "vision_config"):
            if isinstance(getattr(config, key, None), dict):
                setattr(config, key, sub_config(getattr(config, key)))
        return config

    @classmethod
    def register(cls, *args, **kwargs):
        pass


def make_transformers():
    module = FakeModule("transformers")
    module.__version__ = "4.57.1"
    module.PretrainedConfig = PretrainedConfig
    module.AutoConfig = AutoConfig
    return module


# other accelerators' stacks, and what an SM86 CUDA machine does not have: absent, as there
ABSENT = {
    "torch_npu",
    "torch_musa",
    "torch_mlu",
    "habana_frameworks",
    "intel_extension_for_pytorch",
    "mlx",
    "aiter",
    "mindspore",
    "vllm",
}


# what a fake must answer with a real value for import-time code to go on
PRESET = {
    "dill": {"dumps": lambda *a, **k: b"", "loads": lambda *a, **k: None},
}


class FakeFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        if top in sys.stdlib_module_names or top == "sglang" or top == "__main__":
            return None
        if top in ABSENT:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        if spec.name == "transformers":
            return make_transformers()
        module = FakeModule(spec.name)
        for name, value in PRESET.get(spec.name, {}).items():
            setattr(module, name, value)
        return module

    def exec_module(self, module):
        pass


DEVICE_FACTS = {
    "is_cuda": lambda *a, **k: True,
    "is_cuda_alike": lambda *a, **k: True,
    "is_hip": lambda *a, **k: False,
    "is_npu": lambda *a, **k: False,
    "is_cpu": lambda *a, **k: False,
    "is_xpu": lambda *a, **k: False,
    "is_mps": lambda *a, **k: False,
    "is_musa": lambda *a, **k: False,
    "is_hpu": lambda *a, **k: False,
    "is_blackwell": lambda *a, **k: False,
    "is_blackwell_supported": lambda *a, **k: False,
    "is_sm90_supported": lambda *a, **k: False,
    "is_sm100_supported": lambda *a, **k: False,
    "is_sm120_supported": lambda *a, **k: False,
    "is_hopper_with_cuda_12_3": lambda *a, **k: False,
    "is_flashinfer_available": lambda *a, **k: True,
    "is_triton_kernels_available": lambda *a, **k: True,
    "cpu_has_amx_support": lambda *a, **k: False,
    "xpu_has_xmx_support": lambda *a, **k: False,
    "get_device": lambda *a, **k: "cuda",
    "get_device_name": lambda *a, **k: "NVIDIA RTX A6000",
    "get_device_sm": lambda *a, **k: SM[0] * 10 + SM[1],
    "get_device_capability": lambda *a, **k: SM,
    "get_device_memory_capacity": lambda *a, **k: GPU_MEMORY_MIB,
    "get_nvgpu_memory_capacity": lambda *a, **k: GPU_MEMORY_MIB,
    "get_nvidia_driver_version": lambda *a, **k: "550.54.15",
    "get_device_count": lambda *a, **k: GPU_COUNT,
    "use_mlx": lambda *a, **k: False,
    "is_in_ci": lambda *a, **k: False,
}


# SGLang's own kernel registration, which needs a real torch: nothing to register here
NEUTRAL = {"direct_register_custom_op": lambda *a, **k: None}


def patch_device(modules):
    for module in modules:
        for name, value in {**DEVICE_FACTS, **NEUTRAL}.items():
            if hasattr(module, name):
                setattr(module, name, value)


def main():
    sys.meta_path.insert(0, FakeFinder())
    sys.path.insert(0, os.path.join(ROOT, "python"))
    logging.disable(logging.CRITICAL)
    torch = importlib.import_module("torch")
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: GPU_COUNT
    torch.cuda.get_device_capability = lambda *a: SM
    torch.version.cuda = "12.4"
    torch.version.hip = None
    torch.__version__ = "2.9.0"
    triton = importlib.import_module("triton")
    triton.__version__ = "3.5.0"
    target = types.SimpleNamespace(backend="cuda", arch=SM[0] * 10 + SM[1], warp_size=32)
    triton.runtime.driver.active.get_current_target = staticmethod(lambda: target)
    # the device's facts and the neutral kernel registration, in every SGLang module loaded so far
    # (`sglang.srt.utils` re-exports `common`'s names), before the modules that call them load
    if os.path.exists(os.path.join(ROOT, "python/sglang/srt/utils/common.py")):
        importlib.import_module("sglang.srt.utils.common")
    importlib.import_module("sglang.srt.utils")
    patch_device([m for n, m in list(sys.modules.items()) if n.startswith("sglang") and m is not None])
    server_args = importlib.import_module("sglang.srt.server_args")
    patch_device([server_args])
    # modules the checks moved into (arg_groups) see the same device
    patch_device([m for n, m in list(sys.modules.items()) if n.startswith("sglang.srt") and m is not None])

    with open(COMMANDS) as f:
        commands = [json.loads(line) for line in f if line.strip()]
    for command in commands:
        out = {"id": command["id"]}
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                args = server_args.prepare_server_args(list(command["argv"]))
                # what the launch checks next, before any process starts (the engine's entry)
                if hasattr(args, "check_server_args"):
                    args.check_server_args()
            out["outcome"] = "accepted"
            out["values"] = {
                key: getattr(args, key, None)
                for key in command.get("fields", [])
                if isinstance(getattr(args, key, None), (str, int, float, bool, type(None)))
            }
        except SystemExit as exit:
            out["outcome"] = "error"
            out["type"] = "SystemExit"
            out["message"] = sink.getvalue().strip().splitlines()[-1:][0] if sink.getvalue().strip() else str(exit)
        except BaseException as error:  # noqa: BLE001 - every way the engine refuses is an outcome
            out["outcome"] = "error"
            out["type"] = type(error).__name__
            out["message"] = str(error)[:300]
            if os.environ.get("DIFF_DEBUG"):
                import traceback

                out["traceback"] = traceback.format_exc()[-1500:]
        print(json.dumps(out), flush=True)


main()
