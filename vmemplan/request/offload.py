"""Which weight offloader vLLM builds from the offload flags, and its settings (the request layer).

vllm/config/offload.py::OffloadConfig (0.33.0): ``--offload-backend auto`` picks the prefetch
offloader when ``--offload-group-size`` > 0, else UVA when ``--cpu-offload-gb`` > 0
(vllm/model_executor/offloader/base.py::create_offloader); ``validate_offload_config`` refuses
``--offload-num-in-group`` above the group size and a prefetch step below 1.  The bytes each
offloader moves are :mod:`vmemplan.laws.offload`'s.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen

__all__ = ["PrefetchOffload", "resolve_offload"]


@frozen
class PrefetchOffload:
    """vLLM's PrefetchOffloader settings (vllm/model_executor/offloader/prefetch.py)."""

    group_size: int
    num_in_group: int
    prefetch_step: int


def resolve_offload(inputs: Any, warnings: list[str]) -> tuple[PrefetchOffload | None, bool]:
    """(the prefetch offloader, or None; whether UVA offloading of --cpu-offload-gb applies)."""
    backend = (getattr(inputs, "offload_backend", None) or "auto").lower()
    group = int(getattr(inputs, "offload_group_size", None) or 0)
    in_group = getattr(inputs, "offload_num_in_group", None)
    in_group = 1 if in_group is None else int(in_group)
    step = getattr(inputs, "offload_prefetch_step", None)
    step = 1 if step is None else int(step)
    uva_gb = float(getattr(inputs, "cpu_offload_gb", None) or 0)
    if backend not in ("auto", "uva", "prefetch"):
        raise UsageError(f"--offload-backend {backend!r} is not one of auto, uva, prefetch",
                         hint="--offload-backend auto, uva or prefetch")
    if backend == "prefetch" or group > 0:
        if in_group > group:
            raise UsageError(f"offload_num_in_group ({in_group}) must be <= offload_group_size ({group})",
                             hint=f"--offload-num-in-group {max(group, 1)} or less, or a larger --offload-group-size")
        if step < 1:
            raise UsageError(f"offload_prefetch_step ({step}) must be >= 1 when prefetch offloading is enabled"
                             " (offload_group_size > 0)", hint="--offload-prefetch-step 1 or more")
    chosen = backend if backend != "auto" else ("prefetch" if group > 0 else "uva")
    if chosen == "prefetch":
        if uva_gb > 0:
            warnings.append("--cpu-offload-gb is ignored: the prefetch offloader is selected (vLLM warns: "
                            "'UVA offload fields are set but offload_backend=prefetch' / 'Prefetch backend will be "
                            "selected'), so no UVA offloading is planned")
        if getattr(inputs, "offload_params", None):
            warnings.append("--offload-params is not modelled: the prefetch offloader is planned as moving every "
                            "parameter of each offloaded layer, so the weights are a low estimate")
        return PrefetchOffload(group, in_group, step), False
    if group > 0:  # --offload-backend uva with prefetch fields: vLLM ignores them (with a warning)
        warnings.append("--offload-group-size is ignored with --offload-backend uva (vLLM: 'Prefetch settings "
                        "will be ignored')")
    return None, True
