"""Windowed / chunked families against vLLM 0.33.0's pool arithmetic, worked by hand.

Every expected figure below is derived in the comments from the 0.33.0 rules:

* page (vllm/v1/kv_cache_interface.py::AttentionSpec.real_page_size_bytes)
  = block_size × kv_heads_per_rank × 2 (K and V) × head_size × dtype bytes;
* per request (get_max_concurrency_for_kv_cache_config): full attention
  ``cdiv(L, block)``; window ``cdiv(min(w - 1 + F, L), block) + 1``; chunked
  ``cdiv(min(c + F, L), block)``, with F = max_in_flight_tokens = 2 × mnbt (async
  scheduling, one stage), summed over the groups;
* groups (kv_cache_utils.py::_get_kv_cache_groups_uniform_page_size): group size = the
  smallest layer-type count unless max < 1.5 × min; each type splits into
  ``cdiv(n, size)`` groups; one pool block costs (layers in the widest group) × page;
* num_blocks = available // block_bytes; concurrency = num_blocks / blocks per request;
  tokens = int(concurrency × L) (get_kv_cache_capacity).
"""

from __future__ import annotations

import pytest

from vmemplan.laws.kv_pool import PoolContext, plan_pool
from vmemplan.core.kv_specs import ChunkedLocalAttentionSpec, FullAttentionSpec, SlidingWindowSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for
from vmemplan.core.graph import GraphContext
from vmemplan.model_config import gemma3_text_defaults

GIB = 1 << 30
AVAIL = 40 * GIB  # 42,949,672,960 B, a fixed available-KV figure for every case


def _adapter(raw: dict):
    return adapter_for(ModelConfig.from_dict(raw))


def _plan(adapter, *, tp: int, max_model_len: int, mnbt: int = 8192, avail: int = AVAIL):
    specs = adapter.kv_cache_specs(GraphContext(tensor_parallel_size=tp, max_model_len=max_model_len))
    ctx = PoolContext(max_model_len=max_model_len, max_num_batched_tokens=mnbt)
    return specs, plan_pool(specs, avail, ctx)


def _check(plan, *, num_blocks: int, block_bytes: int, per_request: int, max_model_len: int, groups: int):
    assert plan.block_bytes == block_bytes
    assert plan.num_blocks == num_blocks
    assert len(plan.groups) == groups
    assert plan.blocks_per_request == per_request
    assert plan.max_concurrency == pytest.approx(num_blocks / per_request)
    assert plan.kv_cache_tokens == int(num_blocks / per_request * max_model_len)


# -- Mistral-7B-v0.1: window 4096 on all 32 layers ------------------------------------


def test_mistral_7b_v01_every_layer_windowed_tp1(config_dict):
    specs, plan = _plan(_adapter(config_dict("mistralai--Mistral-7B-v0.1.json")), tp=1, max_model_len=32768)
    assert len(specs) == 32 and all(type(s) is SlidingWindowSpec and s.sliding_window == 4096 for s in specs.values())
    # page = 16 × 8 × 2 × 128 × 2 = 65,536; one group of 32 layers → block = 2,097,152
    # num_blocks = 42,949,672,960 // 2,097,152 = 20,480
    # per request: cdiv(min(4095 + 16,384, 32,768), 16) + 1 = cdiv(20,479, 16) + 1 = 1,280 + 1 = 1,281
    _check(plan, num_blocks=20_480, block_bytes=2_097_152, per_request=1_281, max_model_len=32768, groups=1)
    # tokens = int(20,480 / 1,281 × 32,768) = int(523,878.72) = 523,878
    assert plan.kv_cache_tokens == 523_878


def test_mistral_7b_v01_tp8(config_dict):
    _, plan = _plan(_adapter(config_dict("mistralai--Mistral-7B-v0.1.json")), tp=8, max_model_len=32768)
    # 8 KV heads / 8 ranks = 1 → page 16 × 1 × 2 × 128 × 2 = 8,192; block = 32 × 8,192 = 262,144
    # num_blocks = 42,949,672,960 // 262,144 = 163,840; per request 1,281 (as at TP 1)
    _check(plan, num_blocks=163_840, block_bytes=262_144, per_request=1_281, max_model_len=32768, groups=1)


def test_mistral_without_window_stays_full_attention(config_dict):
    raw = config_dict("mistralai--Mistral-7B-v0.1.json")
    raw["sliding_window"] = None  # v0.3 / Mistral-Small style
    specs, plan = _plan(_adapter(raw), tp=1, max_model_len=32768)
    assert all(type(s) is FullAttentionSpec for s in specs.values())
    # per request cdiv(32,768, 16) = 2,048; 20,480 blocks → 10.0x, 327,680 tokens
    _check(plan, num_blocks=20_480, block_bytes=2_097_152, per_request=2_048, max_model_len=32768, groups=1)
    assert plan.kv_cache_tokens == 327_680


def test_mistral_zero_window_means_none(config_dict):
    raw = config_dict("mistralai--Mistral-7B-v0.1.json")
    raw["sliding_window"] = 0  # vLLM turns 0 into None (ModelConfig.__post_init__)
    specs = _adapter(raw).kv_cache_specs(GraphContext())
    assert all(type(s) is FullAttentionSpec for s in specs.values())


# -- Gemma-2-9B: 21 window (4096) + 21 global, head 256 -------------------------------


def test_gemma2_9b_tp1(config_dict):
    specs, plan = _plan(_adapter(config_dict("google--gemma-2-9b.json")), tp=1, max_model_len=8192)
    kinds = [type(specs[f"model.layers.{i}.self_attn.attn"]).__name__ for i in range(4)]
    assert kinds == ["SlidingWindowSpec", "FullAttentionSpec"] * 2  # even layers windowed
    # page = 16 × 8 × 2 × 256 × 2 = 131,072; 21 and 21 → group size 21, 2 groups
    # block = 21 × 131,072 = 2,752,512; num_blocks = 42,949,672,960 // 2,752,512 = 15,603
    # per request: full cdiv(8192, 16) = 512; window cdiv(min(4095 + 16,384, 8192), 16) + 1 = 513
    _check(plan, num_blocks=15_603, block_bytes=2_752_512, per_request=1_025, max_model_len=8192, groups=2)
    # tokens = int(15,603 / 1,025 × 8,192) = int(124,702.22) = 124,702
    assert plan.kv_cache_tokens == 124_702


def test_gemma2_9b_tp8(config_dict):
    _, plan = _plan(_adapter(config_dict("google--gemma-2-9b.json")), tp=8, max_model_len=8192)
    # 1 KV head a rank: page 16,384; block 21 × 16,384 = 344,064
    # num_blocks = 42,949,672,960 // 344,064 = 124,830
    _check(plan, num_blocks=124_830, block_bytes=344_064, per_request=1_025, max_model_len=8192, groups=2)


# -- Gemma-3-27B: 52 window (1024) + 10 global -----------------------------------------


def test_gemma3_27b_tp1(config_dict):
    a = _adapter(gemma3_text_defaults(config_dict("google--gemma-3-27b-it.json")))
    specs, plan = _plan(a, tp=1, max_model_len=131072)
    full = [i for i in range(62) if type(specs[f"model.layers.{i}.self_attn.attn"]) is FullAttentionSpec]
    assert full == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59]  # every 6th layer (pattern 6)
    # page = 16 × 16 × 2 × 128 × 2 = 131,072; 52 vs 10: 52 >= 15 → group size 10
    # window: cdiv(52, 10) = 6 groups, full: 1 group → 7 groups; block = 10 × 131,072 = 1,310,720
    # num_blocks = 42,949,672,960 // 1,310,720 = 32,768
    # per request: full 131,072 / 16 = 8,192; window cdiv(1023 + 16,384, 16) + 1 = 1,088 + 1 = 1,089
    #   → 8,192 + 6 × 1,089 = 14,726
    _check(plan, num_blocks=32_768, block_bytes=1_310_720, per_request=14_726, max_model_len=131072, groups=7)
    # tokens = int(32,768 / 14,726 × 131,072) = int(291,658.79) = 291,658
    assert plan.kv_cache_tokens == 291_658


def test_gemma3_27b_tp8(config_dict):
    a = _adapter(gemma3_text_defaults(config_dict("google--gemma-3-27b-it.json")))
    _, plan = _plan(a, tp=8, max_model_len=131072)
    # 16 KV heads / 8 = 2 a rank: page 16 × 2 × 2 × 128 × 2 = 16,384; block 10 × 16,384 = 163,840
    # num_blocks = 42,949,672,960 // 163,840 = 262,144
    _check(plan, num_blocks=262_144, block_bytes=163_840, per_request=14_726, max_model_len=131072, groups=7)


# -- gpt-oss-120b: 18 window (128) + 18 full, head 64 ----------------------------------


def test_gpt_oss_120b_tp1(config_dict):
    specs, plan = _plan(_adapter(config_dict("openai--gpt-oss-120b.json")), tp=1, max_model_len=131072)
    assert type(specs["model.layers.0.attn.attn"]) is SlidingWindowSpec
    assert type(specs["model.layers.1.attn.attn"]) is FullAttentionSpec
    # page = 16 × 8 × 2 × 64 × 2 = 32,768; two groups of 18; block = 18 × 32,768 = 589,824
    # num_blocks = 42,949,672,960 // 589,824 = 72,817
    # per request: full 8,192; window cdiv(127 + 16,384, 16) + 1 = 1,032 + 1 = 1,033 → 9,225
    _check(plan, num_blocks=72_817, block_bytes=589_824, per_request=9_225, max_model_len=131072, groups=2)
    # tokens = int(72,817 / 9,225 × 131,072) = int(1,034,609.20) = 1,034,609
    assert plan.kv_cache_tokens == 1_034_609


def test_gpt_oss_120b_tp8(config_dict):
    _, plan = _plan(_adapter(config_dict("openai--gpt-oss-120b.json")), tp=8, max_model_len=131072)
    # 1 KV head a rank: page 4,096; block 18 × 4,096 = 73,728; num_blocks = 582,542
    _check(plan, num_blocks=582_542, block_bytes=73_728, per_request=9_225, max_model_len=131072, groups=2)


def test_gpt_oss_old_in_flight_rule(config_dict):
    # Seed T3 (vllm-facts.md): before the in-flight rule the window took mnbt alone
    # (async off here): window cdiv(127 + 8192, 16) + 1 = 521, total 8,713;
    # concurrency 72,817 / 8,713 = 8.357x, tokens int(8.357... × 131,072) = 1,095,405.
    a = _adapter(config_dict("openai--gpt-oss-120b.json"))
    specs = a.kv_cache_specs(GraphContext(max_model_len=131072))
    plan = plan_pool(specs, AVAIL, PoolContext(max_model_len=131072, max_num_batched_tokens=8192,
                                               async_scheduling=False))
    assert plan.blocks_per_request == 8_713
    assert plan.kv_cache_tokens == 1_095_405
    assert plan.needed_bytes == 18 * 32_768 * 8_713 == 5_139_136_512


# -- Llama-4-Scout: 36 chunked (8192) + 12 global NoPE ---------------------------------


def test_llama4_scout_tp1(config_dict):
    a = _adapter(config_dict("meta-llama--Llama-4-Scout-17B-16E-Instruct.json"))
    specs, plan = _plan(a, tp=1, max_model_len=131072)
    names = [f"language_model.model.layers.{i}.self_attn.attn" for i in range(48)]
    glob = [i for i, n in enumerate(names) if type(specs[n]) is FullAttentionSpec]
    assert glob == list(range(3, 48, 4))  # no_rope_layers [] → every 4th layer is NoPE / global
    assert all(type(specs[n]) is ChunkedLocalAttentionSpec for i, n in enumerate(names) if i not in glob)
    # page = 16 × 8 × 2 × 128 × 2 = 65,536; 36 vs 12 → group size 12: 3 chunked + 1 full groups
    # block = 12 × 65,536 = 786,432; num_blocks = 42,949,672,960 // 786,432 = 54,613
    # per request: full 8,192; chunked cdiv(min(8192 + 16,384, L), 16) = 1,536 → 8,192 + 3 × 1,536 = 12,800
    _check(plan, num_blocks=54_613, block_bytes=786_432, per_request=12_800, max_model_len=131072, groups=4)
    # tokens = int(54,613 / 12,800 × 131,072) = int(559,237.12) = 559,237
    assert plan.kv_cache_tokens == 559_237


def test_llama4_scout_tp8(config_dict):
    a = _adapter(config_dict("meta-llama--Llama-4-Scout-17B-16E-Instruct.json"))
    _, plan = _plan(a, tp=8, max_model_len=131072)
    # page 8,192; block 12 × 8,192 = 98,304; num_blocks = 436,906
    _check(plan, num_blocks=436_906, block_bytes=98_304, per_request=12_800, max_model_len=131072, groups=4)


def test_llama4_hybrid_manager_off_allocates_full(config_dict):
    # With the manager off (0.13.0's default, or EAGLE in 0.33.0) chunked layers hold every
    # token: one group of 48 full-attention layers, block 48 × 65,536 = 3,145,728;
    # num_blocks = 13,653; per request 8,192 → 1.6666x, tokens int(13,653/8,192 × 131,072) = 218,448
    a = _adapter(config_dict("meta-llama--Llama-4-Scout-17B-16E-Instruct.json"))
    assert a.disables_hybrid_kv_cache_manager(GraphContext(), (0, 13, 0)) is True
    assert a.disables_hybrid_kv_cache_manager(GraphContext()) is False
    assert a.disables_hybrid_kv_cache_manager(GraphContext(speculative_method="eagle3")) is True
    specs = a.kv_cache_specs(GraphContext(max_model_len=131072))
    plan = plan_pool(specs, AVAIL, PoolContext(max_model_len=131072, max_num_batched_tokens=8192,
                                               disable_hybrid_kv_cache_manager=True))
    assert len(plan.groups) == 1 and plan.block_bytes == 3_145_728
    assert plan.num_blocks == 13_653 and plan.blocks_per_request == 8_192
    assert plan.kv_cache_tokens == 218_448


# -- Gemma-4: per-type head sizes, KV sharing ------------------------------------------


def test_gemma4_26b_specs(config_dict):
    a = _adapter(config_dict("google--gemma-4-26B-A4B.json"))
    specs = a.kv_cache_specs(GraphContext())
    sw = specs["model.layers.0.self_attn.attn"]
    full = specs["model.layers.5.self_attn.attn"]
    # window layers: 8 KV heads × 256; global layers: k_eq_v → 2 global KV heads × 512
    assert (type(sw), sw.num_kv_heads, sw.head_size, sw.sliding_window) == (SlidingWindowSpec, 8, 256, 1024)
    assert (type(full), full.num_kv_heads, full.head_size) == (FullAttentionSpec, 2, 512)
    assert sw.page_size_bytes == 16 * 8 * 2 * 256 * 2 == 131_072
    assert full.page_size_bytes == 16 * 2 * 2 * 512 * 2 == 65_536


def test_gemma4_kv_shared_layers_own_no_cache(config_dict):
    raw = config_dict("google--gemma-4-26B-A4B.json")
    raw["text_config"]["num_kv_shared_layers"] = 12  # layers 18..29 read earlier caches
    a = _adapter(raw)
    specs = a.kv_cache_specs(GraphContext())
    assert sorted(int(n.split(".")[2]) for n in specs) == list(range(18))
    # layer 29 (full) reads layer 17 (last full before 18); layer 28 (window) reads 16
    assert a.kv_sharing_target(29) == 17 and a.kv_sharing_target(28) == 16
    assert a.kv_sharing_target(17) is None
