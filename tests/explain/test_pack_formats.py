"""Every log format string the rules packs record (registry/vllm/v*.yaml, ``log:``, read from each
release's wheel) is read by explain-log's line rules: each is rendered with sample values, prefixed
as vLLM's logger prints it, parsed, and its figures compared with the values put in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from vmemplan.explain import parse_log

GIB = 2**30
PACKS = sorted((Path(__file__).resolve().parents[2] / "registry" / "vllm").glob("v*.yaml"))
PREFIX = "INFO 01-02 03:04:05 [x.py:1] "

#: pack keys that describe a format rather than being one
NOT_FORMATS = {"sources", "alternates", "model_loading_value", "available_kv_value", "max_concurrency_len_arg",
               "kv_memory_suggestion_level", "cudagraph_estimate_disabled_level", "joined_kv_line_device_label",
               "gpu_blocks_device_label", "memory_profiling_args", "not_enough_kv_estimate"}


def _gib(x: float) -> int:
    return round(x * GIB)


def _nspec(fmt: str) -> int:
    return len(re.findall(r"%[-+ #0]*\d*(?:\.\d+)?[sdfx]", fmt.replace("%%", "")))


def _suggestion_args(fmt: str, log: dict) -> tuple:
    head = (78.7, 79.19, 0.9, 71.27)
    usage = (15.77, 1.4, 0.55) if "consumed memory" in fmt else (15.27, 1.4, 0.5, 0.55)
    if "%d bytes" in fmt:
        tail = (55_000_000_000, 63_000_000_000, 57_745_000_000)
    else:
        tail = (55_000_000_000, 51.22, 63_000_000_000, 58.67, 53.78)
    return head + usage + tail


def _profiling_args(fmt: str, log: dict) -> tuple:
    if fmt.startswith("Memory profiling results"):
        return (79.19, 15.50, 17.00, 15.60, 0.50, 53.77, 0.90)
    return (5.23, 79.19, 0.90, 71.27, 14.99, 0.40, 1.20, 54.68)


def _profiling_expect(fmt: str) -> dict[str, Any]:
    if fmt.startswith("Memory profiling results"):
        return {"total_memory_bytes": _gib(79.19), "peak_torch_bytes": _gib(17.00), "non_torch_bytes": _gib(0.50),
                "available_kv_cache_bytes": _gib(53.77), "gpu_memory_utilization": 0.90}
    return {"profile_seconds": 5.23, "total_memory_bytes": _gib(79.19), "gpu_memory_utilization": 0.90,
            "requested_memory_bytes": _gib(71.27), "weights_bytes": _gib(14.99), "non_torch_bytes": _gib(0.40),
            "activation_peak_bytes": _gib(1.20), "available_kv_cache_bytes": _gib(54.68)}


def _thousands(log: dict) -> Any:
    return "32,768" if log.get("max_concurrency_len_arg") == "thousands" else 32768


Args = Callable[[str, dict], tuple]
#: pack key -> (sample arguments for the format, the figures they must yield)
SPECS: dict[str, tuple[Args, Callable[[str], dict[str, Any]]]] = {
    "model_loading": (lambda f, log: (15.27, 5.5)[: _nspec(f)], lambda f: {"weights_bytes": _gib(15.27)}),
    "kv_cache_size": (lambda f, log: ("391,632",), lambda f: {"kv_cache_tokens": 391_632}),
    "max_concurrency": (lambda f, log: (_thousands(log), 11.95),
                        lambda f: {"max_model_len": 32768, "max_concurrency": 11.95}),
    "graph_capturing": (lambda f, log: (12, 0.55)[: _nspec(f)],
                        lambda f: {"graph_capture_seconds": 12.0,
                                   **({"cuda_graph_bytes": _gib(0.55)} if _nspec(f) == 2 else {})}),
    "chunked_prefill": (lambda f, log: (8192,), lambda f: {"max_num_batched_tokens": 8192}),
    "available_kv": (lambda f, log: (53.78,), lambda f: {"available_kv_cache_bytes": _gib(53.78)}),
    "kv_memory_suggestion": (_suggestion_args, lambda f: {
        "free_memory_bytes": _gib(78.7), "total_memory_bytes": _gib(79.19), "gpu_memory_utilization": 0.9,
        "requested_memory_bytes": _gib(71.27), "activation_peak_bytes": _gib(1.4),
        "cuda_graph_bytes": _gib(0.55), "kv_cache_memory_to_requested_bytes": 55_000_000_000,
        "kv_cache_memory_to_gpu_bytes": 63_000_000_000}),
    "cudagraph_profiling": (lambda f, log: ("PIECEWISE=51 (largest=512), FULL=35 (largest=256)",), lambda f: {}),
    "cudagraph_estimate": (lambda f, log: (0.61,), lambda f: {"cuda_graph_estimate_bytes": _gib(0.61)}),
    "cudagraph_estimate_enabled": (lambda f, log: (0.9, 0.8923, 0.9077), lambda f: {
        "gpu_memory_utilization": 0.9, "cuda_graph_equivalent_util": 0.8923, "cuda_graph_suggested_util": 0.9077}),
    "cudagraph_estimate_disabled": (lambda f, log: (0.9, 0.9077), lambda f: {
        "gpu_memory_utilization": 0.9, "cuda_graph_suggested_util": 0.9077}),
    "cudagraph_pool": (lambda f, log: (0.55, 0.61, 0.06, 10.9), lambda f: {
        "cuda_graph_bytes": _gib(0.55), "cuda_graph_estimate_bytes": _gib(0.61)}),
    "joined_kv_line": (lambda f, log: (("GPU",) if _nspec(f) == 4 else ()) + ("391,632", "32,768", 11.95),
                       lambda f: {"kv_cache_tokens": 391_632, "max_model_len": 32768, "max_concurrency": 11.95}),
    "not_enough_kv": (lambda f, log: (131072, 16.0, 9.17, log["not_enough_kv_estimate"] % 75136), lambda f: {
        "max_model_len": 131072, "kv_cache_needed_bytes": 16 * GIB, "estimated_max_model_len": 75136}),
    "no_kv_memory": (lambda f, log: (), lambda f: {}),
    "free_memory_short": (lambda f, log: ("cuda:0", "68.76", "79.2", 0.92, "72.87"), lambda f: {}),
    "load_oom": (lambda f, log: (), lambda f: {}),
    "gpu_blocks": (lambda f, log: (("cuda",) if _nspec(f) == 3 else ()) + (7299, 2048),
                   lambda f: {"num_gpu_blocks": 7299, "num_cpu_blocks": 2048}),
    "memory_profiling": (_profiling_args, _profiling_expect),
    "num_blocks_override": (lambda f, log: (28323, 1000), lambda f: {"num_gpu_blocks": 1000}),
}
FAILURES = {"not_enough_kv", "no_kv_memory", "free_memory_short", "load_oom"}


def _formats() -> list[tuple[str, str, str, dict]]:
    out = []
    for path in PACKS:
        log = yaml.safe_load(path.read_text()).get("log") or {}
        for key, fmt in log.items():
            if key in NOT_FORMATS:
                continue
            out.append((path.stem, key, fmt, log))
        for key, alts in (log.get("alternates") or {}).items():
            out.extend((path.stem + "-alt", key, fmt, log) for fmt in alts)
    return out


FORMATS = _formats()


def test_every_pack_format_has_a_spec():
    assert len(FORMATS) > 100
    assert {key for _, key, _, _ in FORMATS} <= set(SPECS)


@pytest.mark.parametrize("pack, key, fmt, log", FORMATS, ids=[f"{p}:{k}" for p, k, _, _ in FORMATS])
def test_pack_format_is_read(pack: str, key: str, fmt: str, log: dict):
    args_of, expect_of = SPECS[key]
    text = PREFIX + (fmt % args_of(fmt, log) if _nspec(fmt) else fmt)
    startups = parse_log(text + "\n")
    assert len(startups) == 1, text
    s = startups[0]
    assert s.lines, f"{pack} {key}: no rule read {text!r}"
    for name, want in expect_of(fmt).items():
        got = getattr(s.figures, name)
        assert got == (pytest.approx(want) if isinstance(want, float) else want), f"{pack} {key} {name}"
    if key in FAILURES:
        assert s.outcome == "failed" and s.error
