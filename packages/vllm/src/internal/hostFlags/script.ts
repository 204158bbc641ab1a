/**
 * The Python program that reads the flags of the vLLM a host has: it builds `vllm serve`'s own
 * parser (`make_arg_parser` over vLLM's `FlexibleArgumentParser`, as `vllm serve` does; no
 * model, no GPU) and prints its actions as one JSON line, in the form of the reference dumps,
 * with what an `optional_type` converter wraps read from its closure.
 *
 * @internal
 */
export const DUMP_SCRIPT = `
import json, sys

def converter_name(fn):
    return None if fn is None else getattr(fn, "__name__", type(fn).__name__)

def inner_of(fn):
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if callable(value):
            return converter_name(value)
    return None

try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser
from vllm.entrypoints.openai.cli_args import make_arg_parser
import vllm

parser = make_arg_parser(FlexibleArgumentParser())
groups = {}
for group in parser._action_groups:
    for action in group._group_actions:
        groups[id(action)] = group.title or "options"
actions = []
for action in parser._actions:
    if not action.option_strings or action.dest == "help":
        continue
    name = converter_name(action.type)
    actions.append({
        "flags": list(action.option_strings),
        "dest": action.dest,
        "default": repr(action.default),
        "choices": None if action.choices is None else [str(c) for c in action.choices],
        "type": name,
        "nargs": action.nargs,
        "action": type(action).__name__,
        "group": groups.get(id(action), "options"),
        "inner": inner_of(action.type) if name == "_optional_type" else None,
    })
sys.stdout.write("\\n" + json.dumps({"version": getattr(vllm, "__version__", ""), "actions": actions}) + "\\n")
`
