"""The lines the selected vLLM release would print, with that release's format strings.

Dialects are data: each rules pack's ``log`` section holds the printf formats read from the
release wheel (``registry/vllm/*.yaml``).  Timings are not memory and cannot be predicted,
so the ``… and %.6f seconds`` tail of "Model loading took" is left out.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from vmemplan.units import GIB, format_gib

if TYPE_CHECKING:
    from vmemplan.result import MemoryPlan
    from vmemplan.rules import RulesPack

__all__ = ["log_lines"]

_SECONDS_TAIL = re.compile(r"\s+(?:and|in)\s+%\.\d+f\s+(?:seconds|secs)\.?$")


def _gib_arg(style: str | None, n_bytes: int) -> Any:
    return format_gib(n_bytes) if style == "format_gib" else n_bytes / GIB


def log_lines(plan: MemoryPlan, rules: RulesPack) -> list[str]:
    """Render the startup lines of ``rules``'s release for ``plan``."""
    fmt = rules.log
    kv = plan.kv_cache
    rank = plan.per_rank
    lines: list[str] = []
    loading = _SECONDS_TAIL.sub("", fmt.model_loading)
    lines.append(loading % (_gib_arg(fmt.model_loading_value, rank.weights_bytes),))
    if (
        fmt.cudagraph_estimate
        and rules.cuda_graphs.estimate_computed
        and plan.engine.get("cudagraph_mode") != "NONE"
        and plan.engine.get("kv_cache_memory_bytes") is None
    ):
        lines.append(fmt.cudagraph_estimate % (rank.cuda_graph_bytes / GIB,))
    if fmt.available_kv and plan.engine.get("kv_cache_memory_bytes") is None:
        lines.append(fmt.available_kv % (_gib_arg(fmt.available_kv_value, rank.available_kv_cache_bytes),))
    if plan.verdict.starts:
        length = plan.engine["max_model_len"]
        len_arg: Any = f"{length:,}" if fmt.max_concurrency_len_arg != "int" else length
        if fmt.gpu_blocks:
            cpu_blocks = 0
            swap = rules.defaults.swap_space_bytes
            if swap is not None and kv.page_size_bytes:
                cpu_blocks = swap.value // kv.page_size_bytes
            args: tuple[Any, ...] = (kv.num_blocks, cpu_blocks)
            if fmt.gpu_blocks_device_label:
                args = (fmt.gpu_blocks_device_label, *args)
            lines.append(fmt.gpu_blocks % args)
        if fmt.joined_kv_line:
            args = (f"{kv.tokens:,}", f"{length:,}", kv.max_concurrency)
            if fmt.joined_kv_line_device_label:
                args = (fmt.joined_kv_line_device_label, *args)
            lines.append(fmt.joined_kv_line % args)
        else:
            if fmt.kv_cache_size:
                lines.append(fmt.kv_cache_size % (f"{kv.tokens:,}",))
            if fmt.max_concurrency:
                lines.append(fmt.max_concurrency % (len_arg, kv.max_concurrency))
    return lines
