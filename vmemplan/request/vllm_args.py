"""Parse a vLLM command line exactly as ``vllm serve`` parses it, against the release's table.

The table (registry/vllm/args/<version>.yaml, generated from the release wheel, with each
argument's memory effect) is read by :mod:`vmemplan.request.arg_table`.

What this module mirrors (vLLM 0.33.0, never imported):

* vllm/utils/argparse_utils.py::FlexibleArgumentParser.parse_args: ``--model`` moved to the
  positional under ``vllm serve``; ``--config FILE.yaml`` read first (command line wins over
  the file, the file over defaults); underscores in ``--flag_names`` read as dashes; ``-O3`` /
  ``-O.mode`` shorthands for ``--optimization-level`` / ``--compilation-config``; dotted
  ``--json-arg.key value`` and ``--json-arg.list+ a,b`` merged into one JSON value;
* vllm/utils/argparse_utils.py::load_config_file: the YAML config format (booleans become
  ``--flag`` / ``--no-flag``, lists become repeated values, mappings become JSON);
* vllm/utils/argparse_utils.py::human_readable_int / human_readable_int_or_auto: ``k`` = 10^3,
  ``K`` = 2^10, ``m``/``M``, ``g``/``G``, ``t``/``T``, decimals only with decimal suffixes,
  ``auto`` / ``-1`` = fit the context to memory;
* Python's argparse (which vLLM's parser is): unique prefixes of long options are accepted
  (``--tensor_parallel 2``), an ambiguous prefix or an unknown option is an error.

An error is a :class:`~vmemplan.core.errors.UsageError` (exit 2) with argparse's message and a hint
(a did-you-mean for an unknown flag).
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen
from vmemplan.core.patterns import lazy
from vmemplan.request.arg_table import EFFECTS, ArgSpec, ArgTable, available_tables, load_arg_table, removed_flag
from vmemplan.request.config_file import load_config_file

__all__ = [
    "ArgSpec", "ArgTable", "ParsedCommand", "load_arg_table", "available_tables",
    "human_readable_int", "human_readable_int_or_auto", "parse_vllm_command", "parse_vllm_flags",
    "parse_non_default_args", "load_config_file", "EFFECTS",
]

_NEGATIVE_NUMBER = lazy(r"^-\d+$|^-\d*\.\d+$")
_ENV_ASSIGN = lazy(r"^[A-Za-z_][A-Za-z0-9_]*=")


# --- value parsers (vllm/utils/argparse_utils.py) ------------------------------------------------

_HRI = lazy(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def human_readable_int(value: str) -> int:
    """vLLM's ``human_readable_int``: ``1k`` = 1,000, ``1K`` = 1,024, ``25.6k`` = 25,600;
    decimals with a binary suffix are refused; otherwise ``int(value)``."""
    value = value.strip()
    m = _HRI.fullmatch(value)
    if m:
        number, suffix = m.groups()
        if suffix.islower():
            return int(float(number) * {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[suffix])
        if "." in number:
            raise ValueError(f"Decimals are not allowed with binary suffixes like {suffix}. "
                             f"Did you mean to use {number}{suffix.lower()} instead?")
        return int(number) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[suffix]
    return int(value)


def human_readable_int_or_auto(value: str) -> int:
    """vLLM's ``human_readable_int_or_auto``: ``-1`` or ``auto`` (any case) = -1 (fit the
    context to memory), otherwise :func:`human_readable_int`."""
    value = value.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    return human_readable_int(value)


def _json_or_str(value: str) -> Any:
    if not re.match(r"(?s)^\s*{.*}\s*$", value):
        return value
    return json.loads(value)


_CONVERTERS: dict[str, Any] = {
    "int": int, "float": float, "str": str, "port": int,
    "human_readable_int": human_readable_int, "human_readable_int_or_auto": human_readable_int_or_auto,
    "json": json.loads, "json_or_str": _json_or_str,
    "str_lower_underscore": lambda s: s.lower().replace("-", "_"),
}


def _convert(spec: ArgSpec, option: str, raw: str) -> Any:
    if spec.none_allowed and raw in ("", "None"):
        return None
    conv = _CONVERTERS.get(spec.type or "str", str)
    try:
        value = conv(raw)
    except RecursionError:
        raise UsageError(f"argument {option}: the JSON is nested too deeply",
                         hint=f"give {option} a flat JSON object, as vLLM documents it") from None
    except (ValueError, TypeError) as exc:
        detail = str(exc) if spec.type in ("human_readable_int", "human_readable_int_or_auto") and \
            "Decimals" in str(exc) else f"invalid {spec.type} value: {raw!r}"
        hint = "write a number such as 32768, 32k (32,000) or 32K (32,768)" if "human" in (spec.type or "") \
            else "JSON such as '{\"key\": 1}'" if spec.type == "json" else f"{option} takes a {spec.type}"
        if spec.type == "human_readable_int_or_auto":
            hint += ", or auto"
        raise UsageError(f"argument {option}: {detail}", hint=hint) from None
    if spec.choices is not None and value not in spec.choices:
        shown = ", ".join(repr(c) for c in spec.choices if c is not None)
        close = difflib.get_close_matches(str(value), [str(c) for c in spec.choices if c is not None], n=1)
        raise UsageError(f"argument {option}: invalid choice: {value!r} (choose from {shown})",
                         hint=f"did you mean {close[0]}?" if close else f"{option} takes one of the values listed")
    return value


# --- the parsed command ---------------------------------------------------------------------------

@frozen
class ParsedCommand:
    """A vLLM command as vLLM reads it: the engine arguments given (by dest) and their classes."""

    model: str | None
    args: dict[str, Any]
    vllm_version: str
    modelled: tuple[str, ...] = ()
    no_memory_effect: tuple[str, ...] = ()
    not_modelled: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    program: str = "flags"  # serve | api_server | docker | flags
    reasons: dict[str, str] = field(default_factory=dict)

    def classes_json(self) -> dict[str, Any]:
        """The JSON field listing the three classes (additive to a plan's JSON)."""
        return {"argument_table": self.vllm_version, "program": self.program, "modelled": list(self.modelled),
                "no_memory_effect": list(self.no_memory_effect), "not_modelled": list(self.not_modelled),
                "reasons": dict(self.reasons)}


def _split_program(tokens: list[str]) -> tuple[str, list[str], dict[str, str]]:
    """Strip ``VAR=value`` prefixes and the program (``vllm serve``, ``python -m
    vllm.entrypoints.openai.api_server``, ``docker run ... vllm/vllm-openai:TAG``)."""
    env: dict[str, str] = {}
    i = 0
    while i < len(tokens) and _ENV_ASSIGN.match(tokens[i]):
        key, _, val = tokens[i].partition("=")
        env[key] = val
        i += 1
    if i < len(tokens) and tokens[i] == "env":
        i += 1
        while i < len(tokens) and _ENV_ASSIGN.match(tokens[i]):
            key, _, val = tokens[i].partition("=")
            env[key] = val
            i += 1
    rest = tokens[i:]
    if not rest:
        return "flags", [], env
    head = rest[0].rsplit("/", 1)[-1]
    if head == "vllm" and len(rest) > 1 and rest[1] == "serve":
        return "serve", rest[2:], env
    if head == "serve":
        return "serve", rest[1:], env
    if re.match(r"^python(\d+(\.\d+)?)?$", head) and len(rest) > 2 and rest[1] == "-m" and \
            rest[2].startswith("vllm.entrypoints"):
        return "api_server", rest[3:], env
    if head == "docker":
        for j, tok in enumerate(rest):
            if "vllm-openai" in tok or "vllm/vllm" in tok:
                return "docker", rest[j + 1:], env
    return "flags", rest, env


def _tokenize(command: str | Sequence[str]) -> list[str]:
    if isinstance(command, str):
        return shlex.split(command.replace("\\\r\n", " ").replace("\\\n", " "))
    return [str(t) for t in command]


def _normalise(args: list[str]) -> list[str]:
    """FlexibleArgumentParser.parse_args's rewriting: dashes for underscores in names, -O
    shorthands, dotted JSON arguments merged (appended at the end, as vLLM does)."""
    pattern = re.compile(r"(?<=--)[^.]*")
    processed: list[str] = []
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            if "=" in arg:
                key, value = arg.split("=", 1)
                processed.append(pattern.sub(lambda m: m.group(0).replace("_", "-"), key, count=1) + "=" + value)
            else:
                processed.append(pattern.sub(lambda m: m.group(0).replace("_", "-"), arg, count=1))
        elif arg.startswith("-O") and arg != "-O":
            level = arg[3:] if len(arg) > 2 and arg[2] == "=" else arg[2:]
            processed += ["--optimization-level", level]
        elif arg == "-O" and i + 1 < len(args) and args[i + 1] in {"0", "1", "2", "3"}:
            processed.append("--optimization-level")
        else:
            processed.append(arg)

    dict_args: dict[str, dict[str, Any]] = {}
    delete: set[int] = set()
    for i, arg in enumerate(processed):
        if i in delete:
            continue
        if arg.startswith("--") and "." not in arg:
            continue
        if arg.startswith("-") and "." in arg:
            if "=" in arg:
                arg, value_str = arg.split("=", 1)
                if "." not in arg:
                    continue
            else:
                if i + 1 >= len(processed):
                    raise UsageError(f"argument {arg}: expected one argument", hint=f"give {arg} a value")
                value_str = processed[i + 1]
                delete.add(i + 1)
            if arg.endswith("+"):
                arg = arg[:-1]
                value_str = json.dumps(value_str.split(","))
            key, *keys = arg.split(".")
            try:
                value: Any = json.loads(value_str)
            except json.JSONDecodeError:
                try:
                    value = human_readable_int(value_str)
                except ValueError:
                    value = value_str
            for k in reversed(keys):
                value = {k: value}
            _merge(dict_args.setdefault(key, {}), value)
            delete.add(i)
    processed = [a for i, a in enumerate(processed) if i not in delete]
    for key, value in dict_args.items():
        processed += [key, json.dumps(value)]
    return processed


def _merge(original: dict[str, Any], update: dict[str, Any]) -> None:
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(original.get(k), dict):
            _merge(original[k], v)
        elif isinstance(v, list) and isinstance(original.get(k), list):
            original[k] += v
        else:
            original[k] = v


def _is_option(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token) and " " not in token


def _unknown(option: str, table: ArgTable, version: str | None) -> UsageError:
    removed = removed_flag(option, version)
    if removed is not None:
        return UsageError(
            f"unrecognized arguments: {option} (vLLM {table.vllm_version} no longer takes it: removed in "
            f"{removed['removed_in']})",
            hint=f"{removed.get('hint') or 'drop it'}; or plan the release it belongs to with "
                 f"--vllm-version {removed.get('last_release', '')}".rstrip())
    close = table.suggest(option)
    return UsageError(f"unrecognized arguments: {option} (not a flag of vLLM {table.vllm_version})",
                      hint=f"did you mean {' or '.join(close)}?" if close else
                      "see `vllm serve --help=all` for vLLM's flags, `vmemplan size --help` for vmemplan's")


def parse_vllm_flags(args: Sequence[str], table: ArgTable, *, allow_positional: bool = True,
                     version: str | None = None) -> tuple[list[str], list[tuple[ArgSpec, str, Any]]]:
    """argparse over normalised ``args``: (positionals, [(spec, option as written, value)])."""
    positionals: list[str] = []
    given: list[tuple[ArgSpec, str, Any]] = []
    i = 0
    only_positional = False
    while i < len(args):
        tok = args[i]
        i += 1
        if only_positional or not _is_option(tok):
            if tok == "--" and not only_positional:
                only_positional = True
                continue
            positionals.append(tok)
            continue
        option, eq, inline = tok.partition("=")
        spec = table.lookup(option)
        if spec is None:
            raise _unknown(option, table, version)
        if spec.value in ("flag", "bool_optional"):
            if eq:
                raise UsageError(f"argument {option}: ignored explicit argument {inline!r}",
                                 hint=f"{option} takes no value"
                                 + (f"; write {spec.negations[0]} to turn it off" if spec.negations else ""))
            if spec.value == "flag":
                value: Any = True if spec.const is None else spec.const
            else:
                full = option if option in table.by_string else next(
                    s for s in (*spec.flags, *spec.negations) if s.startswith(option))
                value = full not in spec.negations
            given.append((spec, option, value))
            continue
        if spec.value == "list":
            items = [inline] if eq else []
            while not eq and i < len(args) and not _is_option(args[i]):
                items.append(args[i])
                i += 1
            if not items and spec.nargs == "+":
                raise UsageError(f"argument {option}: expected at least one argument", hint=f"give {option} a value")
            given.append((spec, option, [_convert(spec, option, v) for v in items]))
            continue
        if eq:
            raw: str | None = inline
        elif i < len(args) and not _is_option(args[i]):
            raw = args[i]
            i += 1
        else:
            raw = None
        if raw is None:
            if spec.value == "optional_value":
                given.append((spec, option, spec.const))
                continue
            raise UsageError(f"argument {option}: expected one argument", hint=f"give {option} a value")
        given.append((spec, option, _convert(spec, option, raw)))
    if positionals and not allow_positional:
        raise UsageError(f"unrecognized arguments: {' '.join(positionals)}",
                         hint="a value with no flag before it: check the flag's spelling and quoting")
    return positionals, given


def parse_vllm_command(command: str | Sequence[str], *, vllm_version: str | None = None,
                       config_base: Path | None = None) -> ParsedCommand:
    """Parse a whole command (``vllm serve MODEL ...``, ``python -m vllm.entrypoints.openai.api_server
    --model M ...``, ``docker run ... vllm/vllm-openai:TAG --model M ...``) or bare flags."""
    table = load_arg_table(vllm_version)
    tokens = _tokenize(command)
    program, args, env = _split_program(tokens)
    if "--config" in args or any(a.startswith("--config=") for a in args):
        idx = next(i for i, a in enumerate(args) if a == "--config" or a.startswith("--config="))
        if args[idx] == "--config":
            if idx + 1 >= len(args):
                raise UsageError("No config file specified! Please check your command-line arguments.",
                                 hint="--config FILE.yaml")
            path, drop = args[idx + 1], 2
        else:
            path, drop = args[idx].split("=", 1)[1], 1
        if config_base is not None and not Path(path).is_absolute():
            path = str(config_base / path)
        config_args = load_config_file(path, table)
        args = config_args + args[:idx] + args[idx + drop:]
    args = _normalise(args)
    positionals, given = parse_vllm_flags(args, table, version=vllm_version)
    model = None
    if positionals:
        if len(positionals) > 1:
            raise UsageError(f"unrecognized arguments: {' '.join(positionals[1:])}",
                             hint="a value with no flag before it: check the flag's spelling and quoting")
        model = positionals[0]
    return _classify(model, given, table, env=env, program=program)


def _classify(model: str | None, given: Iterable[tuple[ArgSpec, str, Any]], table: ArgTable, *,
              env: Mapping[str, str] | None = None, program: str = "flags") -> ParsedCommand:
    values: dict[str, Any] = {}
    classes: dict[str, list[str]] = {c: [] for c in EFFECTS}
    reasons: dict[str, str] = {}
    notes: list[str] = []
    for spec, _option, value in given:
        if spec.value == "list" and spec.dest in values and isinstance(values[spec.dest], list) and \
                spec.dest in ("api_key",):
            values[spec.dest] = values[spec.dest] + value
        else:
            values[spec.dest] = value
        if spec.dest in ("model", "model_tag"):
            continue
        name = spec.name
        if name not in classes[spec.effect]:
            classes[spec.effect].append(name)
            reasons[name] = spec.reason
        if spec.removed_in:
            notes.append(f"{name} was removed in vLLM {spec.removed_in}"
                         + (f" ({table.note})" if table.note else ""))
    model = model or values.get("model") or values.get("model_tag")
    if "model" in values and model:
        values["model"] = model
    return ParsedCommand(
        model=model, args=values, vllm_version=table.vllm_version,
        modelled=tuple(classes["modelled"]), no_memory_effect=tuple(classes["none"]),
        not_modelled=tuple(classes["not_modelled"]), env=dict(env or {}), notes=tuple(notes),
        program=program, reasons=reasons,
    )


def parse_non_default_args(text: str | Mapping[str, Any], *, vllm_version: str | None = None) -> ParsedCommand:
    """The ``non-default args: {...}`` line vLLM logs at startup (a Python dict repr, values
    like ``PoolerConfig(...)`` kept as text), read against the release's table by dest."""
    import ast

    table = load_arg_table(vllm_version)
    if isinstance(text, str):
        body = text.split("non-default args:", 1)[-1].strip()
        try:
            node = ast.parse(body, mode="eval").body
        except SyntaxError:
            raise UsageError("the non-default args line is not a dict", hint="paste the whole line") from None
        if not isinstance(node, ast.Dict):
            raise UsageError("the non-default args line is not a dict", hint="paste the whole line")
        mapping: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values):
            key = ast.literal_eval(k) if k is not None else None
            try:
                mapping[str(key)] = ast.literal_eval(v)
            except ValueError:
                mapping[str(key)] = ast.get_source_segment(body, v)
    else:
        mapping = dict(text)
    given = []
    for dest, value in mapping.items():
        spec = table.by_dest.get(dest)
        if spec is None:
            removed = removed_flag("--" + dest.replace("_", "-"), vllm_version)
            close = difflib.get_close_matches(dest, list(table.by_dest), n=2)
            if removed is not None:
                raise _unknown("--" + dest.replace("_", "-"), table, vllm_version)
            raise UsageError(f"unknown engine argument {dest!r} (not an argument of vLLM {table.vllm_version})",
                             hint=f"did you mean {' or '.join(close)}?" if close else "check the log's vLLM version")
        given.append((spec, spec.name, value))
    return _classify(mapping.get("model_tag") or mapping.get("model"), given, table)
