"""Windowed corpus logs: logged tokens and concurrency from the logged available KV, by
the rules of each log's release (rules packs in registry/vllm, passed through PoolContext).

Logged "Available KV cache memory" is rounded to 0.01 GiB (about 10.7 MB, dozens of pool
blocks), so each test checks that the pool law, over every block count the rounded figure
allows, reproduces *both* the logged token count and the logged ``%.2f`` concurrency for
one of them, and states which block count that is (worked by hand in the comments).

Release rule not in the packs: before the in-flight rule of 0.33.0 a window layer reserved
``window - 1 + max_num_batched_tokens`` tokens (SlidingWindowSpec.max_memory_usage_bytes in
0.10.1.1 … 0.24.0), so these tests pass ``async_scheduling=False`` (max_concurrent_batches
= 1) for pre-0.33 logs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vmemplan.laws.kv_pool import PoolContext, plan_pool
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for
from vmemplan.core.graph import GraphContext
from vmemplan.rules import load_rules_packs, select_pack
from vmemplan.core.version import parse_version

ROOT = Path(__file__).resolve().parents[2]
GIB = 1 << 30


@pytest.fixture(scope="module")
def packs():
    return load_rules_packs(ROOT / "registry" / "vllm")


def _ctx(packs, version: str, *, max_model_len: int, mnbt: int) -> PoolContext:
    pack, _ = select_pack(packs, version)
    kv = pack.kv_cache
    in_flight_rule = parse_version(version)[:2] >= (0, 33)
    return PoolContext(
        max_model_len=max_model_len,
        max_num_batched_tokens=mnbt,
        async_scheduling=in_flight_rule,
        hybrid_group_threshold=kv.hybrid_group_threshold,
        tokens_formula=kv.tokens_formula,
    )


def _matching_blocks(specs, ctx: PoolContext, logged_gib: float, tokens: int, concurrency: str) -> list[int]:
    """Block counts allowed by the rounded GiB figure that reproduce both logged figures."""
    lo = plan_pool(specs, int((logged_gib - 0.005) * GIB), ctx)
    hi = plan_pool(specs, int((logged_gib + 0.005) * GIB), ctx)
    found = []
    for nb in range(lo.num_blocks, hi.num_blocks + 1):
        p = plan_pool(specs, nb * lo.block_bytes, ctx)
        if p.kv_cache_tokens == tokens and f"{p.max_concurrency:.2f}" == concurrency:
            found.append(nb)
    return found


def _adapter(raw: dict):
    return adapter_for(ModelConfig.from_dict(raw))


def test_log_037_gpt_oss_20b_v013(packs, config_dict):
    # 0.13.0: tokens = num_blocks // groups × min block; group threshold 1.25.
    # 12 window + 12 full, page 16 × 8 × 2 × 64 × 2 = 32,768, two groups of 12 → block 393,216
    # per request (L 8,192, mnbt 2,048): full 512; window cdiv(127 + 2,048, 16) + 1 = 137 → 649
    # 282,624 tokens = (nb // 2) × 16 → nb // 2 = 17,664 → nb ∈ {35,328, 35,329};
    # 35,328 / 649 = 54.43x, 35,329 / 649 = 54.436 → "54.44": nb = 35,329
    # (35,329 × 393,216 B = 12.938 GiB, printed 12.94).
    a = _adapter(config_dict("openai--gpt-oss-20b.json"))
    specs = a.kv_cache_specs(GraphContext(max_model_len=8192))
    ctx = _ctx(packs, "0.13.0", max_model_len=8192, mnbt=2048)
    assert plan_pool(specs, 35_329 * 393_216, ctx).blocks_per_request == 649
    assert _matching_blocks(specs, ctx, 12.94, 282_624, "54.44") == [35_329]


def test_log_023_gemma4_26b_v025(packs, config_dict):
    # 0.25.1 (pack v0.21): tokens = int(concurrency × L); threshold 1.5.
    # window page 16 × 8 × 2 × 256 × 2 = 131,072; global page 16 × 2 × 2 × 512 × 2 = 65,536
    # → global block size scaled ×2 to 32; 25 window vs 5 global: 25 >= 7.5 → group size 5:
    # 5 window groups + 1 global group; block = 5 × 131,072 = 655,360
    # per request (L 262,144, mnbt 2,496): global cdiv(262,144, 32) = 8,192;
    #   window cdiv(1023 + 2,496, 16) + 1 = 221, × 5 = 1,105 → 9,297
    # 3,875,400 = int(nb / 9,297 × 262,144) → nb = 137,442 (137,442 / 9,297 = 14.78x;
    # 137,442 × 655,360 B = 83.887 GiB, printed 83.89)
    raw = config_dict("google--gemma-4-26B-A4B.json")  # the AWQ checkpoint keeps these shapes
    a = _adapter(raw)
    specs = a.kv_cache_specs(GraphContext(max_model_len=262144, model_dtype="float16"))
    ctx = _ctx(packs, "0.25.1", max_model_len=262144, mnbt=2496)
    plan = plan_pool(specs, 137_442 * 655_360, ctx)
    assert (plan.block_bytes, plan.blocks_per_request, len(plan.groups)) == (655_360, 9_297, 6)
    assert _matching_blocks(specs, ctx, 83.89, 3_875_400, "14.78") == [137_442]


# Gemma-4 E4B: the corpus has no config.json for it.  From SOURCES.md (ome's trimmed
# fixture): 42 layers, hidden 2560, 8 heads, 2 KV heads, 18 KV-shared layers, window 512,
# hidden_size_per_layer_input 256.  NOT in the corpus, inferred: head_dim 256 and
# global_head_dim 512 (as the other Gemma-4 configs), the default every-6th-layer-global
# pattern, no k_eq_v.  vocab / FFN sizes do not enter the KV arithmetic and are set to the
# 26B-A4B values only so that the config parses.  The test therefore checks the KV-sharing
# rule (18 layers own no cache), not the E4B dimensions.
_E4B_KV_ONLY = {
    "architectures": ["Gemma4ForConditionalGeneration"],
    "text_config": {
        "model_type": "gemma4_text", "num_hidden_layers": 42, "hidden_size": 2560,
        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "global_head_dim": 512,
        "num_kv_shared_layers": 18, "sliding_window": 512, "hidden_size_per_layer_input": 256,
        "intermediate_size": 2112, "vocab_size": 262144, "max_position_embeddings": 131072,
        "dtype": "bfloat16",
    },
}


def test_log_041_gemma4_e4b_kv_sharing_v019(packs):
    # 0.19.2 (pack v0.18): tokens = nb // groups × min block 16; threshold 1.5.
    # cache-owning layers 0..23: global at 5, 11, 17, 23 (4), window 20.
    # window page 16 × 2 × 2 × 256 × 2 = 32,768 → block ×2 = 32 to match the global page
    # 16 × 2 × 2 × 512 × 2 = 65,536; 20 vs 4 → group size 4: 5 window + 1 global groups,
    # block 4 × 65,536 = 262,144.
    # per request (L 16,384, mnbt 2,048): global 1,024; window cdiv(511 + 2,048, 32) + 1 = 81, × 5 → 1,429
    # 179,632 = (nb // 6) × 16 → nb // 6 = 11,227 → nb ∈ [67,362, 67,367]; all give 47.14x;
    # the rounded 16.45 GiB admits 67,362 … 67,367 (16.4458 … 16.4470 GiB).
    a = _adapter(_E4B_KV_ONLY)
    specs = a.kv_cache_specs(GraphContext(max_model_len=16384))
    assert len(specs) == 24
    ctx = _ctx(packs, "0.19.2rc1.dev206+g95995bbef", max_model_len=16384, mnbt=2048)
    plan = plan_pool(specs, 67_362 * 262_144, ctx)
    assert (plan.block_bytes, plan.blocks_per_request, len(plan.groups)) == (262_144, 1_429, 6)
    assert _matching_blocks(specs, ctx, 16.45, 179_632, "47.14") == list(range(67_362, 67_368))


def test_log_012_gpt_oss_120b_fails_v011(packs, config_dict):
    # 0.11.0, mnbt 1,024, L 131,072, 1.71 GiB: groups of 18 (no threshold), block 589,824;
    # per request 8,192 + cdiv(127 + 1,024, 16) + 1 = 8,192 + 73 = 8,265 →
    # 589,824 × 8,265 = 4,874,895,360 B (4.54 GiB) > 1.71 GiB: startup fails, as logged.
    a = _adapter(config_dict("openai--gpt-oss-120b.json"))
    specs = a.kv_cache_specs(GraphContext(max_model_len=131072))
    plan = plan_pool(specs, int(1.71 * GIB), _ctx(packs, "0.11.0", max_model_len=131072, mnbt=1024))
    assert plan.needed_bytes == 4_874_895_360
    assert not plan.fits_one_request


def test_log_013_gpt_oss_120b_negative_kv(packs, config_dict):
    a = _adapter(config_dict("openai--gpt-oss-120b.json"))
    specs = a.kv_cache_specs(GraphContext(max_model_len=131072))
    plan = plan_pool(specs, int(-2.14 * GIB), _ctx(packs, "0.10.1", max_model_len=131072, mnbt=8192))
    assert not plan.fits_one_request and plan.num_blocks == 0


def test_log_060_gpt_oss_20b_fits_v019(packs, config_dict):
    # 0.19.0, L 131,072, 36.56 GiB; the log excerpt has no token line.  Prediction (mnbt 2,048):
    # block 12 × 32,768 = 393,216; nb = 39,256,001,085 // 393,216 = 99,833;
    # per request 8,192 + cdiv(127 + 2,048, 16) + 1 = 8,329 → 99,833 // 2 × 16 = 798,656 tokens.
    a = _adapter(config_dict("openai--gpt-oss-20b.json"))
    specs = a.kv_cache_specs(GraphContext(max_model_len=131072))
    plan = plan_pool(specs, int(36.56 * GIB), _ctx(packs, "0.19.0", max_model_len=131072, mnbt=2048))
    assert plan.fits_one_request
    assert (plan.num_blocks, plan.blocks_per_request, plan.kv_cache_tokens) == (99_833, 8_329, 798_656)
