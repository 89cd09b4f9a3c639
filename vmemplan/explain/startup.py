"""The frozen records explain-log produces: :class:`Figures` (the numbers one startup or one rank
printed), :class:`LogLine` (one recognised record) and :class:`Startup` (one startup attempt).

Pure data; the parser that fills them is :mod:`vmemplan.explain.parse`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, fields
from typing import Any

from vmemplan.core.frozen import frozen

__all__ = ["FIGURE_JSON_KEYS", "FIGURE_NAMES", "GIB", "Figures", "LogLine", "Startup", "half_unit_bytes"]

GIB = 1 << 30

# --------------------------------------------------------------------------------------------
# Frozen results
# --------------------------------------------------------------------------------------------

#: The figure keys the JSON contract promises (schema_version 1), in order.
FIGURE_JSON_KEYS: tuple[str, ...] = (
    "total_memory_bytes",
    "gpu_memory_utilization",
    "weights_bytes",
    "activation_peak_bytes",
    "non_torch_bytes",
    "cuda_graph_bytes",
    "cuda_graph_estimate_bytes",
    "available_kv_cache_bytes",
    "kv_cache_tokens",
    "num_gpu_blocks",
    "block_size",
    "max_model_len",
    "max_concurrency",
    "tensor_parallel_size",
)


@frozen
class Figures:
    """The numbers one startup (or one rank of it) printed.  ``None`` = not in the log.

    Memory is in bytes, converted from the printed GiB as ``round(value * 2**30)``; ``printed``
    keeps the text each memory figure was printed with (``{"weights_bytes": "14.2488"}``) so checks
    can allow half a unit of the last printed decimal.
    """

    total_memory_bytes: int | None = None
    gpu_memory_utilization: float | None = None
    weights_bytes: int | None = None
    activation_peak_bytes: int | None = None
    non_torch_bytes: int | None = None
    cuda_graph_bytes: int | None = None
    cuda_graph_estimate_bytes: int | None = None
    available_kv_cache_bytes: int | None = None
    kv_cache_tokens: int | None = None
    num_gpu_blocks: int | None = None
    block_size: int | None = None
    max_model_len: int | None = None
    max_concurrency: float | None = None
    tensor_parallel_size: int | None = None
    # -- beyond the JSON contract's minimum
    pipeline_parallel_size: int | None = None
    data_parallel_size: int | None = None
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    quantization: str | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    enforce_eager: bool | None = None
    estimated_max_model_len: int | None = None
    requested_memory_bytes: int | None = None
    free_memory_bytes: int | None = None
    kv_cache_needed_bytes: int | None = None
    peak_torch_bytes: int | None = None
    initial_memory_usage_bytes: int | None = None
    post_profile_memory_bytes: int | None = None
    non_kv_cache_bytes: int | None = None
    consumed_bytes: int | None = None
    kv_cache_memory_to_requested_bytes: int | None = None
    kv_cache_memory_to_gpu_bytes: int | None = None
    kv_cache_memory_override_bytes: int | None = None
    num_cpu_blocks: int | None = None
    cuda_graph_equivalent_util: float | None = None
    cuda_graph_suggested_util: float | None = None
    weights_load_seconds: float | None = None
    profile_seconds: float | None = None
    graph_capture_seconds: float | None = None
    printed: Mapping[str, str] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """All figures as a plain dict (contract keys first), without ``printed``."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name != "printed":
                out[f.name] = getattr(self, f.name)
        return out


@frozen
class LogLine:
    """One recognised log record: 1-based line ``number`` of its first physical line in the input,
    its text (ANSI removed, terminal wrapping joined), what ``kind`` of figure it carries, and the
    ``rank`` that printed it (``None`` for the engine / API server)."""

    number: int
    text: str
    kind: str
    rank: int | None = None


@frozen
class Startup:
    """One startup attempt found in a log."""

    vllm_version: str | None
    format: str
    model: str | None
    outcome: str  # "started" | "failed"
    error: str | None
    ranks: tuple[int, ...]
    figures: Figures
    per_rank: Mapping[int, Figures]
    engine: Mapping[str, Any]
    lines: tuple[LogLine, ...]
    preemptions: int = 0
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    reached: str = "none"
    first_line: int = 0
    last_line: int = 0
    stats: Mapping[str, Any] = field(default_factory=dict)
    kv_lines: tuple[Mapping[str, Any], ...] = ()

    @property
    def primary_rank(self) -> int:
        return self.ranks[0] if 0 not in self.ranks else 0




def half_unit_bytes(printed: str | None) -> int:
    """Half a unit of the last printed decimal of a GiB figure, in bytes (0 when unknown).

    ``"14.96"`` -> 0.005 GiB; ``"48.5"`` -> 0.05 GiB; ``"16"`` -> 0.5 GiB.
    """
    if not printed:
        return 0
    text = printed.strip().lstrip("-")
    if "e" in text.lower():
        return 0
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    return int(round(0.5 * 10.0 ** (-decimals) * GIB))



#: Every figure field (the ``printed`` texts excluded).
FIGURE_NAMES = frozenset(f.name for f in fields(Figures)) - {"printed"}
