"""The lines the selected vLLM release would print, with that release's format strings.

Dialects are data: each rules pack's ``log`` section holds the printf formats read from the
release wheel (``registry/vllm/*.yaml``).  Timings are not memory and cannot be predicted,
so the ``… and %.6f seconds`` tail of "Model loading took" is left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vmemplan.core.patterns import lazy
from vmemplan.core.units import GIB, format_gib
from vmemplan.laws.budget import profiles_memory

if TYPE_CHECKING:
    from vmemplan.result import MemoryPlan
    from vmemplan.rules import RulesPack

__all__ = ["log_lines"]

_SECONDS_TAIL = lazy(r"\s+(?:and|in)\s+%\.\d+f\s+(?:seconds|secs)\.?$")


def _gib_arg(style: str | None, n_bytes: int) -> Any:
    return format_gib(n_bytes) if style == "format_gib" else n_bytes / GIB


def _startup_failure(plan: MemoryPlan, fmt: Any) -> tuple[str, str | None] | None:
    """Where vLLM's startup stops before its memory lines, and the message it raises then:
    ``("init", …)`` when the budget plus what vLLM holds before it exceeds the GPU (the free
    memory check in vllm/v1/worker/utils.py::request_memory), ``("load", …)`` when the weights
    exceed what the GPU has free (vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.load_model
    catches torch's OutOfMemoryError).  The message is None when the release's pack lacks it."""
    rank = plan.per_rank
    total = plan.gpu_total_memory_bytes
    free = total - rank.pre_budget_bytes
    if plan.engine.kv_cache_memory_bytes is None and rank.requested_memory_bytes > free:
        msg = None
        if fmt.free_memory_short:
            msg = fmt.free_memory_short % ("cuda:0", format_gib(free), format_gib(total),
                                           plan.engine.gpu_memory_utilization, format_gib(rank.requested_memory_bytes))
        return "init", msg
    if rank.weights_bytes > free:
        return "load", fmt.load_oom
    return None


def log_lines(plan: MemoryPlan, rules: RulesPack | None = None) -> list[str]:
    """Render the startup lines of ``rules``'s release (default: the plan's own) for ``plan``, in
    the order the release prints them, up to the point where it fails, then its failure message
    (and nothing after: a failed startup prints no KV cache size)."""
    rules = rules or plan.rules
    if rules is None:
        raise ValueError("the plan carries no rules pack; pass one")
    fmt = rules.log
    kv = plan.kv_cache
    rank = plan.per_rank
    lines: list[str] = list(plan.preface_log_lines)
    early = _startup_failure(plan, fmt)
    if early is not None:
        return [early[1]] if early[1] else []
    loading = _SECONDS_TAIL.sub("", fmt.model_loading)
    lines.append(loading % (_gib_arg(fmt.model_loading_value, rank.weights_bytes),))
    if not profiles_memory(rules.engine, bool(kv.groups)):
        return lines  # no profile run, no KV cache: nothing of the budget or the pool is logged
    if (
        fmt.cudagraph_estimate
        and rules.cuda_graphs.estimate_computed
        and plan.engine.cudagraph_mode != "NONE"
        and plan.engine.kv_cache_memory_bytes is None
    ):
        lines.append(fmt.cudagraph_estimate % (rank.cuda_graph_bytes / GIB,))
    if fmt.available_kv and plan.engine.kv_cache_memory_bytes is None:
        lines.append(fmt.available_kv % (_gib_arg(fmt.available_kv_value, rank.available_kv_cache_bytes),))
    if (fmt.cudagraph_estimate_enabled and rules.cuda_graphs.estimate_subtracted_by_default
            and rank.cuda_graph_subtracted and rank.cuda_graph_bytes > 0
            and plan.engine.kv_cache_memory_bytes is None):
        # Worker.determine_available_memory, right after "Available KV cache memory": the util
        # that would give the same pool without the estimate, and the util that keeps the old
        # pool with it.
        util = plan.engine.gpu_memory_utilization
        delta = rank.cuda_graph_bytes / plan.gpu_total_memory_bytes
        lines.append(fmt.cudagraph_estimate_enabled % (util, round(util - delta, 4), min(round(util + delta, 4), 1.0)))
    override = plan.pool.ctx.num_gpu_blocks_override if plan.pool is not None and plan.pool.ctx else None
    available = rank.available_kv_cache_bytes
    if override is not None and kv.page_size_bytes:
        # vllm/v1/core/kv_cache_planning.py::get_kv_cache_configs (0.33.0): logged, then the
        # available memory becomes override x bytes per block, checked less the null block
        if fmt.num_blocks_override:
            lines.append(fmt.num_blocks_override % (rank.available_kv_cache_bytes // kv.page_size_bytes, override))
        available = (override - (1 if plan.pool.ctx.reserve_null_block else 0)) * kv.page_size_bytes
    if not plan.verdict.starts:
        # vllm/v1/core/kv_cache_planning.py::_check_enough_kv_cache_memory raises; nothing follows
        if available <= 0:
            if fmt.no_kv_memory:
                lines.append(fmt.no_kv_memory)
        elif fmt.not_enough_kv and kv.needed_bytes and (override is None or kv.needed_bytes > available):
            estimate = ""
            if plan.verdict.max_model_len_that_fits and fmt.not_enough_kv_estimate:
                estimate = fmt.not_enough_kv_estimate % (plan.verdict.max_model_len_that_fits,)
            lines.append(fmt.not_enough_kv % (plan.engine.max_model_len, format_gib(kv.needed_bytes),
                                              format_gib(available), estimate))
        return lines
    length = plan.engine.max_model_len
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
    if kv.max_concurrency is None:
        return lines  # no KV cache groups: vLLM logs no capacity (EngineCore._initialize_kv_caches)
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
