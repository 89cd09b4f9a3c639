"""JSON output: the MemoryPlan contract, stable key names, integers in bytes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from vmemplan.gates import Gate
    from vmemplan.result import MemoryPlan

__all__ = ["dumps", "plan_json"]


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


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
