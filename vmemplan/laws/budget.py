"""The memory budget and the bytes left for the KV cache.

Two eras, selected by the rules pack (``budget.formula``):

* ``requested_minus_non_kv`` and ``requested_minus_non_kv_minus_cudagraph`` (V1 since
  mid-2025, V0 from 0.6.6): ``requested = total × util`` (rounded up from 2025-12), then
  ``available = requested − (weights + torch peak increase + non-torch increase)`` minus the
  CUDA-graph estimate where the release subtracts it.  Mirrors
  vllm/v1/worker/gpu_worker.py::Worker.determine_available_memory and
  vllm/v1/worker/utils.py::request_memory (0.33.0).
* ``v0_peak`` (≤ 0.6.5 and early V1): ``total × util − peak``, where the peak holds the
  weights, the activation peak and every non-torch byte on the device at profile time
  (CUDA context and communicator included).  Mirrors vllm/worker/worker.py::
  Worker.determine_num_available_blocks (0.6.4).
"""

from __future__ import annotations

import math
from typing import Literal

from vmemplan.core.frozen import frozen

__all__ = ["requested_memory_bytes", "AvailableKv", "available_kv_cache_bytes", "profiles_memory"]


def profiles_memory(engine: str, has_kv_cache: bool) -> bool:
    """Whether the engine runs the memory profile at all.  V1 profiles only a model with a KV
    cache: for one without (an encoder-only pooling model) it gives every worker 0 bytes and
    never calls determine_available_memory, so nothing of the budget, the CUDA-graph estimate
    or the KV cache capacity is logged or checked (vllm/v1/engine/core.py::EngineCore.
    _initialize_kv_caches: "Attention free models don't need memory for kv cache", 0.33.0)."""
    return has_kv_cache or engine != "v1"


def requested_memory_bytes(total_memory_bytes: int, gpu_memory_utilization: float, *,
                           rounding: Literal["ceil", "float"] = "ceil") -> int:
    """The budget vLLM may use: ``ceil(total × util)`` (or the float product, truncated
    only when printed, for releases before vLLM PR #30868)."""
    product = total_memory_bytes * gpu_memory_utilization
    return math.ceil(product) if rounding == "ceil" else int(product)


@frozen
class AvailableKv:
    requested_bytes: int
    non_kv_bytes: int  # what the formula subtracts from the budget
    available_bytes: int  # may be negative: vLLM then refuses to start


def available_kv_cache_bytes(
    *,
    requested_bytes: int,
    weights_bytes: int,
    activation_peak_bytes: int,
    non_torch_bytes: int,
    cuda_graph_estimate_bytes: int,
    subtract_cuda_graph: bool,
    formula: str = "requested_minus_non_kv",
    pre_budget_bytes: int = 0,
) -> AvailableKv:
    """KV bytes left under the budget, in the order the selected release computes them."""
    # In the old peak formulas ("v0_peak", "v0_free_delta") the non-torch figure is every
    # non-torch byte on the device (CUDA context and communicator included); the cost model's
    # eras for those releases state it that way, so nothing more is added here.
    # Only the *applied* CUDA-graph estimate is subtracted (vllm/v1/worker/gpu_worker.py::
    # Worker.determine_available_memory): the caller decides, by one rule
    # (vmemplan.pipeline.cuda_graph_subtracted), whether the release applies it.
    non_kv = weights_bytes + activation_peak_bytes + non_torch_bytes
    if subtract_cuda_graph:
        non_kv += cuda_graph_estimate_bytes
    return AvailableKv(requested_bytes, non_kv, requested_bytes - non_kv)
