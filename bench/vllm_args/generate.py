"""Generate registry/vllm/args/<version>.yaml: every argument `vllm serve` takes, from vLLM itself.

Run it with a Python that has the vLLM release installed (a throwaway venv outside the project:
CPU torch plus ``pip install --no-deps vllm==X`` and the few packages its imports need; see
``bench/vllm_args/README.md``).  It builds the parser exactly as ``vllm serve`` does
(vllm/entrypoints/common/cli_args.py::make_arg_parser in 0.33.0: the serve positionals,
FrontendArgs.add_cli_args, AsyncEngineArgs.add_cli_args) and writes, per argument, its option
strings (aliases and ``--no-`` forms), the value type vLLM's parser applies, choices, default,
nargs and the config class it comes from.  vmemplan never imports vLLM: only this script does.

    python bench/vllm_args/generate.py --out registry/vllm/args/0.33.0.yaml
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
# No GPU here: the CPU platform lets the config defaults (DeviceConfig) build; argparse defaults
# are the dataclass field defaults, the same on every platform.
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")


def _import_make_arg_parser() -> tuple[Any, str]:
    """vLLM's serve parser builder, wherever this release keeps it."""
    candidates = [
        ("vllm.entrypoints.common.cli_args", "vllm/entrypoints/common/cli_args.py"),
        ("vllm.entrypoints.openai.cli_args", "vllm/entrypoints/openai/cli_args.py"),
    ]
    for module, path in candidates:
        try:
            mod = __import__(module, fromlist=["make_arg_parser"])
            return mod.make_arg_parser, path
        except ImportError:
            continue
    raise SystemExit("no make_arg_parser in this vLLM")


def _closure_value(fn: Any) -> Any:
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if callable(value):
            return value
    return None


def type_name(t: Any) -> tuple[str | None, bool]:
    """(vmemplan's name for the value parser vLLM applies, whether '' / 'None' mean None)."""
    if t is None:
        return None, False
    name = getattr(t, "__name__", None) or type(t).__name__
    if name == "_optional_type":
        inner, _ = type_name(_closure_value(t))
        return inner, True
    if name == "_parse_type":
        return type_name(_closure_value(t))
    if name == "parse_dataclass":
        return "json", False
    if name == "loads":
        return "json", False
    if name == "union_dict_and_str":
        return "json_or_str", True
    if name in ("int", "float", "str", "human_readable_int", "human_readable_int_or_auto"):
        return name, False
    if name == "<lambda>":
        return "str_lower_underscore", False
    if name == "check_port":
        return "port", False
    if name in ("parse_reasoning_parser",):
        return "str", False
    return "str", False  # any other callable vLLM applies to a string (logged as str)


def _default(value: Any) -> Any:
    if value is argparse.SUPPRESS:
        return None
    import enum

    if isinstance(value, enum.Enum):
        return _default(value.value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple, set)):
        return [_default(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _default(v) for k, v in value.items()}
    if hasattr(value, "value") and isinstance(getattr(value, "value"), (str, int)):
        return value.value
    try:
        from dataclasses import asdict, is_dataclass

        if is_dataclass(value):
            return json.loads(json.dumps(asdict(value), default=str))
    except Exception:  # noqa: BLE001
        pass
    return str(value)


def _group_source(title: str, builder_path: str) -> str:
    """The file::class an argument group's fields are declared in."""
    if title.endswith("Config"):
        try:
            import vllm.config as cfg

            cls = getattr(cfg, title)
            path = inspect.getsourcefile(cls) or ""
            rel = path[path.rindex("vllm/"):] if "vllm/" in path else path
            return f"{rel}::{title} (via vllm/engine/arg_utils.py::EngineArgs.add_cli_args)"
        except Exception:  # noqa: BLE001
            return f"vllm/engine/arg_utils.py::EngineArgs.add_cli_args ({title})"
    if title == "Frontend":
        return f"{builder_path}::FrontendArgs.add_cli_args"
    return f"{builder_path}::make_arg_parser"


def _tolerate_cpu_torchvision() -> None:
    """A CUDA torchvision on a CPU torch fails to register its fake kernels at import; the
    parser needs none of them, so such a registration is skipped (the import then succeeds)."""
    try:
        import torch
    except ImportError:
        return
    real = torch.library.register_fake

    def register_fake(op: Any, *a: Any, **k: Any) -> Any:
        decorator = real(op, *a, **k)
        if not (isinstance(op, str) and op.startswith("torchvision::")):
            return decorator

        def apply(fn: Any) -> Any:
            try:
                return decorator(fn)
            except RuntimeError:
                return fn

        return apply

    torch.library.register_fake = register_fake
    try:
        import torchvision  # noqa: F401
    except ImportError:
        pass
    finally:
        torch.library.register_fake = real


def _stub_modules(names: list[str]) -> None:
    """Empty stand-ins for optional packages an older release imports on the way to its parser
    (``--stub gguf``); the parser reads none of them.  Attribute access returns a further stub."""
    import importlib.abc
    import importlib.machinery
    import types

    class _Stub(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {"__init__": lambda self, *a, **k: None})

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname.split(".")[0] in names:
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            return None

        def create_module(self, spec: Any) -> Any:
            module = _Stub(spec.name)
            module.__path__ = []  # type: ignore[attr-defined]
            return module

        def exec_module(self, module: Any) -> None:
            return None

    sys.meta_path.insert(0, _Finder())


def _force_cpu_platform() -> None:
    """Releases that ignore VLLM_TARGET_DEVICE find no platform on a machine without a GPU;
    the CPU platform lets their config defaults build (argparse defaults do not depend on it)."""
    try:
        import vllm.platforms as platforms
        from vllm.platforms.cpu import CpuPlatform
    except Exception:  # noqa: BLE001
        return
    if getattr(platforms, "_current_platform", None) is None:
        platforms._current_platform = CpuPlatform()


def collect() -> dict[str, Any]:
    _tolerate_cpu_torchvision()
    _force_cpu_platform()
    import vllm
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # releases before the utils package split (0.10 and older)
        from vllm.utils import FlexibleArgumentParser  # type: ignore[no-redef]

    make_arg_parser, builder_path = _import_make_arg_parser()
    parser = make_arg_parser(FlexibleArgumentParser(description="vLLM OpenAI-Compatible RESTful API server."))
    group_of: dict[int, str] = {}
    for group in parser._action_groups:
        for action in group._group_actions:
            group_of[id(action)] = group.title or ""
    # Every string the parser answers to, hidden ones included (EnableDisableAction keeps
    # --no-enable-x registered but out of help).
    strings_of: dict[int, list[str]] = {}
    for string, action in parser._option_string_actions.items():
        strings_of.setdefault(id(action), []).append(string)
    args = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        kind = type(action).__name__
        tname, optional = type_name(action.type)
        opts = list(action.option_strings)
        opts += [o for o in strings_of.get(id(action), []) if o not in opts]
        if kind in ("BooleanOptionalAction", "EnableDisableAction"):
            value = "bool_optional"
        elif kind in ("_StoreTrueAction", "_StoreFalseAction", "_StoreConstAction", "_CountAction"):
            value = "flag"
        elif action.nargs in ("?",):
            value = "optional_value"
        elif action.nargs in ("+", "*") or isinstance(action.nargs, int):
            value = "list"
        else:
            value = "value"
        title = group_of.get(id(action), "")
        if value == "bool_optional":
            negative = set(getattr(action, "negative_option_strings", None)
                           or {o for o in opts if o.startswith("--no-")})
        else:
            negative = set()
        entry: dict[str, Any] = {
            "dest": action.dest,
            "flags": [o for o in opts if o not in negative] or [action.dest],
        }
        negations = [o for o in opts if o in negative]
        if negations:
            entry["negations"] = negations
        if not opts:
            entry["positional"] = True
        entry["value"] = value
        if tname and value not in ("flag", "bool_optional"):
            entry["type"] = tname
        if optional:
            entry["none_allowed"] = True
        if action.nargs is not None and value != "bool_optional":
            entry["nargs"] = action.nargs
        if action.choices is not None:
            entry["choices"] = [_default(c) for c in action.choices]
        if kind == "_StoreConstAction" or (value == "optional_value" and action.const is not None):
            entry["const"] = _default(action.const)
        if kind == "_StoreFalseAction":
            entry["const"] = False
        entry["default"] = _default(action.default)
        if getattr(action, "deprecated", False):
            entry["deprecated"] = True
        entry["group"] = title
        entry["source"] = _group_source(title, builder_path)
        args.append(entry)
    return {
        "schema_version": 1,
        "vllm_version": vllm.__version__,
        "source": f"vllm=={vllm.__version__} wheel: {builder_path}::make_arg_parser(FlexibleArgumentParser()) "
                  "run by bench/vllm_args/generate.py; value parsers from vllm/utils/argparse_utils.py "
                  "and vllm/engine/arg_utils.py::_compute_kwargs",
        "count": len(args),
        "arguments": args,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--stub", action="append", default=[],
                    help="an optional package an older release imports but the parser never uses (repeatable)")
    ns = ap.parse_args()
    if ns.stub:
        _stub_modules(ns.stub)
    import yaml

    data = collect()
    header = (f"# Every argument of `vllm serve` in vLLM {data['vllm_version']}, generated from the release\n"
              "# wheel by bench/vllm_args/generate.py (do not edit by hand; regenerate).\n")
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(header + yaml.safe_dump(data, sort_keys=False, width=120), encoding="utf-8")
    print(f"{data['count']} arguments -> {ns.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
