"""Handlers for the memory lines of a vLLM startup: weights, the profiler's figures, the KV pool,
CUDA graphs and the memory summary (rules in :mod:`vmemplan.explain.line_rules`)."""

from __future__ import annotations

import re
from typing import Any

from vmemplan.explain.accumulator import Acc
from vmemplan.explain.line_handlers import NUM, Hit, gib_bytes, put_text, to_int

__all__ = [
    "weights", "profiling_results", "profiling_row", "profiling_takes", "weights_take", "kv_capacity",
    "blocks", "num_blocks", "cuda_graph_util", "free_memory", "initial_free",
]

_WEIGHTS = re.compile(
    r"(?:Loading model weights took|Model loading took)\s+(" + NUM + r")\s*(GiB|GB)"
    r"(?:\s+memory)?(?:\s+and\s+(" + NUM + r")\s*seconds)?"
)


def weights(acc: Acc, hit: Hit) -> None:
    m = _WEIGHTS.search(hit.text)
    if not m:
        return
    acc.put(hit.key, "weights_bytes", gib_bytes(m.group(1)), m.group(1))
    if m.group(3):
        acc.put(hit.key, "weights_load_seconds", float(m.group(3)))
    acc.hints.add("weights_gb" if m.group(2) == "GB" else "weights_gib")
    if hit.text.find("Model loading took") >= 0:
        acc.hints.add("v1")
    hit.line(acc, "weights")


# ---- V0 0.6.4 / 0.6.5-dev "Memory profiling results" (worker/worker.py::determine_num_available_blocks)

#: The profiler's names -> (figure, conversion).  ``duration`` is the profile time in seconds.
PROFILER_NAMES: dict[str, tuple[str, str]] = {
    "total_gpu_memory": ("total_memory_bytes", "gib"),
    "initial_memory_usage": ("initial_memory_usage_bytes", "gib"),
    "peak_torch_memory": ("peak_torch_bytes", "gib"),
    "memory_usage_post_profile": ("post_profile_memory_bytes", "gib"),
    "non_torch_memory": ("non_torch_bytes", "gib"),
    "kv_cache_size": ("available_kv_cache_bytes", "gib"),
    "gpu_memory_utilization": ("gpu_memory_utilization", "util"),
    "duration": ("profile_seconds", "float"),
}
_KV_EQ = re.compile(r"(\w+)=(" + NUM + r")\s*(GiB|Gib|GB|seconds)?")


def _profiler_value(acc: Acc, key: Any, name: str, value: str) -> bool:
    """Write one profiler figure; True when it is one of the memory figures (not the duration)."""
    target = PROFILER_NAMES.get(name)
    if target is None:
        return False
    put_text(acc, key, target[0], target[1], value)
    return name != "duration"


def profiling_results(acc: Acc, hit: Hit) -> None:
    got = False
    for m in _KV_EQ.finditer(hit.text):
        got = _profiler_value(acc, hit.key, m.group(1), m.group(2)) or got
    if got or "profres" in hit.kinds:
        acc.hints.add("v0.6.4")
        if "kv_cache_size=" not in hit.text or "total_gpu_memory=" not in hit.text:
            acc.hints.add("v0.6.4-split")
        hit.line(acc, "profiling")
        if "Memory profiling results" in hit.text and not got:
            acc.block = ("profres", hit.key)  # the rows follow, one "name  value" per line


#: One row of the 0.6.5 development builds' block: ``name<spaces or tabs>value[unit]`` (a ``:`` or
#: ``=`` is accepted too), optionally behind a log prefix.  Names may be spelled with spaces.
_ROW = re.compile(
    r"^(?:.*?\]\s)?[ \t]*([A-Za-z][A-Za-z_ ]*?[A-Za-z])(?:[ \t]*[:=][ \t]*|\t+[ \t]*|[ \t]{2,})"
    r"(" + NUM + r")[ \t]*(?:GiB|Gib|GB|seconds|s)?[ \t]*[,.;]?[ \t]*$"
)


_ROW_MAX = 300


def profiling_row(acc: Acc, number: int, text: str) -> bool:
    """One ``name  value`` row of an open "Memory profiling results:" block; False ends the block."""
    m = _ROW.match(text) if len(text) <= _ROW_MAX else None  # a row is short; never scan a huge record
    if m is None:
        return False
    name = re.sub(r"[ \t]+", "_", m.group(1).strip()).lower()
    key = acc.block[1] if acc.block else None
    if _profiler_value(acc, key, name, m.group(2)):
        acc.line(number, text, "profiling_row", key)
    return True


# ---- V1 debug repr and V0 0.6.5+ three-line message

_PROF_TAKES = re.compile(r"Memory profiling takes (" + NUM + r") seconds")
_V1_REPR = re.compile(
    r"Total non KV cache memory: (" + NUM + r")\s*GiB; torch peak memory increase: ("
    + NUM + r")\s*GiB; non-torch forward increase memory: (" + NUM
    + r")\s*GiB; weights memory: (" + NUM + r")\s*GiB"
)


def profiling_takes(acc: Acc, hit: Hit) -> None:
    m = _PROF_TAKES.search(hit.text)
    if m:
        acc.put(hit.key, "profile_seconds", float(m.group(1)))
    m = _V1_REPR.search(hit.text)
    if m:
        acc.put(hit.key, "non_kv_cache_bytes", gib_bytes(m.group(1)), m.group(1))
        acc.put(hit.key, "activation_peak_bytes", gib_bytes(m.group(2)), m.group(2))
        acc.put(hit.key, "non_torch_bytes", gib_bytes(m.group(3)), m.group(3))
        acc.put(hit.key, "weights_bytes", gib_bytes(m.group(4)), m.group(4), weak=True)
        acc.hints.add("v1")
    else:
        acc.hints.add("v0-takes")
    hit.line(acc, "profiling")


_TAKES = (
    (re.compile(r"model weights take (" + NUM + r")\s*GiB"), "weights_bytes"),
    (re.compile(r"non_torch_memory takes (" + NUM + r")\s*GiB"), "non_torch_bytes"),
    (re.compile(r"activation peak memory takes (" + NUM + r")\s*GiB"), "activation_peak_bytes"),
    (re.compile(r"reserved for KV Cache is (" + NUM + r")\s*GiB"), "available_kv_cache_bytes"),
)


def weights_take(acc: Acc, hit: Hit) -> None:
    got = False
    for rx, name in _TAKES:
        m = rx.search(hit.text)
        if m:
            # the 4-decimal "Loading model weights took" figure, when present, is the finer one
            acc.put(hit.key, name, gib_bytes(m.group(1)), m.group(1), weak=name == "weights_bytes")
            got = True
    if got:
        acc.hints.add("v0-takes")
        hit.line(acc, "profile_breakdown")


# ---- the KV pool: tokens, concurrency, blocks

_KV_SIZE = re.compile(r"(\w+(?: \+ host)?) KV cache size: ([\d,]+) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: (" + NUM + r")x")


def _concurrency_entry(acc: Acc, key: Any, entry: dict[str, Any] | None, c: re.Match[str]) -> dict[str, Any]:
    """The KV entry a concurrency line belongs to: this record's, the same process's last one (the
    pre-0.33 two-line form, or the same line printed twice), else a new one."""
    last = acc.kv_entries[-1] if acc.kv_entries else None
    same_proc = last is not None and last.get("key") == key
    if entry is None and same_proc and "max_concurrency" not in last:
        return last
    if (entry is None and same_proc and last.get("max_concurrency_printed") == c.group(2)
            and last.get("max_model_len") == to_int(c.group(1))):
        return last  # the same concurrency printed twice (info_once per process)
    if entry is None:
        entry = {}
        if key is not None:
            entry["key"] = key
        acc.kv_entries.append(entry)
    return entry


def kv_capacity(acc: Acc, hit: Hit) -> None:
    m = _KV_SIZE.search(hit.text)
    c = _CONCURRENCY.search(hit.text)
    entry: dict[str, Any] | None = None
    if m:
        entry = {"kv_cache_tokens": to_int(m.group(2)), "device": m.group(1)}
        if hit.key is not None:
            entry["key"] = hit.key
        acc.kv_entries.append(entry)
        acc.has_kv = True
        acc.hints.add("v1")
    if c:
        entry = _concurrency_entry(acc, hit.key, entry, c)
        entry["max_model_len"] = to_int(c.group(1))
        entry["max_concurrency"] = float(c.group(2))
        entry["max_concurrency_printed"] = c.group(2)
        acc.put(None, "max_model_len", to_int(c.group(1)))
        acc.has_kv = True
    if m and c:
        acc.hints.add("v1-joined")
    if m or c:
        hit.line(acc, "kv_tokens_concurrency" if (m and c) else "kv_tokens" if m else "concurrency")


_BLOCKS = re.compile(r"(?<![\w])([A-Za-z]+) blocks: (\d+)(?:, # CPU blocks: (\d+))?")


def blocks(acc: Acc, hit: Hit) -> None:
    m = _BLOCKS.search(hit.text)
    if m and m.group(1).upper() != "CPU":
        acc.put(None, "num_gpu_blocks", int(m.group(2)))
        if m.group(3) is not None:
            acc.put(None, "num_cpu_blocks", int(m.group(3)))
            acc.hints.add("v0-blocks")
        else:
            acc.hints.add("v1-early")
        hit.line(acc, "blocks")


_OVERRIDE = re.compile(r"Overriding num_gpu_blocks=(\d+) with num_gpu_blocks_override=(\d+)")
_NUM_BLOCKS = re.compile(r"num_gpu_blocks is:?\s*(\d+)")


def num_blocks(acc: Acc, hit: Hit) -> None:
    m = _OVERRIDE.search(hit.text)
    n = m.group(2) if m else None
    if n is None:
        m = _NUM_BLOCKS.search(hit.text)
        n = m.group(1) if m else None
    if n is not None:
        acc.put(None, "num_gpu_blocks", int(n))
        hit.line(acc, "blocks")


# ---- CUDA graphs

_CG_ON = re.compile(
    r"--gpu-memory-utilization=(" + NUM + r") is equivalent to --gpu-memory-utilization=("
    + NUM + r").*?increase --gpu-memory-utilization to (" + NUM + r")"
)
_CG_OFF = re.compile(r"--gpu-memory-utilization from (" + NUM + r") to (" + NUM + r")")


def cuda_graph_util(acc: Acc, hit: Hit) -> None:
    m = _CG_ON.search(hit.text)
    if m:
        acc.put(hit.key, "gpu_memory_utilization", float(m.group(1)), m.group(1))
        acc.put(hit.key, "cuda_graph_equivalent_util", float(m.group(2)))
        acc.put(hit.key, "cuda_graph_suggested_util", float(m.group(3)))
    else:
        m = _CG_OFF.search(hit.text)
        if m:
            acc.put(hit.key, "gpu_memory_utilization", float(m.group(1)), m.group(1))
            acc.put(hit.key, "cuda_graph_suggested_util", float(m.group(2)))
    hit.line(acc, "cuda_graph_util")


# ---- the memory summary (0.10.2+) and the free-memory error

_FREE_HEAD = re.compile(r"Free memory on device(?: \S+)? \((" + NUM + r")/(" + NUM + r") GiB\) on startup")
_FREE_DESIRED = re.compile(r"utilization(?: is)? \((" + NUM + r"), (" + NUM + r") GiB\)")
#: "Actual usage is ..." parts: regex, figure, weak (the dedicated lines print weights and graphs finer)
_SUMMARY_PARTS = (
    (re.compile(r"(" + NUM + r") GiB for weight"), "weights_bytes", True),
    (re.compile(r"(" + NUM + r") GiB for peak activation"), "activation_peak_bytes", False),
    (re.compile(r"(" + NUM + r") GiB for non-torch memory"), "non_torch_bytes", False),
    (re.compile(r"(" + NUM + r") GiB for consumed memory"), "consumed_bytes", False),
    (re.compile(r"(" + NUM + r") GiB for CUDAGraph memory"), "cuda_graph_bytes", True),
)
_KV_MEM_FLAG = re.compile(r"--kv-cache-memory=(-?\d+)`")
_IN_USE_BYTES = re.compile(r"kv cache memory in use is (-?\d+) bytes")
_IN_USE_GIB = re.compile(r"kv cache memory in use is (" + NUM + r") GiB")


def free_memory(acc: Acc, hit: Hit) -> None:
    text, key = hit.text, hit.key
    m = _FREE_HEAD.search(text)
    if m:
        acc.put(key, "free_memory_bytes", gib_bytes(m.group(1)), m.group(1))
        acc.put(key, "total_memory_bytes", gib_bytes(m.group(2)), m.group(2))
    d = _FREE_DESIRED.search(text)
    if d:
        acc.put(key, "gpu_memory_utilization", float(d.group(1)), d.group(1))
        acc.put(key, "requested_memory_bytes", gib_bytes(d.group(2)), d.group(2))
    if "is less than" in text:
        msg = text[text.find("Free memory on device"):]
        acc.errors.append(msg.split(". ")[0].rstrip(".") + ".")
        hit.line(acc, "error")
    else:
        _memory_summary(acc, hit)


def _memory_summary(acc: Acc, hit: Hit) -> None:
    text, key = hit.text, hit.key
    for rx, name, weak in _SUMMARY_PARTS:
        m = rx.search(text)
        if m:
            acc.put(key, name, gib_bytes(m.group(1)), m.group(1), weak=weak)
    kvm = _KV_MEM_FLAG.findall(text)
    if len(kvm) >= 1:
        acc.put(key, "kv_cache_memory_to_requested_bytes", int(kvm[0]))
    if len(kvm) >= 2:
        acc.put(key, "kv_cache_memory_to_gpu_bytes", int(kvm[1]))
    m = _IN_USE_BYTES.search(text)
    if m:
        acc.put(key, "available_kv_cache_bytes", int(m.group(1)), weak=True)
    else:
        m = _IN_USE_GIB.search(text)
        if m:
            acc.put(key, "available_kv_cache_bytes", gib_bytes(m.group(1)), m.group(1), weak=True)
    acc.hints.add("v1")
    hit.line(acc, "memory_summary")


_INIT_OVERRIDE = re.compile(
    r"Initial free memory (" + NUM + r") GiB, reserved (" + NUM + r")\s*GiB memory for KV Cache"
)
_INIT_DEBUG = re.compile(
    r"Initial free memory: (" + NUM + r") GiB; Requested memory: (" + NUM + r") \(util\), (" + NUM + r") GiB"
)


def initial_free(acc: Acc, hit: Hit) -> None:
    key = hit.key
    m = _INIT_OVERRIDE.search(hit.text)
    if m:
        acc.put(key, "free_memory_bytes", gib_bytes(m.group(1)), m.group(1))
        acc.put(key, "kv_cache_memory_override_bytes", gib_bytes(m.group(2)), m.group(2))
        acc.put(key, "available_kv_cache_bytes", gib_bytes(m.group(2)), m.group(2), weak=True)
        hit.line(acc, "kv_override")
        return
    m = _INIT_DEBUG.search(hit.text)
    if m:
        acc.put(key, "free_memory_bytes", gib_bytes(m.group(1)), m.group(1))
        acc.put(key, "gpu_memory_utilization", float(m.group(2)), m.group(2))
        acc.put(key, "requested_memory_bytes", gib_bytes(m.group(3)), m.group(3))
        hit.line(acc, "budget")
