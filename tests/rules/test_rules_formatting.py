"""format_gib and rendering the exact log lines each pack records."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.rules import GIB_BYTES, render_log_line
from vmemplan.core.units import format_gib

from ._rules_helpers import pack_for


@pytest.mark.parametrize(
    ("n_bytes", "text"),
    [
        (60_451_337_421, "56.3"),  # 56.3 GiB -> Python round keeps one decimal, not '56.30'
        (16 * GIB_BYTES, "16.0"),
        (59_771_555_679, "55.67"),  # vllm-facts T2: 55.6667 GiB
        (1_072_668_082, "1.0"),  # 0.999 GiB rounds to 1.0
        (0, "0.0"),
        (-2_297_807_503, "-2.14"),  # negative budgets print with a sign
    ],
)
def test_format_gib(n_bytes: int, text: str) -> None:
    assert format_gib(n_bytes) == text


@given(st.integers(min_value=0, max_value=1 << 45))
def test_format_gib_has_at_most_two_decimals(n: int) -> None:
    text = format_gib(n)
    whole, _, frac = text.partition(".")
    assert 1 <= len(frac) <= 2
    assert abs(float(text) - n / GIB_BYTES) <= 0.005 + 1e-9


def test_render_0_33_lines() -> None:
    log = pack_for("0.33.0").log
    assert log.model_loading_value == "format_gib"
    line = render_log_line(log.model_loading, format_gib(15_000_000_000), 2.5)
    assert line == "Model loading took 13.97 GiB memory and 2.500000 seconds"  # 15e9 / 2^30 = 13.9698
    assert log.kv_cache_size is None and log.max_concurrency is None
    joined = render_log_line(log.joined_kv_line, log.joined_kv_line_device_label, "491,520", "131,072", 3.75)
    assert joined == "GPU KV cache size: 491,520 tokens, Maximum concurrency for 131,072 tokens per request: 3.75x"
    assert render_log_line(log.available_kv, format_gib(59_771_555_679)) == "Available KV cache memory: 55.67 GiB"


def test_render_0_11_lines() -> None:
    log = pack_for("0.11.0").log
    assert log.model_loading_value == "gib_float"
    assert render_log_line(log.model_loading, 14.2488, 3.2) == "Model loading took 14.2488 GiB and 3.200000 seconds"
    assert render_log_line(log.available_kv, 56.25) == "Available KV cache memory: 56.25 GiB"
    assert render_log_line(log.kv_cache_size, "1,053,328") == "GPU KV cache size: 1,053,328 tokens"
    assert render_log_line(log.max_concurrency, "8,192", 128.58) == "Maximum concurrency for 8,192 tokens per request: 128.58x"


def test_render_v0_lines() -> None:
    log = pack_for("0.6.4.post1").log
    assert render_log_line(log.gpu_blocks, 1952, 2048) == "# GPU blocks: 1952, # CPU blocks: 2048"
    assert render_log_line(log.max_concurrency, 20000, 1.5616) == "Maximum concurrency for 20000 tokens per request: 1.56x"
    line = render_log_line(log.memory_profiling, 23.58, 15.34, 17.06, 15.35, 0.35, 3.81, 0.9)
    assert line.startswith("Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB")
    assert line.endswith("kv_cache_size=3.81GiB gpu_memory_utilization=0.90")
    log7 = pack_for("0.7.3").log
    assert render_log_line(log7.gpu_blocks, log7.gpu_blocks_device_label, 27690, 2048) == "# cuda blocks: 27690, # CPU blocks: 2048"
    three = render_log_line(pack_for("0.6.5").log.memory_profiling, 5.23, 79.19, 0.9, 71.27, 14.99, 0.4, 1.2, 54.68)
    assert three.splitlines()[1] == "the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB"
    assert pack_for("0.5.5").log.max_concurrency is None
    assert pack_for("0.5.5").log.graph_capturing == "Graph capturing finished in %.0f secs."


def test_render_log_line_without_args_is_literal() -> None:
    assert render_log_line("100% done") == "100% done"


def test_cudagraph_lines() -> None:
    log = pack_for("0.24.0").log
    assert render_log_line(log.cudagraph_estimate, 0.6) == "Estimated CUDA graph memory: 0.60 GiB total"
    enabled = render_log_line(log.cudagraph_estimate_enabled, 0.92, 0.9124, 0.9276)
    assert "--gpu-memory-utilization=0.9200 is equivalent to --gpu-memory-utilization=0.9124" in enabled
    assert pack_for("0.17.0").log.cudagraph_estimate is None
    assert "v0.19" in pack_for("0.18.0").log.cudagraph_estimate_enabled
