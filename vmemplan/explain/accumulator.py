"""The mutable state of one startup while its records are read (frozen by
:func:`vmemplan.explain.freeze.freeze`).

Figures printed by a worker (weights, profiler figures, available KV cache, ...) are kept per
process key; engine-wide figures (blocks, tokens, max_model_len, ...) once.  A ``weak`` figure
(from the arguments, or a coarser duplicate line) never overwrites a figure a log line printed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Acc", "WORKER_FIGURES"]

#: Figures that belong to one worker (rank); the rest are engine-wide.
WORKER_FIGURES = frozenset(
    {
        "total_memory_bytes", "weights_bytes", "activation_peak_bytes", "non_torch_bytes",
        "cuda_graph_bytes", "cuda_graph_estimate_bytes", "available_kv_cache_bytes",
        "requested_memory_bytes", "free_memory_bytes", "peak_torch_bytes",
        "initial_memory_usage_bytes", "post_profile_memory_bytes", "non_kv_cache_bytes",
        "consumed_bytes", "kv_cache_memory_to_requested_bytes", "kv_cache_memory_to_gpu_bytes",
        "kv_cache_memory_override_bytes", "cuda_graph_equivalent_util",
        "cuda_graph_suggested_util", "weights_load_seconds", "profile_seconds",
        "graph_capture_seconds",
    }
)
_MEMORY_MARKERS = frozenset(
    {"weights_bytes", "available_kv_cache_bytes", "kv_cache_tokens", "num_gpu_blocks",
     "total_memory_bytes", "peak_torch_bytes", "max_concurrency", "cuda_graph_bytes"}
)
_KV_MARKERS = frozenset(
    {"available_kv_cache_bytes", "kv_cache_tokens", "num_gpu_blocks", "max_concurrency"}
)


class Acc:
    """Mutable state while reading one startup; frozen by :func:`vmemplan.explain.freeze.freeze`."""

    def __init__(self) -> None:
        self.records: list[tuple[int, str]] = []
        self.seen_keys: list[Any] = []
        self.lines: list[tuple[int, str, str, Any]] = []
        self.version: str | None = None
        self.model_sources: dict[str, str] = {}
        self.engine_config: dict[str, Any] = {}
        self.non_default_args: dict[str, Any] = {}
        self.namespace_args: dict[str, Any] = {}
        self.eng: dict[str, Any] = {}
        self.eng_weak: dict[str, Any] = {}
        self.printed: dict[Any, dict[str, str]] = {}
        self.workers: dict[Any, dict[str, Any]] = {}
        self.kv_entries: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.generic_errors: list[str] = []
        self.notes: list[str] = []
        self.hints: set[str] = set()
        self.preempt_v0_max = 0
        self.preempt_v0_count = 0
        self.preempt_v1_sum = 0
        self.runtime_lines = 0
        self.stats: dict[str, Any] = {}
        self.started_by: str | None = None
        self.has_kv = False
        self.has_memory = False
        #: an open multi-line block whose rows follow as separate records: (kind, process key)
        self.block: tuple[str, Any] | None = None

    # ---- figure setters
    def put(self, target: Any, name: str, value: Any, printed: str | None = None, weak: bool = False) -> None:
        if value is None:
            return
        if name in WORKER_FIGURES:
            if target is None:
                target = "driver"
            bucket = self.workers.setdefault(target, {})
            if weak and name in bucket:
                return
            bucket[name] = value
            if printed is not None:
                self.printed.setdefault(target, {})[name] = printed
        else:
            if weak:
                if name not in self.eng:
                    self.eng_weak.setdefault(name, value)
                return
            self.eng[name] = value
            if printed is not None:
                self.printed.setdefault(None, {})[name] = printed
        if name in _MEMORY_MARKERS:
            self.has_memory = True
        if name in _KV_MARKERS:
            self.has_kv = True

    def line(self, number: int, text: str, kind: str, key: Any) -> None:
        self.lines.append((number, text, kind, key))

    @property
    def has_outcome(self) -> bool:
        return self.has_kv or bool(self.errors) or bool(self.generic_errors)
