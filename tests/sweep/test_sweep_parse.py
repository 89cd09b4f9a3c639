"""--vary parsing and the grid."""

from __future__ import annotations

import pytest

from vmemplan.core.errors import UsageError
from vmemplan.sweep import build_grid, flag_spec, parse_vary


def test_lists_and_aliases():
    v = parse_vary("gpu=l40s,a100,h100")
    assert v.flag.field == "gpu" and v.values == ("l40s", "a100", "h100")
    assert parse_vary("tp=1,2,4").flag.field == "tensor_parallel_size"
    assert parse_vary("--max_model_len=8192,16384").values == (8192, 16384)
    assert parse_vary("kv-cache-dtype=auto,fp8").values == ("auto", "fp8")
    assert parse_vary("enforce-eager=true,false").values == (True, False)


def test_ranges_include_stop():
    assert parse_vary("util=0.8:0.95:0.05").values == (0.8, 0.85, 0.9, 0.95)  # exact decimals, stop included
    assert parse_vary("max-model-len=4096:16384:4096").values == (4096, 8192, 12288, 16384)
    assert parse_vary("max-num-seqs=10:1:-3").values == (10, 7, 4, 1)
    # a stop the steps do not land on is not passed
    assert parse_vary("block-size=16:40:16").values == (16, 32)
    assert parse_vary("kv-cache-memory=8G:32G:8G").values == (8 << 30, 16 << 30, 24 << 30, 32 << 30)
    assert len(parse_vary("util=0.5:0.99:0.0001").values) == 4901  # (0.99 - 0.5) / 0.0001 + 1


@pytest.mark.parametrize("text, match", [
    ("num-gpu-blocks-override=100", "does not take it yet"),
    ("colour=red", "unknown flag"),
    ("gpu=a:b:c", "list of values"),
    ("util=0.9:0.8:0.05", "away from stop"),
    ("util=0.8:0.9:0", "must not be 0"),
    ("max-model-len=1.5,2", "not a valid int"),
    ("max-model-len", "expected FLAG="),
    ("enforce-eager=maybe", "true or false"),
])
def test_bad_vary(text, match):
    with pytest.raises(UsageError, match=match):
        parse_vary(text)


def test_grid_order_first_vary_slowest():
    grid = build_grid([parse_vary("tp=1,2"), parse_vary("util=0.8,0.9,0.95")])
    assert len(grid) == 6
    assert grid[0] == {"tensor_parallel_size": 1, "gpu_memory_utilization": 0.8}
    assert grid[3] == {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.8}
    with pytest.raises(UsageError):
        build_grid([parse_vary("tp=1"), parse_vary("tensor-parallel-size=2")])


def test_flag_spec_names_vllm_fields():
    assert flag_spec("kv-cache-memory").field == "kv_cache_memory_bytes"
    assert flag_spec("util").field == "gpu_memory_utilization"
