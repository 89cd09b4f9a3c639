"""--async-scheduling / --no-async-scheduling: the batches in flight that windowed layers reserve for.

vLLM 0.33.0: vllm/config/vllm.py::VllmConfig.max_concurrent_batches is 2 with async scheduling
on one pipeline stage, else the number of stages; max_in_flight_tokens = that x
max_num_batched_tokens; a sliding-window layer's admission reserve is
cdiv(min(window - 1 + in_flight, max_model_len), block) + 1 blocks
(vllm/v1/kv_cache_interface.py::SlidingWindowSpec.max_admission_blocks_per_request).  Async
scheduling is on by default (VllmConfig.__post_init__), so --async-scheduling plans like the
default and --no-async-scheduling takes one batch.

gpt-oss-20b on one H100: 12 sliding-window layers (window 128) and 12 full-attention layers,
two groups of 12; max_model_len 131,072, max_num_batched_tokens 8,192, block 16.
"""

from __future__ import annotations

import json

from tests.request._cli import run

MODEL = "openai/gpt-oss-20b"


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _size(args, capsys):
    r = run(["size", "--gpu", "h100", "--format", "json", "--", "vllm", "serve", MODEL, *args], capsys)
    assert r.code == 0, r.stderr
    return json.loads(r.stdout)


def _window_blocks(in_flight: int) -> int:
    return cdiv(min(128 - 1 + in_flight, 131_072), 16) + 1


def test_no_async_scheduling_reserves_one_batch(capsys):
    base = _size([], capsys)
    on = _size(["--async-scheduling"], capsys)
    off = _size(["--no-async-scheduling"], capsys)
    full = cdiv(131_072, 16)  # 8,192
    assert _window_blocks(2 * 8192) == 1033 and _window_blocks(8192) == 521

    def per_request(d):
        return {g["kind"]: g["blocks_per_request"] for g in d["kv_cache"]["groups"]}

    assert per_request(base) == per_request(on) == {"sliding_window": 1033, "full_attention": full}
    assert per_request(off) == {"sliding_window": 521, "full_attention": full}
    # the pool itself does not change: the same blocks, more of them per request with async
    blocks = off["kv_cache"]["num_blocks"]
    assert blocks == base["kv_cache"]["num_blocks"] == on["kv_cache"]["num_blocks"]
    assert off["kv_cache"]["max_concurrency"] == blocks / (full + 521)
    assert off["kv_cache"]["tokens"] == int(blocks / (full + 521) * 131_072)
    assert base["kv_cache"]["tokens"] == int(blocks / (full + 1033) * 131_072)
    assert off["vllm_args"]["modelled"] == ["--async-scheduling"]
    assert not any(w.startswith("not modelled:") for w in off["warnings"])


def test_before_0_33_admission_takes_one_batch_either_way(capsys):
    """Before 0.33 the window reserve covered one batch whatever the scheduling (rules packs'
    kv_cache.window_in_flight), so the flag changes nothing there."""
    a = run(["size", MODEL, "--gpu", "h100", "--vllm-version", "0.17.1", "--async-scheduling", "-f", "json"], capsys)
    b = run(["size", MODEL, "--gpu", "h100", "--vllm-version", "0.17.1", "--no-async-scheduling", "-f", "json"],
            capsys)
    assert a.code == b.code == 0, a.stderr + b.stderr
    assert json.loads(a.stdout)["kv_cache"] == json.loads(b.stdout)["kv_cache"]


def test_async_scheduling_with_pipeline_parallelism_warns(capsys):
    r = run(["size", MODEL, "--gpu", "h100", "-pp", "2", "--async-scheduling", "-f", "json"], capsys)
    assert r.code in (0, 3), r.stderr
    assert any("Async scheduling is not supported by the V1 model runner with pipeline parallelism." in w
               for w in json.loads(r.stdout)["warnings"])
