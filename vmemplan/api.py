"""The public Python API: plan a deployment, get the frozen result.

    >>> from vmemplan import plan
    >>> result = plan("meta-llama/Llama-3.1-8B", gpu="h100", gpu_memory_utilization=0.92,
    ...               max_model_len=32768)
    >>> result.kv_cache.tokens  # doctest: +SKIP

The CLI is one consumer of these functions.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from vmemplan.errors import UsageError
from vmemplan.result import MemoryPlan

__all__ = ["plan", "plan_from_flags", "resolve_request"]


@contextlib.contextmanager
def _spinner(message: str) -> Iterator[None]:
    """A spinner on stderr while fetching, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(message):
        yield


def resolve_request(*, spinner: bool = False, **flags: Any) -> Any:
    """Build :class:`~vmemplan.resolve.PlanInputs` from flags and resolve it."""
    from vmemplan.resolve import PlanInputs, resolve
    from vmemplan.units import parse_bytes

    kv_mem = flags.pop("kv_cache_memory", None)
    if isinstance(kv_mem, str):
        try:
            kv_mem = parse_bytes(kv_mem)
        except ValueError:
            raise UsageError(f"--kv-cache-memory {kv_mem!r} is not a byte count",
                             hint="write bytes, or a size such as 32G (2^30) or 32g (10^9)") from None
    if kv_mem is not None:
        flags["kv_cache_memory_bytes"] = kv_mem
    inputs = PlanInputs(**{k: v for k, v in flags.items() if v is not None or k in ("model", "gpu")})
    return resolve(inputs, progress=_spinner if spinner else None)


def plan_from_flags(**flags: Any) -> MemoryPlan:
    """Plan from vLLM-named flags (``gpu_memory_utilization=0.92``, ``kv_cache_memory="32G"``, …)."""
    from vmemplan.planner import plan_memory

    return plan_memory(resolve_request(**flags))


def plan(model: str, *, gpu: str, **flags: Any) -> MemoryPlan:
    """Plan serving ``model`` on ``gpu`` with vLLM's flags as keyword arguments."""
    return plan_from_flags(model=model, gpu=gpu, **flags)
