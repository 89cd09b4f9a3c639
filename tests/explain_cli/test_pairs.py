"""Controlled pairs of the corpus: a what-if from one log predicts the other log's figures.

Each expected number below is the OTHER log's printed figure; the tolerance is the issue's 2%.
The arithmetic the what-if should do is written out by hand in each test's comment (GiB = 2**30).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vmemplan.explain import parse_log, read_log_bytes
from vmemplan.explain.model_link import link_model
from vmemplan.explain.whatif import what_if
from vmemplan.registry import load_registry

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
GIB = 2**30


def _startup(prefix: str):
    path = next(LOGS.glob(prefix + "-*.log"))
    return parse_log(read_log_bytes(path.read_bytes()))[0]


def _within(got: float, want: float, pct: float = 2.0) -> bool:
    return abs(got - want) <= abs(want) * pct / 100


@pytest.fixture(scope="module")
def reg():
    return load_registry()


# ---------------------------------------------------------------- 007 / 008: max_model_len 20000 <-> 29000


def test_007_to_008_max_model_len_with_model(reg):
    # vLLM 0.6.4 (one-line profiler), RTX 3090, Llama-3.1-8B, util 0.9, no chunked prefill below 32K,
    # so the profile batch is max(max_model_len, 2048) tokens: 20000 -> 29000.
    # Activation law (dense, 3 hidden + 3 intermediate buffers, 2 B):
    #   9000 tokens x 2 B x (3 x 4096 + 3 x 14336) = 995,328,000 B = 0.927 GiB more activation
    # KV: 3.81 GiB - 0.927 GiB = 2.883 GiB   (008 prints kv_cache_size=2.89GiB)
    # blocks: 2.883 GiB // (2 x 8 kv heads x 128 x 32 layers x 2 B x 16 = 2 MiB) = 1476 -> 23,616 tokens
    #   (008 says 23,648 tokens = 1478 blocks); 23,616 < 29,000, so vLLM refuses to start, as in 008.
    link, _ = link_model("meta-llama/Llama-3.1-8B-Instruct", registry=reg)
    w = what_if(_startup("007"), {"max-model-len": "29000"}, registry=reg, link=link)
    assert _within(w.available_kv_cache_bytes, 2.89 * GIB)
    assert _within(w.kv_cache_tokens, 23648)
    assert w.kv_cache_tokens == 1476 * 16
    assert w.starts is False  # as 008 failed
    assert "activation_peak_bytes" in w.estimated
    assert {"total_memory_bytes", "peak_torch_bytes", "available_kv_cache_bytes"} <= set(w.measured)


def test_007_to_008_without_model_scales_the_logged_activation(reg):
    # No model: activation = peak_torch - weights = 17.06 - 14.9888 = 2.0712 GiB, scaled by 29000/20000
    #   = 3.0032 GiB (+0.932 GiB); KV 3.81 - 0.932 = 2.878 GiB.
    # bytes per block from the log: 3.81 GiB / 1952 blocks = 2,095,777 B; 2.878 GiB // that = 1474 blocks
    #   = 23,584 tokens (008: 23,648, -0.27%).
    w = what_if(_startup("007"), {"max-model-len": "29000"}, registry=load_registry())
    assert _within(w.available_kv_cache_bytes, 2.89 * GIB)
    assert _within(w.kv_cache_tokens, 23648)
    assert w.starts is False
    assert any("grow linearly" in s for s in w.steps)


def test_008_to_007_max_model_len(reg):
    # The other way: 2.89 + 0.927 = 3.817 GiB (007: 3.81); // 2 MiB = 1954 blocks (007: 1952) = 31,264 tokens;
    # concurrency 31,264 / 20,000 = 1.56x (007 prints 1.56x); it starts.
    link, _ = link_model("meta-llama/Llama-3.1-8B-Instruct", registry=reg)
    w = what_if(_startup("008"), {"max-model-len": "20000"}, registry=reg, link=link)
    assert _within(w.available_kv_cache_bytes, 3.81 * GIB)
    assert _within(w.kv_cache_tokens, 1952 * 16)
    assert w.max_concurrency == pytest.approx(1.56, abs=0.01)
    assert w.starts is True


# ---------------------------------------------------------------- 001 / 003: tensor parallel 1 <-> 2


def test_001_to_003_tensor_parallel(reg):
    # vLLM 0.10.1.1 V1, A100 80GB, Qwen2-7B-Instruct, util 0.25.  Qwen/Qwen2.5-7B has the same shapes
    # (hidden 3584, 28 layers, 28/4 heads, intermediate 18944, vocab 152064).
    # weights: 14.2488 GiB x (7.1240 / 14.2164, weights law at tp 2 / tp 1) = 7.140 GiB: -7.109 GiB
    # non-torch: NCCL is initialised inside the budget before 0.11: +342 MiB (cost model) = +0.334 GiB
    # activation: the sampler term (256 x 152064 logits) dominates at both tp: +0
    # KV: 5.01 + 7.109 - 0.334 = 11.785 GiB     (003 prints 12.02 GiB: -1.96%)
    # bytes per block at tp 2: 2 x 2 kv heads x 128 x 28 layers x 2 B x 16 = 458,752 B
    # tokens: 11.785 GiB // 458,752 = 27,582 blocks = 441,312 tokens (003: 450,192, -1.97%)
    link, _ = link_model("Qwen/Qwen2.5-7B", registry=reg)
    w = what_if(_startup("001"), {"tensor-parallel-size": "2"}, registry=reg, link=link)
    assert _within(w.available_kv_cache_bytes, 12.02 * GIB)
    assert _within(w.kv_cache_tokens, 450192)
    assert w.starts is True
    assert {"weights_bytes", "non_torch_bytes"} <= set(w.estimated)


def test_001_to_003_without_model(reg):
    # weights halve: 14.2488 / 2 = 7.1244 (-7.124 GiB); NCCL +0.334 GiB; KV 5.01 + 7.124 - 0.334 = 11.800 GiB
    # bytes per block from the log: 5.01 GiB / 5867 blocks = 916,899 B, halved for tp 2 = 458,450 B
    # 11.800 GiB // 458,450 B = 27,637 blocks = 442,192 tokens (003: 450,192, -1.78%)
    w = what_if(_startup("001"), {"tensor-parallel-size": "2"}, registry=reg)
    assert _within(w.available_kv_cache_bytes, 12.02 * GIB)
    assert _within(w.kv_cache_tokens, 450192)


def test_003_to_001_tensor_parallel_known_miss(reg):
    # The reverse direction misses by ~5%: 12.02 - 7.090 (weights back to tp 1) + 0.334 (no NCCL) = 5.264 GiB
    # against 001's 5.01 GiB.  The law at fault is the NCCL communicator prior (aiconfigurator's 342 MiB for
    # TP 2; registry/cost_model.yaml notes it over-predicts 003 by 0.21 GiB): the error is the same
    # 0.21-0.25 GiB both ways, but 001's pool is 2.4x smaller, so the relative error is 2.4x larger.
    link, _ = link_model("Qwen/Qwen2.5-7B", registry=reg)
    w = what_if(_startup("003"), {"tensor-parallel-size": "1"}, registry=reg, link=link)
    err_gib = (w.available_kv_cache_bytes - 5.01 * GIB) / GIB
    assert 0.15 < err_gib < 0.30  # the communicator prior (0.21 GiB) plus the weights ratio (0.04 GiB)
    assert _within(w.available_kv_cache_bytes, 5.01 * GIB, pct=6)
    assert _within(w.kv_cache_tokens, 93872, pct=6)


# ---------------------------------------------------------------- 012 / 013: gpt-oss-120b, util 0.95 vs default


def test_013_to_012_utilization_different_releases(reg):
    # 013 is vLLM 0.10.1 (default util 0.9, default max_num_batched_tokens 8192 on an H100), 012 is 0.11.0
    # with --gpu-memory-utilization 0.95 --max-num-batched-tokens 1024.  Neither log prints the total, so the
    # H100's CUDA total (85,045,477,376 B = 79.2048 GiB) comes from --gpu h100.  The what-if stays under
    # 013's release rules (0.10), the two flags changed together:
    #   budget: 79.2048 x (0.95 - 0.90) = +3.960 GiB
    #   activation: the sampler term (min(1024 seqs, tokens) x 201,088 vocab logits) dominates both ways:
    #     -0.04 GiB
    #   KV: -2.14 + 3.960 + 0.04 = 1.86 GiB   (012 prints 1.71 GiB: +8.7%, a known miss)
    # The miss is the release change, which the laws price as the cost model's era constants: the
    # non-torch base grows from 0.03 GiB (era v1-nccl-inside) to 0.25 GiB (era v1-0.11), i.e. -0.22 GiB,
    # giving 1.64 GiB (-4%); the rest is the MoE activation / sampler term, which no corpus log calibrates.
    link, _ = link_model("openai/gpt-oss-120b", registry=reg)
    w = what_if(_startup("013"), {"gpu-memory-utilization": "0.95", "max-num-batched-tokens": "1024"},
                registry=reg, link=link, gpu=reg.gpu("h100"), vllm_version="0.10.1")
    assert w.available_kv_cache_bytes == pytest.approx(1.86 * GIB, abs=0.02 * GIB)
    assert _within(w.available_kv_cache_bytes, 1.71 * GIB, pct=10)
    assert w.starts is False  # 012 failed too: 1.71 GiB cannot hold one 131,072-token request
    assert "total_memory_bytes" in w.estimated and "requested_memory_bytes" in w.estimated
    assert any("--gpu h100" in s for s in w.steps)


def test_util_change_needs_the_total(reg):
    # 012 prints only "Available KV cache memory": without --gpu a util change cannot be priced.
    w = what_if(_startup("013"), {"gpu-memory-utilization": "0.95"}, registry=reg)
    assert w.available_kv_cache_bytes is None
    assert "--gpu" in (w.reason or "")
