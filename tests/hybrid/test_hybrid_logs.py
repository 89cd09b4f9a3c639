"""The hybrid corpus logs, reproduced from their logged available KV by their release's rules.

The logged "Available KV cache memory" is rounded to 0.01 GiB, so each test picks a byte figure
inside that rounding interval and also checks the interval pins the logged figures.
Neither log excerpt contains the "Setting attention block size to N" line; the block size is
cross-checked instead through the token count and concurrency it produces (a wrong alignment
changes both, shown below).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vmemplan.laws.kv_pool import PoolContext, plan_pool
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.core.graph import GraphContext
from vmemplan.models.hybrid import align_hybrid_block_size
from vmemplan.rules import load_rules_packs, select_pack

from tests.conftest import CONFIGS, ROOT

GIB = 2**30


@pytest.fixture(scope="module")
def packs():
    return load_rules_packs(Path(ROOT / "registry" / "vllm"))


def _adapter(name: str):
    return adapter_for(ModelConfig.from_dict(json.loads((CONFIGS / f"{name}.json").read_text())))


def _pool_ctx(packs, version: str, max_len: int, mnbt: int) -> PoolContext:
    pack, _ = select_pack(packs, version)
    return PoolContext(max_model_len=max_len, max_num_batched_tokens=mnbt,
                       tokens_formula=pack.kv_cache.tokens_formula,
                       hybrid_group_threshold=pack.kv_cache.hybrid_group_threshold)


def test_log_014_qwen36_35b_a3b_fp8kv_v0_24(packs):
    """Log 014: vLLM 0.24.0, RTX 5090, fp8 KV, prefix caching on, L = 131,072:
    6.01 GiB -> 569,878 tokens, 4.35x.

    Config: Qwen3.6-35B-A3B has no corpus config; Qwen3.5-35B-A3B (same architecture name,
    Qwen3_5MoeForConditionalGeneration) stands in.  0.24.0 rules: Qwen3.5 lacks
    SupportsMambaPrefixCaching, so prefix caching gives mode "align" (2 pages per GDN group);
    no prefill-checkpoint alignment yet; kernel alignment 16
    (platforms/interface.py::_align_hybrid_block_size, 0.24.0).
      GDN state: conv 3 * 8,192 * 2 (bf16) = 49,152; ssm 32*128*128*4 (mamba_ssm_dtype fp32)
        = 2,097,152 -> 2,146,304
      attention 1 token fp8: 2 heads * (256 + 256) * 1 = 1,024
      block 16 * cdiv(2,146,304, 16,384) = 16 * 131 = 2,096 (exact fit, no padding)
      10 full + 30 GDN: group size 10 (30 >= 1.5 * 10) -> 4 groups; block bytes 10 * 2,146,304 = 21,463,040
      6.01 GiB = 6,453,212,446 -> 300 blocks (any byte figure printing 6.01 gives 300)
      per request: cdiv(131,072, 2,096) = 63 + 3 * 2 = 69 -> 300 / 69 = 4.3478 -> "4.35x"
      tokens int(4.3478... * 131,072) = 569,878 (0.24.0 concurrency_x_max_model_len)
    """
    a = _adapter("Qwen--Qwen3.5-35B-A3B")
    ctx = GraphContext(max_model_len=131_072, enable_prefix_caching=True, cache_dtype="fp8", sm_major=12,
                       max_num_batched_tokens=8192, max_num_seqs=1)
    assert a.mamba_page_bytes(ctx) == 2_146_304
    assert a.attention_page_per_token_bytes(ctx) == 1024
    al = align_hybrid_block_size(block_size=16, mamba_page_bytes=2_146_304, attention_page_per_token_bytes=1024,
                                 kernel_block_alignment=16, mamba_cache_mode="align")
    assert (al.block_size, al.mamba_page_size_padded) == (2096, None)
    specs = a.kv_cache_specs_for(ctx, block_size=al.block_size, mamba_cache_mode="align", mamba_page_size_padded=None)
    pc = _pool_ctx(packs, "0.24.0", 131_072, 8192)
    assert pc.tokens_formula == "concurrency_x_max_model_len"
    for avail in (int(6.005 * GIB) + 1, int(6.01 * GIB), int(6.015 * GIB) - 1):
        p = plan_pool(specs, avail, pc)
        assert (p.block_bytes, p.num_blocks, p.blocks_per_request) == (21_463_040, 300, 69)
        assert p.kv_cache_tokens == 569_878
        assert f"{p.max_concurrency:.2f}" == "4.35"
    # a 32-token alignment (the old FlashInfer head-256 rule) would give block 2,112: 298 blocks, 4.32x
    wrong = align_hybrid_block_size(block_size=16, mamba_page_bytes=2_146_304, attention_page_per_token_bytes=1024,
                                    kernel_block_alignment=32)
    specs_w = a.kv_cache_specs_for(ctx, block_size=wrong.block_size, mamba_cache_mode="align",
                                   mamba_page_size_padded=wrong.mamba_page_size_padded)
    assert f"{plan_pool(specs_w, int(6.01 * GIB), pc).max_concurrency:.2f}" != "4.35"


def test_log_011_kimi_linear_tp2_v0_11_1(packs):
    """Log 011: vLLM 0.11.1, 2x RTX 3090, TP2, L = 120,000: 2.30 GiB -> 75,840 tokens, 2.48x,
    "Add 1 padding layers, may waste at most 5.00%".

    0.11.1 rules: Kimi-Linear lacks mamba prefix caching, so prefix caching is switched off
    (MambaModelConfig, 0.11.1) and the mamba block is max_model_len (one state page); MLA
    kernel alignment 64 (HybridAttentionMambaModelConfig, 0.11.1, not CUTLASS_MLA).
      KDA state per rank: conv 3 * 6,144 * 2 = 36,864 + recurrent 16*128*128*4 = 1,048,576 -> 1,085,440
      MLA 1 token: (512 + 64) * 2 = 1,152
      block 64 * cdiv(1,085,440, 73,728) = 64 * 15 = 960; page 1,105,920 (mamba padded 1.89%)
      7 MLA + 20 KDA: group size 7 (no threshold before 2025-11-24) -> 3 KDA groups (7, 7, 6 + 1 padding
        layer = 1/20 = 5.00%) + 1 MLA group; block bytes 7 * 1,105,920 = 7,741,440
      per request: cdiv(120,000, 960) = 125 + 3 = 128
      tokens (0.11.1: num_blocks // 4 groups * min block 960): 318 or 319 blocks -> 79 * 960 = 75,840
      concurrency: 318 / 128 = 2.484 -> "2.48x" (319 would print 2.49x), so the available bytes lie in
        [2.295 GiB, 319 * 7,741,440 = 2,469,519,360) -- inside the "2.30" rounding interval.
    """
    a = _adapter("moonshotai--Kimi-Linear-48B-A3B-Instruct")
    ctx = GraphContext(tensor_parallel_size=2, max_model_len=120_000, enable_prefix_caching=False, sm_major=8,
                       max_num_batched_tokens=64_000, max_num_seqs=8)
    assert a.mamba_page_bytes(ctx) == 1_085_440
    assert a.attention_page_per_token_bytes(ctx) == 1152
    al = align_hybrid_block_size(block_size=16, mamba_page_bytes=1_085_440, attention_page_per_token_bytes=1152,
                                 kernel_block_alignment=64)
    assert (al.block_size, al.mamba_page_size_padded) == (960, 1_105_920)
    assert al.log_lines()[1].startswith("Padding mamba page size by 1.89%")
    specs = a.kv_cache_specs_for(ctx, block_size=960, mamba_cache_mode="none",
                                 mamba_page_size_padded=al.mamba_page_size_padded)
    pc = _pool_ctx(packs, "0.11.1", 120_000, 64_000)
    assert pc.tokens_formula == "blocks_div_groups_x_min_block" and pc.hybrid_group_threshold is None
    avail = int(2.2975 * GIB)  # prints "2.30"
    p = plan_pool(specs, avail, pc)
    assert (p.block_bytes, p.num_blocks, p.blocks_per_request, p.kv_cache_tokens) == (7_741_440, 318, 128, 75_840)
    assert f"{p.max_concurrency:.2f}" == "2.48"
    assert sorted(g.padding_layers for g in p.groups) == [0, 0, 0, 1]
    assert int(2.295 * GIB) < 319 * 7_741_440  # the interval is not empty
    # 0.33.0 would align MLA hybrids to 128: 128 * cdiv(1,085,440, 147,456) = 1,024
    assert a.resolve_block_size(GraphContext(tensor_parallel_size=2, max_model_len=120_000, sm_major=8),
                                user_block_size=None, default=16) == 1024
