"""vmemplan: plan vLLM GPU memory before you boot a GPU.

Public API (imported lazily so that ``import vmemplan`` stays cheap)::

    from vmemplan import plan
    result = plan("meta-llama/Llama-3.1-8B", gpu="h100", gpu_memory_utilization=0.92)
    print(result.kv_cache.tokens, result.kv_cache.max_concurrency)
"""

from __future__ import annotations

from typing import Any

from vmemplan._version import __version__

__all__ = ["__version__", "plan", "plan_from_flags", "MemoryPlan", "PlanInputs", "load_registry"]


def __getattr__(name: str) -> Any:
    if name in ("plan", "plan_from_flags"):
        from vmemplan import api

        return getattr(api, name)
    if name == "MemoryPlan":
        from vmemplan.result import MemoryPlan

        return MemoryPlan
    if name == "PlanInputs":
        from vmemplan.resolve import PlanInputs

        return PlanInputs
    if name == "load_registry":
        from vmemplan.registry import load_registry

        return load_registry
    raise AttributeError(name)
