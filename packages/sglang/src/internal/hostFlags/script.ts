/**
 * The Python program that reads an installed SGLang's own flag parser: it builds an empty
 * `argparse.ArgumentParser`, lets the installed `ServerArgs.add_cli_args` add every flag, and
 * prints each argparse action's facts as one JSON line (the shape `fromParser.ParserAction`
 * reads), with the sha256 of the installed `server_args.py` and the `ServerArgs` field names.
 *
 * No model, no GPU. `sglang/__init__.py` (the frontend language, HF patches) is skipped by
 * registering bare parent packages, since building the parser needs only
 * `sglang.srt.server_args`; when that import fails that way it is retried the normal way.
 * `server_args.py` itself still imports what it imports (torch, transformers on most releases),
 * which is why the result is cached per install.
 *
 * @internal
 */

export const MARKER = "mlops-flag-dump"

export const DUMP_SCRIPT = `# ${MARKER}: print SGLang's launch_server flags as argparse sees them
import argparse, dataclasses, enum, hashlib, importlib, importlib.util, json, math, os, re, sys, types

def plain(v):
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, enum.Enum):
        return plain(v.value)
    if isinstance(v, (set, frozenset)):
        return sorted((plain(x) for x in v), key=repr)
    if isinstance(v, (list, tuple, range)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    return repr(v)

BUILTIN_ACTIONS = {
    "_StoreAction": "store", "_StoreTrueAction": "store_true", "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const", "_AppendAction": "append", "_AppendConstAction": "append_const",
    "_CountAction": "count", "_ExtendAction": "extend",
}

def callable_name(fn):
    if fn is None:
        return None
    if fn in (int, str, float, bool):
        return fn.__name__
    module = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if module is None or name is None:
        return repr(fn)
    return name if module == "builtins" else module + "." + name

def facts(action):
    kind = type(action).__name__
    words = action.help if isinstance(action.help, str) else ""
    says_deprecated = re.search(r"deprecat", words, re.I) is not None
    about_env = re.search(r"deprecated (env|environment)", words, re.I) is not None
    suppressed = action.default is argparse.SUPPRESS
    successor = getattr(action, "new_flag", None)
    return {
        "option_strings": list(action.option_strings),
        "dest": action.dest,
        "action": BUILTIN_ACTIONS.get(kind, kind),
        "type_fn": callable_name(action.type),
        "nargs": action.nargs,
        "const": plain(action.const),
        "default": None if suppressed else plain(action.default),
        "default_suppressed": suppressed,
        "choices": None if action.choices is None else plain(action.choices),
        "required": bool(action.required),
        "deprecated": kind.startswith("Deprecated") or (says_deprecated and not about_env),
        "replaced_by": successor if isinstance(successor, str) else None,
        "hidden": action.help == argparse.SUPPRESS,
    }

def server_args_module(root):
    registered = []
    for name, where in (("sglang", root), ("sglang.srt", os.path.join(root, "srt"))):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [where]
            package.__package__ = name
            sys.modules[name] = package
            registered.append(name)
    try:
        return importlib.import_module("sglang.srt.server_args")
    except Exception:
        if not registered:
            raise
        for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
            del sys.modules[name]
        return importlib.import_module("sglang.srt.server_args")

def main():
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("sglang is not installed for " + sys.executable)
    root = list(spec.submodule_search_locations)[0]
    with open(os.path.join(root, "srt", "server_args.py"), "rb") as source:
        digest = hashlib.sha256(source.read()).hexdigest()
    module = server_args_module(root)
    parser = argparse.ArgumentParser()
    module.ServerArgs.add_cli_args(parser)
    fields = [f.name for f in dataclasses.fields(module.ServerArgs)]
    actions = [facts(a) for a in parser._actions if a.option_strings and a.dest != "help"]
    sys.stdout.write("\\n" + json.dumps({"sha256": digest, "fields": fields, "actions": actions}) + "\\n")

main()
`
