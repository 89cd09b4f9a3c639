"""Handlers for the lines that end a startup badly (refusals, out-of-memory, engine failure) and
for the serving lines after it (preemptions, stat lines); rules in :mod:`vmemplan.explain.line_rules`."""

from __future__ import annotations

import re

from vmemplan.explain.accumulator import Acc
from vmemplan.explain.line_handlers import NUM, Hit, gib_bytes

__all__ = ["to_serve", "v0_max_len", "no_available", "out_of_memory", "engine_failed", "preempted", "stats",
           "context_parallel"]

_TO_SERVE = re.compile(
    r"max seq len \((\d+)\), \((" + NUM + r") GiB KV cache is needed, which is larger than the "
    r"available KV cache memory \((" + NUM + r") GiB\)"
)
_EST_LEN = re.compile(r"estimated maximum model length is (\d+)")
_V0_MAX_LEN = re.compile(
    r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be\s+stored in "
    r"KV cache \((\d+)\)"
)


def _message(text: str, start: int) -> str:
    """The error message from ``start`` up to vLLM's "Try increasing ..." advice."""
    end = text.find("Try increasing", start)
    return text[start:end].strip() if end > 0 else text[start:].strip()


def to_serve(acc: Acc, hit: Hit) -> None:
    text = hit.text
    m = _TO_SERVE.search(text)
    msg = _message(text, text.find("To serve at least one request"))
    if msg not in acc.errors:
        acc.errors.append(msg)
    if m:
        acc.put(None, "max_model_len", int(m.group(1)))
        acc.put(None, "kv_cache_needed_bytes", gib_bytes(m.group(2)), m.group(2))
        acc.put(hit.key, "available_kv_cache_bytes", gib_bytes(m.group(3)), m.group(3), weak=True)
    e = _EST_LEN.search(text)
    if e:
        acc.put(None, "estimated_max_model_len", int(e.group(1)))
    hit.line(acc, "error")


def v0_max_len(acc: Acc, hit: Hit) -> None:
    text = hit.text
    m = _V0_MAX_LEN.search(text)
    start = text.find("The model's max seq len")
    msg = _message(text, start if start >= 0 else text.find("max seq len"))
    if msg not in acc.errors:
        acc.errors.append(msg)
    if m:
        acc.put(None, "max_model_len", int(m.group(1)))
        acc.put(None, "kv_cache_tokens", int(m.group(2)), weak=True)
    hit.line(acc, "error")


def no_available(acc: Acc, hit: Hit) -> None:
    msg = "No available memory for the cache blocks."
    if msg not in acc.errors:
        acc.errors.append(msg)
    hit.line(acc, "error")


_OOM_STARTS = ("CUDA out of memory", "HIP out of memory", "XPU out of memory", "OutOfMemoryError")


def out_of_memory(acc: Acc, hit: Hit) -> None:
    if "toserve" in hit.kinds or "v0maxlen" in hit.kinds:
        return  # the refusal explains itself; its "out of memory" words are not an allocator error
    text = hit.text
    starts = [p for p in (text.find(s) for s in _OOM_STARTS) if p >= 0]
    msg = (text[min(starts):] if starts else text)[:300].strip()
    if not any(e.startswith(msg[:40]) for e in acc.errors):
        acc.errors.append(msg)
    hit.line(acc, "error")


def engine_failed(acc: Acc, hit: Hit) -> None:
    acc.generic_errors.append("EngineCore failed to start" if "EngineCore" in hit.text
                              else "Engine core initialization failed")
    hit.line(acc, "error")


_PREEMPT_TOTAL = re.compile(r"total_num_cumulative_preemption=(\d+)")


def _runtime_line(acc: Acc, hit: Hit) -> None:
    """Record a preemption line; only the first 20 serving lines are kept (a log may hold millions)."""
    if acc.runtime_lines < 20:
        hit.line(acc, "preemption")
    acc.runtime_lines += 1


def preempted(acc: Acc, hit: Hit) -> None:
    acc.preempt_v0_count += 1
    m = _PREEMPT_TOTAL.search(hit.text)
    if m:
        acc.preempt_v0_max = max(acc.preempt_v0_max, int(m.group(1)))
    _runtime_line(acc, hit)


_RUNNING = re.compile(r"Running: (\d+) reqs")
_WAITING = re.compile(r"(?:Waiting|Pending): (\d+) reqs")
_PREEMPTIONS = re.compile(r"Preemptions: (\d+)")
_USAGE = re.compile(r"KV cache usage: (" + NUM + r")%")
#: the stats line's figures whose largest value is kept: regex, stat, number type
_STAT_MAXIMA = (
    (_RUNNING, "max_running_reqs", int),
    (_WAITING, "max_waiting_reqs", int),
    (_USAGE, "max_kv_cache_usage_pct", float),
)


def stats(acc: Acc, hit: Hit) -> None:
    st, text = acc.stats, hit.text
    for rx, name, kind in _STAT_MAXIMA:
        m = rx.search(text)
        if m:
            st[name] = max(st.get(name, kind(0)), kind(m.group(1)))
    st["stats_lines"] = st.get("stats_lines", 0) + 1
    m = _PREEMPTIONS.search(text)
    if m:
        acc.preempt_v1_sum += int(m.group(1))
        _runtime_line(acc, hit)


def context_parallel(acc: Acc, hit: Hit) -> None:
    acc.notes.append("context_parallel")
    hit.line(acc, "kv_tokens")
