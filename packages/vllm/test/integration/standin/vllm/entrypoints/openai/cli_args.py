"""Stand-in of `vllm serve`'s parser builder for mlops' tests, written from a dump of the real
parser's actions (option strings, dest, default repr, choices, converter name, nargs, action class,
group: the facts of packages/vllm/test/fixtures/flags), not from mlops' code. The dump to build
from is `$STANDIN_VLLM_FLAGS`, else `flags.json` beside this file; each build appends a line to
`<venv>/standin-parser-builds` so a test can count them."""

import argparse
import ast
import json
import os
import sys


def _named(name, fn):
    fn.__name__ = name
    return fn


def human_readable_int(text):
    units = {"k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}
    lower = text.lower()
    for suffix in sorted(units, key=len, reverse=True):
        if lower.endswith(suffix):
            return int(float(lower[: -len(suffix)]) * units[suffix])
    return int(text)


def optional_type(return_type):
    def _optional_type(text):
        if text == "" or text == "None":
            return None
        return return_type(text)

    return _optional_type


CONVERTERS = {
    "int": int,
    "float": float,
    "str": str,
    "human_readable_int": human_readable_int,
    "human_readable_int_or_auto": _named(
        "human_readable_int_or_auto", lambda t: t if t == "auto" else human_readable_int(t)
    ),
    "loads": json.loads,
    "parse_dataclass": _named("parse_dataclass", lambda t: json.loads(t)),
    "_parse_type": _named("_parse_type", lambda t: json.loads(t)),
    "union_dict_and_str": _named("union_dict_and_str", lambda t: t),
    "<lambda>": lambda t: t,
}

# What optional_type wraps, per field, as vLLM's config type hints say (`X | None`); text otherwise.
OPTIONAL_INNER = {
    "max_cpu_loras": int,
    "max_log_len": int,
    "seed": int,
    "num_gpu_blocks_override": int,
    "kv_transfer_config": json.loads,
    "speculative_config": json.loads,
    "kv_offloading_size": float,
    # a field of a later release (the tests' 0.26.0)
    "standin_window": int,
}


class LoRAParserAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


def _default(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def make_arg_parser(parser):
    path = os.environ.get("STANDIN_VLLM_FLAGS") or os.path.join(os.path.dirname(__file__), "flags.json")
    with open(path) as f:
        records = json.load(f)
    with open(os.path.join(sys.prefix, "standin-parser-builds"), "a") as f:
        f.write("built\n")
    groups = {}
    for r in records:
        title = r["group"]
        target = parser if title == "options" else groups.setdefault(title, parser.add_argument_group(title=title))
        kwargs = {"dest": r["dest"], "default": _default(r["default"])}
        action = r["action"]
        flags = list(r["flags"])
        if action == "_StoreTrueAction":
            kwargs["action"] = "store_true"
        elif action == "BooleanOptionalAction":
            kwargs["action"] = argparse.BooleanOptionalAction
            flags = [f for f in flags if not f.startswith("--no-")]
        else:
            if action == "_AppendAction":
                kwargs["action"] = "append"
            elif action == "LoRAParserAction":
                kwargs["action"] = LoRAParserAction
            if r["type"] == "_optional_type":
                kwargs["type"] = optional_type(OPTIONAL_INNER.get(r["dest"], str))
            elif r["type"] is not None:
                kwargs["type"] = CONVERTERS[r["type"]]
            if r["choices"] is not None:
                kwargs["choices"] = [kwargs.get("type", str)(c) if r["type"] in ("int", "float") else c for c in r["choices"]]
            if r["nargs"] is not None:
                kwargs["nargs"] = r["nargs"]
        target.add_argument(*flags, **kwargs)
    return parser
