"""JSON output: the MemoryPlan contract, stable key names, integers in bytes.

The output is always strict JSON: a non-finite number (``NaN``, ``Infinity``: a log that prints
``1e400x``) is refused with an input error naming where it sits, never written as the
non-standard tokens Python's json would emit.  C1 control characters, which ``ensure_ascii=False``
would write raw, are escaped so that no string from an input can drive the terminal.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from vmemplan.core.patterns import lazy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from vmemplan.gates import Gate
    from vmemplan.result import MemoryPlan

__all__ = ["dumps", "plan_json"]

_C1 = lazy("[\u0080-\u009f\u2028\u2029]")


def _non_finite_path(data: Any, path: str = "$") -> str | None:
    stack: list[tuple[Any, str]] = [(data, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return where
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
    return None


def dumps(data: Any) -> str:
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError as error:
        if "Out of range float values" not in str(error):
            raise
        from vmemplan.core.errors import BadInput

        where = _non_finite_path(data) or "a figure"
        raise BadInput(
            f"the result holds a non-finite number at {where[:120]}, which JSON cannot carry",
            hint="an input (a log line or a flag) gave an infinite or NaN value; check it, or use --format table",
        ) from None
    return _C1.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) + "\n"


def plan_json(plan: MemoryPlan, gates: Sequence[Gate] | None = None) -> dict[str, Any]:
    """The plan's JSON contract, with the startup lines its release would print (``log_lines``,
    after ``warnings``, as schema 1 has always placed them), and the gates (``gates``: one
    ``{name, target, value, ok}`` per --min-* flag given; empty when none was)."""
    from vmemplan.render.vllm_log import log_lines

    out: dict[str, Any] = {}
    for key, value in plan.to_json().items():
        if key == "notes":
            out["log_lines"] = log_lines(plan)
        out[key] = value
    if "log_lines" not in out:
        out["log_lines"] = log_lines(plan)
    out["gates"] = [g.to_json() for g in gates or ()]
    return out
