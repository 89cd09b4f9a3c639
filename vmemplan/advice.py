"""What would make a failing plan start: the nearest flags that fit, found by re-planning.

Every candidate is planned through :func:`vmemplan.api.plan_from_flags` (the one pipeline), so
the advice can never contradict what ``size`` would answer for the suggested flags.  No law is
re-derived here: this module only chooses which flags to try and keeps the ones whose plan
starts.  A suggestion never takes a flag past its limit (``--gpu-memory-utilization`` stays at
or under 1.0 and under what the GPU has free after vLLM's pre-budget memory).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import VmemplanError
from vmemplan.core.frozen import frozen
from vmemplan.result import MemoryPlan

__all__ = ["Fixes", "find_fixes", "highest_util"]

#: Parallel sizes tried, smallest first.
PARALLEL_SIZES = (2, 4, 8, 16)
#: Online quantizations tried when the checkpoint is not quantized already.
QUANTIZATIONS = ("fp8",)


@frozen
class Fixes:
    """Flags that each make the plan start on their own (None: none found / not needed)."""

    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    quantization: str | None = None
    kv_cache_memory_needed: bool = False  # --kv-cache-memory leaves the cache no room
    util_at_limit: bool = False  # util is already as high as the GPU allows
    util_lowered: bool = False  # the util must come down first; the other fixes assume it did

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.max_model_len, self.gpu_memory_utilization,
                                           self.tensor_parallel_size, self.pipeline_parallel_size,
                                           self.quantization)) or self.kv_cache_memory_needed


def highest_util(plan: MemoryPlan) -> float:
    """The largest ``--gpu-memory-utilization`` (two decimals, ≤ 1.0) whose budget plus what vLLM
    holds before it still fits the GPU (vllm/v1/worker/utils.py::request_memory's check)."""
    total = plan.gpu_total_memory_bytes
    free = total - plan.per_rank.pre_budget_bytes
    return min(math.floor(free / total * 100) / 100, 1.0)


def _starts(flags: Mapping[str, Any], **change: Any) -> bool:
    from vmemplan.api import plan_from_flags

    try:
        return plan_from_flags(**{**flags, **change}).verdict.starts
    except VmemplanError:  # e.g. a tensor-parallel size that does not divide the heads
        return False


def find_fixes(flags: Mapping[str, Any], plan: MemoryPlan) -> Fixes:
    """The flags that would make ``plan`` (made from ``flags``, vmemplan.api's names) start.

    Tried in order, each on its own: a shorter ``--max-model-len`` (the pipeline's own estimate),
    a higher util (only up to :func:`highest_util`), the smallest ``-tp``, the smallest ``-pp``,
    and an online quantization.  Nothing is tried when the plan starts."""
    if plan.verdict.starts:
        return Fixes()
    flags = {k: v for k, v in flags.items() if k not in ("spinner",)}
    e = plan.engine
    if e.kv_cache_memory_bytes is not None:
        fits = plan.verdict.max_model_len_that_fits
        return Fixes(max_model_len=fits, kv_cache_memory_needed=fits is None)
    if plan.verdict.max_model_len_that_fits:
        return Fixes(max_model_len=plan.verdict.max_model_len_that_fits)
    top = highest_util(plan)
    util = None
    over_free = plan.per_rank.requested_memory_bytes + plan.per_rank.pre_budget_bytes > plan.gpu_total_memory_bytes
    if over_free and top > 0:
        # the util is past what the GPU has free: lower it first, and search from there
        flags = {**flags, "gpu_memory_utilization": top}
        util = top
        if _starts(flags):
            return Fixes(gpu_memory_utilization=util)
    elif top > e.gpu_memory_utilization and _starts(flags, gpu_memory_utilization=top):
        util = top
    found: dict[str, Any] = {}
    tp0, pp0 = e.tensor_parallel_size, e.pipeline_parallel_size
    for tp in (n for n in PARALLEL_SIZES if n > tp0):
        if _starts(flags, tensor_parallel_size=tp):
            found["tensor_parallel_size"] = tp
            break
    for pp in (n for n in PARALLEL_SIZES if n > pp0):
        if _starts(flags, pipeline_parallel_size=pp):
            found["pipeline_parallel_size"] = pp
            break
    if not flags.get("quantization"):
        for q in QUANTIZATIONS:
            if _starts(flags, quantization=q):
                found["quantization"] = q
                break
    if over_free:
        return Fixes(gpu_memory_utilization=util, util_lowered=True, util_at_limit=True, **found)
    return Fixes(gpu_memory_utilization=util, util_at_limit=top <= e.gpu_memory_utilization, **found)
