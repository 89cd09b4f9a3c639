"""JSON output: the MemoryPlan contract, stable key names, integers in bytes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vmemplan.result import MemoryPlan

__all__ = ["dumps", "plan_json"]


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def plan_json(plan: MemoryPlan) -> dict[str, Any]:
    """The plan's JSON contract, with the startup lines its release would print (``log_lines``,
    after ``warnings``, as schema 1 has always placed them)."""
    from vmemplan.render.vllm_log import log_lines

    out: dict[str, Any] = {}
    for key, value in plan.to_json().items():
        if key == "notes":
            out["log_lines"] = log_lines(plan)
        out[key] = value
    if "log_lines" not in out:
        out["log_lines"] = log_lines(plan)
    return out
