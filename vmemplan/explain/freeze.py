"""Freeze one startup's accumulated state into a :class:`~vmemplan.explain.startup.Startup`: map
process keys to rank numbers, merge engine-wide and per-worker figures, place the KV-capacity
lines, name the log format, and decide the outcome and how far the startup got."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.explain.accumulator import Acc
from vmemplan.explain.startup import FIGURE_NAMES, Figures, LogLine, Startup

__all__ = ["freeze"]


def _tp_size(acc: Acc, tp: Any) -> int:
    """The tensor-parallel size: the config's, else the highest TP index a worker prefix showed."""
    grid_keys = [k for k in acc.workers if isinstance(k, tuple) and k[0] == "grid"]
    grid_keys += [k for (_, _, _, k) in acc.lines if isinstance(k, tuple) and k[0] == "grid"]
    grid_keys += [k for k in acc.seen_keys if k[0] == "grid"]
    max_tp = 0
    for k in grid_keys:
        for axis, n in k[1]:
            if axis == "TP":
                max_tp = max(max_tp, n + 1)
    return tp if isinstance(tp, int) and tp > 0 else max(max_tp, 1)


def _rank_mapping(acc: Acc, tp: Any, pp: int) -> tuple[dict[Any, int], list[int]]:
    """Process key -> global rank (``(dp * pp + pp_rank) * tp + tp_rank`` for grid names; pid-only
    workers take the lowest free numbers), and the sorted ranks."""
    tp_size = _tp_size(acc, tp)
    mapping: dict[Any, int] = {"driver": 0}
    all_keys: list[Any] = []
    for (_, _, _, k) in acc.lines:
        if k is not None and k not in all_keys:
            all_keys.append(k)
    for k in list(acc.workers) + acc.seen_keys:
        if k not in all_keys and k != "driver":
            all_keys.append(k)
    for k in all_keys:
        if k[0] == "rank":
            mapping[k] = k[1]
        elif k[0] == "grid":
            axes = dict(k[1])
            mapping[k] = (axes.get("DP", 0) * pp + axes.get("PP", 0)) * tp_size + axes.get("TP", 0)
    used = {v for kk, v in mapping.items() if kk != "driver"}
    if acc.workers.get("driver"):
        used.add(0)
    nxt = 0
    for k in all_keys:
        if k[0] == "pid":
            while nxt in used:
                nxt += 1
            mapping[k] = nxt
            used.add(nxt)
    return mapping, (sorted(used) if used else [0])


def _kv_part(e: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    figs = {name: e[name] for name in ("kv_cache_tokens", "max_concurrency") if name in e}
    printed = {"max_concurrency": e["max_concurrency_printed"]} if "max_concurrency_printed" in e else {}
    return figs, printed


def _kv_lines(acc: Acc, mapping: Mapping[Any, int], ranks: list[int]) -> tuple[dict[str, Any], dict[int, dict]]:
    """The engine's KV-capacity figures and each rank's (some releases print one line per worker)."""
    engine_kv: dict[str, Any] = {}
    rank_kv: dict[int, dict[str, Any]] = {}
    entries = acc.kv_entries
    eng_entries = [e for e in entries if "key" not in e]
    for e in entries:
        if "key" in e:
            rank_kv.setdefault(mapping.get(e["key"], 0), {}).update(e)
    if eng_entries:
        distinct = {(e.get("kv_cache_tokens"), e.get("max_concurrency")) for e in eng_entries}
        if len(eng_entries) == len(ranks) > 1:
            for r, e in zip(ranks, eng_entries):
                rank_kv.setdefault(r, {}).update(e)
            engine_kv = dict(eng_entries[0])
        else:
            engine_kv = dict(eng_entries[0])
            if len(distinct) > 1:
                acc.notes.append("kv_lines_differ")
    return engine_kv, rank_kv


def _per_rank(acc: Acc, eng_all: Mapping[str, Any], mapping: Mapping[Any, int],
              ranks: list[int]) -> dict[int, Figures]:
    per_worker: dict[int, dict[str, Any]] = {}
    per_printed: dict[int, dict[str, str]] = {}
    for k, figs in acc.workers.items():
        r = mapping.get(k, 0)
        per_worker.setdefault(r, {}).update(figs)
        per_printed.setdefault(r, {}).update(acc.printed.get(k, {}))
    engine_kv, rank_kv = _kv_lines(acc, mapping, ranks)
    base = {k: v for k, v in eng_all.items() if k in FIGURE_NAMES}
    base_printed = dict(acc.printed.get(None, {}))
    f_eng, p_eng = _kv_part(engine_kv)
    base.update(f_eng)
    base_printed.update(p_eng)
    per_rank: dict[int, Figures] = {}
    for r in ranks:
        figs, printed = dict(base), dict(base_printed)
        f_r, p_r = _kv_part(rank_kv.get(r, {}))
        figs.update(f_r)
        printed.update(p_r)
        figs.update(per_worker.get(r, {}))
        printed.update(per_printed.get(r, {}))
        figs = {k: v for k, v in figs.items() if k in FIGURE_NAMES}
        per_rank[r] = Figures(printed=printed, **figs)
    return per_rank


#: The format name from the hints the rules left: first match wins.
_FORMATS = (
    ("v1-joined", lambda h: "v1-joined" in h),
    ("v1-early", lambda h: "v1-early" in h and "v0-blocks" not in h),
    ("v1", lambda h: "v1" in h),
    ("v0.6.6-weights-take", lambda h: "v0-takes" in h),
    ("v0.6.5-multiline", lambda h: "v0.6.4" in h and "v0.6.4-split" in h),
    ("v0.6.4-oneline", lambda h: "v0.6.4" in h),
    ("v0-blocks", lambda h: bool({"v0-blocks", "weights_gb", "v0"} & h)),
)


def _format(hints: set[str]) -> str:
    return next((name for name, test in _FORMATS if test(hints)), "unknown")


def _outcome(acc: Acc, per_rank: Mapping[int, Figures], figures: Figures) -> tuple[str, str | None, list[str]]:
    errors = list(dict.fromkeys(acc.errors))
    error: str | None = errors[0] if errors else None
    outcome = "failed" if errors or acc.generic_errors else "started"
    if error is None and acc.generic_errors:
        error = acc.generic_errors[0] + " (the reason is not in the log)"
    negative = [r for r, f in per_rank.items()
                if f.available_kv_cache_bytes is not None and f.available_kv_cache_bytes <= 0]
    if negative and not errors:
        f = per_rank[negative[0]]
        reason = (f"available KV cache memory is {f.printed.get('available_kv_cache_bytes', '?')} GiB "
                  f"on rank {negative[0]}, so no KV cache block fits: vLLM stops with "
                  "'No available memory for the cache blocks'")
        error = (error + "; " if error else "") + reason
        outcome = "failed"
    elif figures.num_gpu_blocks == 0 and not errors:
        error = (error + "; " if error else "") + ("num_gpu_blocks is 0: vLLM stops with "
                                                  "'No available memory for the cache blocks'")
        outcome = "failed"
    return outcome, error, errors


#: How far a startup got: the last phase whose line kinds appear.
_PHASES = (
    ("config", {"version", "args", "engine_config", "max_model_len", "chunked_prefill"}),
    ("weights", {"weights"}),
    ("profiling", {"profiling", "profiling_row", "profile_breakdown", "budget", "available_kv",
                   "cuda_graph_estimate"}),
    ("kv_cache", {"kv_tokens", "kv_tokens_concurrency", "concurrency", "blocks"}),
    ("cuda_graphs", {"cuda_graph", "cuda_graph_pool", "memory_summary"}),
)


def _reached(acc: Acc) -> str:
    kinds = {k for (_, _, k, _) in acc.lines}
    reached = "none"
    for label, needs in _PHASES:
        if kinds & needs:
            reached = label
    return reached


def _engine(acc: Acc) -> dict[str, Any]:
    engine: dict[str, Any] = {}
    if acc.engine_config:
        engine["config"] = acc.engine_config
    if acc.non_default_args:
        engine["non_default_args"] = acc.non_default_args
    if acc.namespace_args:
        engine["args"] = acc.namespace_args
    return engine


def freeze(acc: Acc) -> Startup:
    eng_all: dict[str, Any] = dict(acc.eng_weak)
    eng_all.update(acc.eng)
    mapping, ranks = _rank_mapping(acc, eng_all.get("tensor_parallel_size"),
                                   eng_all.get("pipeline_parallel_size") or 1)
    per_rank = _per_rank(acc, eng_all, mapping, ranks)
    figures = per_rank[0 if 0 in per_rank else ranks[0]]
    outcome, error, errors = _outcome(acc, per_rank, figures)
    model = next((acc.model_sources[src] for src in ("engine", "args", "server", "load")
                  if acc.model_sources.get(src)), None)
    lines = tuple(LogLine(n, t, k, None if key is None else mapping.get(key)) for (n, t, k, key) in acc.lines)
    numbers = [n for n, _ in acc.records]
    return Startup(
        vllm_version=acc.version,
        format=_format(acc.hints),
        model=model,
        outcome=outcome,
        error=error,
        ranks=tuple(ranks),
        figures=figures,
        per_rank=per_rank,
        engine=_engine(acc),
        lines=lines,
        preemptions=max(acc.preempt_v0_max, acc.preempt_v0_count) + acc.preempt_v1_sum,
        errors=tuple(errors + acc.generic_errors),
        notes=tuple(dict.fromkeys(acc.notes)),
        reached=_reached(acc),
        first_line=min(numbers) if numbers else 0,
        last_line=max(numbers) if numbers else 0,
        stats=dict(acc.stats),
        kv_lines=tuple(
            {k: v for k, v in e.items() if k in ("kv_cache_tokens", "max_model_len", "max_concurrency", "device")}
            for e in acc.kv_entries
        ),
    )
