"""Seed 000's worked example, computed by hand: Llama-3.1-8B on one H100 at util 0.92,
max_model_len 32,768, max_num_seqs 256 (vLLM 0.33.0 rules)."""

from __future__ import annotations

import math

import pytest

from vmemplan.api import plan

GIB = 1 << 30


@pytest.fixture(scope="module")
def p():
    return plan("meta-llama/Llama-3.1-8B", gpu="h100", gpu_memory_utilization=0.92,
                max_model_len=32768, max_num_seqs=256)


def test_exact_figures(p):
    # 8,030,261,248 parameters × 2 bytes + the 131,072 × 128 × 2 B rotary cache + each of the 32
    # attention layers' four fp32 scales, one 512 B allocator block each (attention.py
    # set_default_quant_scales; c10 CUDACachingAllocator rounds small blocks to 512 B)
    assert p.parameters == 8_030_261_248
    assert p.per_rank.weights_bytes == 8_030_261_248 * 2 + 131_072 * 128 * 2 + 32 * 4 * 512
    # KV per token: 2 (K, V) × 8 KV heads × 128 × 2 B × 32 layers = 131,072 B
    assert p.kv_cache.bytes_per_token == 131_072
    # one pool block: 16 tokens × 131,072 B = 2 MiB across all layers
    assert p.kv_cache.page_size_bytes == 2 * 1024 * 1024
    # the budget: ceil(85,045,477,376 × 0.92) (registry CUDA total for an H100 SXM)
    assert p.per_rank.requested_memory_bytes == math.ceil(85_045_477_376 * 0.92)


def test_pool_arithmetic(p):
    avail = p.per_rank.available_kv_cache_bytes
    # num_blocks = avail // page_per_layer // layers = avail // 65,536 // 32
    assert p.kv_cache.num_blocks == avail // 65_536 // 32
    # concurrency = blocks ÷ blocks per 32,768-token request (2,048); tokens = int(conc × L)
    assert p.kv_cache.max_concurrency == pytest.approx(p.kv_cache.num_blocks / 2048)
    assert p.kv_cache.tokens == int(p.kv_cache.num_blocks / 2048 * 32768)
    # the budget is conserved: available = requested − weights − activation − non-torch − graphs
    r = p.per_rank
    assert avail == (r.requested_memory_bytes - r.weights_bytes - r.activation_peak_bytes
                     - r.non_torch_bytes - r.cuda_graph_bytes)


def test_close_to_the_seed(p):
    # The seed's illustration: ~53–54 GiB of pool, ~442 k tokens, ~13.5× at 32 K.  Our
    # estimates of the measured terms differ; the pool must land within a few GiB.
    assert 50 * GIB < p.per_rank.available_kv_cache_bytes < 60 * GIB
    assert 400_000 < p.kv_cache.tokens < 480_000
    assert p.verdict.starts


def test_log_lines_are_0_33_format(p):
    from vmemplan.render.vllm_log import log_lines

    lines = log_lines(p)
    assert lines[0].startswith("Model loading took 14.99 GiB memory")
    joined = [ln for ln in lines if ln.startswith("GPU KV cache size:")]
    assert joined and f"{p.kv_cache.tokens:,} tokens, Maximum concurrency for 32,768 tokens per request: " in joined[0]
