"""Units: bytes inside, GiB at the edges.

vLLM logs GiB (2**30 bytes).  Every quantity inside vmemplan is an ``int`` of bytes or tokens;
these helpers convert at the edges only.
"""

from __future__ import annotations

import math

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.patterns import lazy

__all__ = ["GIB", "MIB", "KIB", "GB", "gib", "format_gib", "parse_bytes", "cdiv", "round_up", "DTYPE_BYTES", "dtype_bytes"]

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
GB = 10**9


def cdiv(a: int, b: int) -> int:
    """Ceiling division of integers, as vLLM's ``cdiv``."""
    return -(-a // b)


def round_up(x: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` that is >= ``x`` (``vllm/utils/math_utils.py::round_up``)."""
    return cdiv(x, multiple) * multiple


def gib(n_bytes: int | float) -> float:
    """Bytes as GiB (2**30), for display only."""
    return n_bytes / GIB


def format_gib(n_bytes: int | float) -> str:
    """GiB as vLLM's ``format_gib`` prints it: Python ``round`` to 2 decimals, zeros dropped.

    Mirrors vllm/utils/mem_utils.py::format_gib (0.33.0): ``f"{round(b / GiB_bytes, 2)}"``.
    """
    return f"{round(n_bytes / GIB, 2)}"


_SIZE = lazy(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]i?[bB]?|[bB])?\s*$")
_FACTORS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "ki": KIB, "kib": KIB,
    "m": 1000**2, "mb": 1000**2, "mi": MIB, "mib": MIB,
    "g": 1000**3, "gb": 1000**3, "gi": GIB, "gib": GIB,
    "t": 1000**4, "tb": 1000**4, "ti": 1 << 40, "tib": 1 << 40,
}


def parse_bytes(text: str) -> int:
    """Parse a byte count the way people and vLLM's ``--kv-cache-memory`` write it.

    Plain integers are bytes.  vLLM's ``human_readable_int`` reads a lower-case suffix as
    decimal (``1g`` = 10**9) and an upper-case one as binary (``1G`` = 2**30); ``GiB``/``GB``
    spelled out are read as written.  Raises ``ValueError`` on anything else.
    """
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a byte count: {text!r}")
    number, suffix = m.group(1), m.group(2) or ""
    if len(suffix) == 1 and suffix.isalpha() and suffix.lower() != "b":
        factor = {"k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4}[suffix.lower()]
        if suffix.isupper():
            factor = {"K": KIB, "M": MIB, "G": GIB, "T": 1 << 40}[suffix]
    else:
        factor = _FACTORS[suffix.lower()]
    value = float(number) * factor
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a byte count: {text!r}")
    return int(round(value))


DTYPE_BYTES: dict[str, int] = {
    "float32": 4, "float": 4, "fp32": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "half": 2, "fp16": 2,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1, "int8": 1, "uint8": 1,
    "int32": 4, "int64": 8, "int16": 2,
}


def dtype_bytes(name: str) -> int:
    """Bytes per element of a dtype name as configs and vLLM spell it (``torch.`` prefix allowed)."""
    key = name.lower().removeprefix("torch.")
    if key not in DTYPE_BYTES:
        raise ModelConfigError(f"unknown dtype {name!r}", hint="use bfloat16, float16 or float32")
    return DTYPE_BYTES[key]
