"""Python-literal-ish text as vLLM prints it: ``VllmConfig.__str__`` / the V0 engine config
(``key=value, key=value, ...``), argparse ``Namespace(...)`` and the ``non-default args: {...}``
dict.  Forgiving: a line cut short loses only its last item; nothing here raises.
"""

from __future__ import annotations

import ast
import warnings
from typing import Any

__all__ = ["literal", "parse_config", "parse_dict_literal", "norm_dtype"]


def literal(text: str) -> object:
    """``ast.literal_eval`` without the SyntaxWarning/DeprecationWarning Python prints for odd
    escapes ("\\-") inside the logged strings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.literal_eval(text)


_OPEN = {"(": ")", "[": "]", "{": "}"}


def _split_top(text: str, sep: str = ",") -> tuple[list[str], bool]:
    """Split on ``sep`` outside brackets and quotes.  Returns the parts and whether the text ended
    balanced (a cut line ends unbalanced: its last part is then unreliable)."""
    parts: list[str] = []
    stack: list[str] = []
    quote = ""
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in _OPEN:
            stack.append(_OPEN[c])
        elif stack and c == stack[-1]:
            stack.pop()
        elif c in ")]}" and not stack:
            pass
        elif c == sep and not stack:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts, not stack and not quote


def _value(raw: str) -> Any:
    raw = raw.strip()
    if not raw:
        return raw
    if raw in ("None", "null"):
        return None
    if raw in ("True", "true"):
        return True
    if raw in ("False", "false"):
        return False
    if raw[0] in "'\"[{(" or raw[0].isdigit() or raw[0] == "-":
        try:
            return literal(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            pass
    return raw


def parse_config(text: str) -> dict[str, Any]:
    """``key=value, key=value, ...`` as printed by VllmConfig.__str__ / the V0 engine / argparse
    ``Namespace(...)``.  A cut-off last item is dropped."""
    parts, _balanced = _split_top(text)
    # The last item is dropped: a cut line cuts it, and no figure we need is ever printed last
    # (VllmConfig.__str__ ends with compilation/kernel config, Namespace with unrelated flags).
    parts = parts[:-1]
    out: dict[str, Any] = {}
    for part in parts:
        key, sep, raw = part.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            continue
        out[key] = _value(raw)
    return out


def parse_dict_literal(text: str) -> dict[str, Any] | None:
    """The ``{...}`` dict printed after ``non-default args:``; ``ast.literal_eval`` first, then a
    forgiving top-level split (object reprs such as ``PoolerConfig(...)`` stay strings; a cut-off
    last item is dropped)."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = literal(text)
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    inner = text[1:]
    closed = False
    parts, balanced = _split_top(inner)
    if parts and parts[-1].rstrip().endswith("}"):
        parts[-1] = parts[-1].rstrip()[:-1]
        closed = True
    if (not balanced or not closed) and parts:
        parts = parts[:-1]
    out: dict[str, Any] = {}
    for part in parts:
        kv, _ = _split_top(part, ":")
        if len(kv) < 2:
            continue
        key = _value(kv[0])
        out[str(key)] = _value(":".join(kv[1:]))
    return out


def norm_dtype(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    if text.startswith("torch."):
        text = text[6:]
    return {"half": "float16", "float": "float32", "bf16": "bfloat16", "fp16": "float16"}.get(text, text)
