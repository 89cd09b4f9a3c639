"""The shared KV cache pool as vLLM 0.33.0 groups and sizes it.

Each expected figure is derived by hand below from vllm/v1/core/kv_cache_planning.py
and vllm/v1/core/kv_cache_utils.py (0.33.0):

* block_bytes  = widest group's bytes per block (_get_kv_cache_bytes_per_block)
* num_blocks   = available // block_bytes (get_kv_cache_configs)
* blocks/req   = sum_g cdiv(max_memory_usage_bytes_g, page_g)
                 (get_max_concurrency_for_kv_cache_config)
* concurrency  = num_blocks / blocks/req
* tokens       = int(concurrency * max_model_len) (get_kv_cache_capacity)
* fit check    = block_bytes * blocks/req <= available - block_bytes (null block)

vllm-facts.md §8 was written against an older commit; where 0.33.0 differs the
test says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.laws.kv_pool import (
    PoolContext,
    UngroupableSpecs,
    approximate_gcd,
    group_kv_cache_specs,
    plan_pool,
    plan_pool_multi_worker,
    plan_pool_ungrouped,
)
from vmemplan.laws.kv_specs import compressor_state_block_size, deepseek_v4_page_alignment, deepseek_v4_record_bytes
from vmemplan.core.kv_specs import ChunkedLocalAttentionSpec, CircularBufferSpec, FullAttentionSpec, MambaSpec, MLAAttentionSpec, SlidingWindowMLASpec, SlidingWindowSpec

GiB = 1 << 30
MiB = 1 << 20


def llama8b(num_layers: int = 32, cache_dtype: str = "auto", dtype_bytes: int = 2):
    return {f"model.layers.{i}.self_attn.attn": FullAttentionSpec(16, 8, 128, cache_dtype, dtype_bytes)
            for i in range(num_layers)}


# --- T1: Llama-3.1-8B ---------------------------------------------------------------


def test_t1_llama8b() -> None:
    ctx = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192)
    plan = plan_pool(llama8b(), 60 * GiB, ctx)
    # one uniform group of 32 layers; page 16 * 8 * 256 * 2 = 65,536; block 32 * 65,536 = 2 MiB
    assert len(plan.groups) == 1 and len(plan.groups[0].layer_names) == 32
    assert plan.block_bytes == 2 * MiB
    # 64,424,509,440 // 2,097,152 = 30,720
    assert plan.num_blocks == 30_720
    # cdiv(131,072, 16) = 8,192 blocks a request
    assert plan.blocks_per_request == 8_192
    assert plan.max_concurrency == 3.75  # 30,720 / 8,192
    assert plan.kv_cache_tokens == 491_520  # int(3.75 * 131,072)
    assert plan.bytes_per_token == 131_072  # 2 MiB / 16 tokens
    # needed = 2 MiB * 8,192 = 16 GiB <= 60 GiB - 2 MiB
    assert plan.needed_bytes == 16 * GiB
    assert plan.fits_one_request and plan.estimated_max_model_len is None
    # a 4,096-token request: cdiv(4096, 16) = 256 blocks * 2 MiB = 512 MiB
    assert plan.sequence_variable_bytes(4_096) == 512 * MiB
    assert plan.sequence_fixed_bytes() == 0
    assert plan.request_bytes(4_096) == 512 * MiB
    assert plan.groups_summary() == [
        {"kind": "full_attention", "layers": 32, "block_size": 16, "page_size_bytes": 2 * MiB,
         "blocks_per_request": 8_192}
    ]


def test_t1_unaligned_max_model_len_tells_formulas_apart() -> None:
    ctx = PoolContext(max_model_len=8_001, max_num_batched_tokens=8_192)
    plan = plan_pool(llama8b(), 60 * GiB, ctx)
    # cdiv(8001, 16) = 501 blocks; 30,720 / 501 = 61.317...
    assert plan.blocks_per_request == 501
    assert f"{plan.max_concurrency:.2f}" == "61.32"
    # current: int(30,720 * 8,001 / 501) = int(490,600.24) = 490,600
    assert plan.kv_cache_tokens == 490_600
    old = PoolContext(max_model_len=8_001, max_num_batched_tokens=8_192,
                      tokens_formula="blocks_div_groups_x_min_block")
    # 2025-10 .. 2026-04: 30,720 // 1 group * 16 = 491,520
    assert plan_pool(llama8b(), 60 * GiB, old).kv_cache_tokens == 491_520
    oldest = PoolContext(max_model_len=8_001, max_num_batched_tokens=8_192, tokens_formula="blocks_x_block_size")
    assert plan_pool(llama8b(), 60 * GiB, oldest).kv_cache_tokens == 491_520  # 30,720 * 16


def test_fp8_halves_the_page_and_doubles_blocks() -> None:
    ctx = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192)
    plan = plan_pool(llama8b(cache_dtype="fp8", dtype_bytes=1), 60 * GiB, ctx)
    # page 32,768; block 1 MiB; 60 GiB / 1 MiB = 61,440
    assert plan.num_blocks == 61_440
    assert plan.kv_cache_tokens == 983_040  # int(7.5 * 131,072)


def test_dcp_shards_tokens_in_sequence_bytes() -> None:
    ctx = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192, decode_context_parallel_size=2)
    plan = plan_pool(llama8b(), 60 * GiB, ctx)
    # cdiv(4096, 2) = 2048 tokens -> 128 blocks * 2 MiB
    assert plan.sequence_variable_bytes(4_096) == 256 * MiB
    # blocks/request: cdiv(cdiv(131,072, 2), 16) = 4,096
    assert plan.blocks_per_request == 4_096
    pcp = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192, prefill_context_parallel_size=2)
    assert plan_pool(llama8b(), 60 * GiB, pcp).sequence_variable_bytes(4_096) == 512 * MiB


def test_not_enough_memory_and_estimate() -> None:
    ctx = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192)
    plan = plan_pool(llama8b(), 1 * GiB, ctx)
    # 1 GiB // 2 MiB = 512 blocks, still allocated
    assert plan.num_blocks == 512
    assert not plan.fits_one_request
    # fits(L) <=> 2 MiB * cdiv(L, 16) <= 1 GiB - 2 MiB (null block) <=> cdiv(L, 16) <= 511
    # <=> L <= 511 * 16 = 8,176
    assert plan.estimated_max_model_len == 8_176


@pytest.mark.parametrize("available", [0, -5, 1_000])
def test_no_available_memory(available: int) -> None:
    ctx = PoolContext(max_model_len=4_096, max_num_batched_tokens=8_192)
    plan = plan_pool(llama8b(), available, ctx)
    assert not plan.fits_one_request
    # available <= 2 MiB block: "No available memory for the cache blocks"
    assert any("No available memory" in n for n in plan.notes)
    if available <= 0:
        assert plan.num_blocks == 0


def test_num_gpu_blocks_override() -> None:
    ctx = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192, num_gpu_blocks_override=1_000)
    plan = plan_pool(llama8b(), 60 * GiB, ctx)
    assert plan.num_blocks == 1_000
    # available becomes 1,000 blocks; check 999 blocks < 8,192 needed
    assert not plan.fits_one_request
    # fits(L) <=> cdiv(L, 16) <= 999 <=> L <= 15,984
    assert plan.estimated_max_model_len == 15_984


def test_attention_free() -> None:
    plan = plan_pool({}, 10 * GiB, PoolContext(max_model_len=4_096, max_num_batched_tokens=2_048))
    assert plan.groups == () and plan.num_blocks == 1 and plan.fits_one_request


# --- T3: sliding window + full (gpt-oss-like) ---------------------------------------


def gpt_oss_like():
    specs = {}
    for i in range(36):
        if i % 2 == 0:
            specs[f"layers.{i}.attn"] = SlidingWindowSpec(16, 8, 64, "auto", 2, 128)
        else:
            specs[f"layers.{i}.attn"] = FullAttentionSpec(16, 8, 64, "auto", 2)
    return specs


def test_t3_swa_hybrid_without_async_matches_vllm_facts() -> None:
    ctx = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192, async_scheduling=False)
    plan = plan_pool(gpt_oss_like(), 40 * GiB, ctx)
    # two buckets of 18; 18 < 18 * 1.5 -> group size 18 -> 2 groups
    assert [len(g.layer_names) for g in plan.groups] == [18, 18]
    # page 16 * 8 * 128 * 2 = 32,768; block 18 * 32,768 = 589,824
    assert plan.block_bytes == 589_824
    # 42,949,672,960 // 589,824 = 72,817
    assert plan.num_blocks == 72_817
    # full cdiv(131,072, 16) = 8,192 + window cdiv(min(127 + 8,192, L), 16) + 1 = 520 + 1 = 521
    assert plan.blocks_per_request == 8_713
    assert f"{plan.max_concurrency:.2f}" == "8.36"
    # int(72,817 * 131,072 / 8,713) = int(1,095,405.9) = 1,095,405
    assert plan.kv_cache_tokens == 1_095_405
    # needed 589,824 * 8,713 = 5,139,136,512
    assert plan.needed_bytes == 5_139_136_512
    assert plan.bytes_per_token is None
    old = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192, async_scheduling=False,
                      tokens_formula="blocks_div_groups_x_min_block")
    assert plan_pool(gpt_oss_like(), 40 * GiB, old).kv_cache_tokens == 582_528  # 72,817 // 2 * 16


def test_t3_swa_hybrid_0330_async_default() -> None:
    # 0.33.0 reserves every step in flight: async scheduling -> 2 * 8,192 = 16,384
    # (VllmConfig.max_in_flight_tokens), so the window needs cdiv(127 + 16,384, 16) + 1
    # = 1,032 + 1 = 1,033 blocks, not vllm-facts' 521.
    ctx = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192)
    plan = plan_pool(gpt_oss_like(), 40 * GiB, ctx)
    assert plan.num_blocks == 72_817
    assert plan.blocks_per_request == 8_192 + 1_033
    assert f"{plan.max_concurrency:.2f}" == "7.89"  # 72,817 / 9,225 = 7.893
    # int(72,817 * 131,072 / 9,225) = int(1,034,609.2) = 1,034,609
    assert plan.kv_cache_tokens == 1_034_609
    # steady decode: window ring cdiv(127 + 1, 16) + 1 = 9 blocks * 589,824
    assert plan.sequence_fixed_blocks() == 9
    assert plan.sequence_fixed_bytes() == 9 * 589_824
    assert plan.sequence_admission_blocks() == 1_033


def test_disable_hybrid_manager_promotes_windows() -> None:
    ctx = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192, disable_hybrid_kv_cache_manager=True)
    plan = plan_pool(gpt_oss_like(), 40 * GiB, ctx)
    # every window layer becomes FullAttentionSpec(sliding_window=128): one group of 36
    assert len(plan.groups) == 1 and len(plan.groups[0].layer_names) == 36
    # block 36 * 32,768 = 1,179,648; 42,949,672,960 // 1,179,648 = 36,408
    assert plan.num_blocks == 36_408
    assert plan.blocks_per_request == 8_192
    assert plan.kv_cache_tokens == 582_528  # 36,408 / 8,192 * 131,072 = 36,408 * 16


def test_group_size_threshold_and_strided_padding() -> None:
    # gpt-oss-20b + eagle: 12 window + 13 full layers
    specs = {}
    for i in range(12):
        specs[f"sw.{i}"] = SlidingWindowSpec(16, 8, 64, "auto", 2, 128)
    for i in range(13):
        specs[f"full.{i}"] = FullAttentionSpec(16, 8, 64, "auto", 2)
    ctx = PoolContext(max_model_len=8_192, max_num_batched_tokens=2_048)
    groups = group_kv_cache_specs(specs, ctx)
    # 13 < 12 * 1.5 = 18 -> group size 13 -> (12 sw + 1 padding), (13 full)
    assert [len(g.layer_names) for g in groups] == [12, 13]
    assert [g.padding_layers for g in groups] == [1, 0]
    old = PoolContext(max_model_len=8_192, max_num_batched_tokens=2_048, hybrid_group_threshold=None)
    groups = group_kv_cache_specs(specs, old)
    # group size = min = 12: sw one group; full cdiv(13, 12) = 2 strided groups: [0::2] 7, [1::2] 6
    assert [len(g.layer_names) for g in groups] == [12, 7, 6]
    assert groups[1].layer_names[:2] == ("full.0", "full.2")


def test_page_padding_of_undividable_attention() -> None:
    specs = {"a": FullAttentionSpec(16, 8, 128, "auto", 2), "b": SlidingWindowSpec(16, 8, 96, "auto", 2, 64)}
    # pages 65,536 and 16 * 8 * 192 * 2 = 49,152; 65,536 % 49,152 != 0
    ctx = PoolContext(max_model_len=4_096, max_num_batched_tokens=2_048)
    groups = group_kv_cache_specs(specs, ctx)
    assert {g.page_size_bytes for g in groups} == {65_536}  # 0.33.0 pads the window page
    strict = PoolContext(max_model_len=4_096, max_num_batched_tokens=2_048, pad_undividable_pages=False)
    with pytest.raises(UngroupableSpecs):
        group_kv_cache_specs(specs, strict)


def test_block_size_scaling_for_divisible_pages() -> None:
    specs = {"a": FullAttentionSpec(16, 8, 128, "auto", 2), "b": SlidingWindowSpec(16, 4, 128, "auto", 2, 64)}
    # pages 65,536 and 32,768 -> window block 16 * 2 = 32
    groups = group_kv_cache_specs(specs, PoolContext(max_model_len=4_096, max_num_batched_tokens=2_048))
    assert sorted(g.block_size for g in groups) == [16, 32]


def test_ungroupable_mla_and_fallback_plan() -> None:
    specs = {"mla": MLAAttentionSpec(16, 576, "auto", 2),  # 18,432
             "local": ChunkedLocalAttentionSpec(16, 8, 100, "auto", 2, 1_024)}  # 16 * 8 * 200 * 2 = 51,200
    ctx = PoolContext(max_model_len=4_096, max_num_batched_tokens=2_048, kv_cache_layout="layer_outermost")
    with pytest.raises(UngroupableSpecs):
        plan_pool(specs, 10 * GiB, ctx)
    plan = plan_pool_ungrouped(specs, 10 * GiB, ctx)
    # own pages: mla cdiv(4096, 16) = 256 * 18,432 + local cdiv(min(1024 + 4096, 4096), 16) = 256 * 51,200
    assert plan.needed_bytes == 256 * 18_432 + 256 * 51_200
    assert plan.blocks_per_request == 512
    assert plan.num_blocks * plan.block_bytes <= 10 * GiB
    assert plan.notes


def test_mla_next_to_window_falls_back_to_full_allocation() -> None:
    specs = {"mla": MLAAttentionSpec(16, 576, "auto", 2),  # 18,432
             "swa": SlidingWindowSpec(16, 8, 100, "auto", 2, 128)}  # 51,200
    ctx = PoolContext(max_model_len=4_096, max_num_batched_tokens=2_048, kv_cache_layout="layer_outermost")
    groups = group_kv_cache_specs(specs, ctx)
    # window promoted to full allocation -> one uniform-type group, page 18,432 + 51,200
    assert len(groups) == 1 and groups[0].page_size_bytes == 69_632


# --- T4: DeepSeek MLA -----------------------------------------------------------------


def test_t4_deepseek_v3_bf16() -> None:
    specs = {f"l{i}": MLAAttentionSpec(64, 576, "auto", 2) for i in range(61)}
    plan = plan_pool(specs, 50 * GiB, PoolContext(max_model_len=163_840, max_num_batched_tokens=8_192))
    # 64 * 576 * 2 = 73,728 per layer; 61 layers -> 4,497,408; / 64 tokens = 70,272 B/token
    assert plan.block_bytes == 4_497_408
    assert plan.bytes_per_token == 70_272
    specs16 = {f"l{i}": MLAAttentionSpec(16, 576, "auto", 2) for i in range(61)}
    plan16 = plan_pool(specs16, 50 * GiB, PoolContext(max_model_len=163_840, max_num_batched_tokens=8_192))
    assert plan16.bytes_per_token == 70_272  # 61 * 16 * 576 * 2 / 16


def test_seed_latent_example_137_mib() -> None:
    # 61 layers x 576 one-byte elements (fp8, not ds_mla) = 35,136 B/token; block 16
    specs = {f"l{i}": MLAAttentionSpec(16, 576, "fp8", 1) for i in range(61)}
    plan = plan_pool(specs, 50 * GiB, PoolContext(max_model_len=163_840, max_num_batched_tokens=8_192))
    assert plan.bytes_per_token == 35_136
    # 4,096 tokens = 256 blocks * 61 * 9,216 = 143,917,056 B = 137.25 MiB
    assert plan.sequence_variable_bytes(4_096) == 143_917_056
    assert round(plan.sequence_variable_bytes(4_096) / MiB) == 137


def test_t4_deepseek_v32_fp8_ds_mla_with_indexer() -> None:
    specs = {}
    for i in range(61):
        specs[f"layers.{i}.attn"] = MLAAttentionSpec(64, 576, "fp8_ds_mla", 1)  # 64 * 656 = 41,984
        specs[f"layers.{i}.indexer.k_cache"] = MLAAttentionSpec(64, 132, "uint8", 1)  # 64 * 132 = 8,448
    plan = plan_pool(specs, 50 * GiB, PoolContext(max_model_len=163_840, max_num_batched_tokens=8_192))
    # same type, same block size -> one UniformTypeKVCacheSpecs group; page = sum
    assert len(plan.groups) == 1 and len(plan.groups[0].layer_names) == 122
    # 61 * (41,984 + 8,448) = 3,076,352
    assert plan.block_bytes == 3_076_352
    # 53,687,091,200 // 3,076,352 = 17,451
    assert plan.num_blocks == 17_451
    assert plan.blocks_per_request == 2_560  # cdiv(163,840, 64)
    assert f"{plan.max_concurrency:.2f}" == "6.82"
    assert plan.kv_cache_tokens == 1_116_864  # 17,451 / 2,560 * 163,840 = 17,451 * 64


# --- T5: GDN hybrid (Qwen3-Next-like) -------------------------------------------------


def test_t5_gdn_hybrid() -> None:
    # platform alignment (done by the adapter): attention page/token 2 * (256 + 256) * 2 = 2,048;
    # block = 16 * cdiv(1,097,728, 16 * 2,048) = 16 * 34 = 544; attention page 544 * 2,048 = 1,114,112;
    # mamba page (8192 * 3 * 2 + 32 * 128 * 128 * 2 = 1,097,728) padded to 1,114,112
    specs = {}
    for i in range(48):
        if i % 4 == 3:
            specs[f"layers.{i}.attn"] = FullAttentionSpec(544, 2, 256, "auto", 2)
        else:
            specs[f"layers.{i}.linear_attn"] = MambaSpec(544, 1_097_728, "none", 0, page_size_padded=1_114_112)
    ctx = PoolContext(max_model_len=262_144, max_num_batched_tokens=8_192)
    plan = plan_pool(specs, 30 * GiB, ctx)
    # buckets 36 mamba, 12 full; 36 >= 12 * 1.5 -> group size 12 -> 3 mamba + 1 full groups
    assert sorted(len(g.layer_names) for g in plan.groups) == [12, 12, 12, 12]
    assert plan.block_bytes == 12 * 1_114_112  # 13,369,344
    # 32,212,254,720 // 13,369,344 = 2,409
    assert plan.num_blocks == 2_409
    # cdiv(262,144, 544) = 482 + 1 per mamba group * 3 = 485
    assert plan.blocks_per_request == 485
    assert f"{plan.max_concurrency:.2f}" == "4.97"
    # int(2,409 * 262,144 / 485) = int(1,302,071.9) = 1,302,071
    assert plan.kv_cache_tokens == 1_302_071
    # steady decode: 3 mamba groups x 1 block (mode none)
    assert plan.sequence_fixed_blocks() == 3
    old = PoolContext(max_model_len=262_144, max_num_batched_tokens=8_192,
                      tokens_formula="blocks_div_groups_x_min_block")
    assert plan_pool(specs, 30 * GiB, old).kv_cache_tokens == 327_488  # 2,409 // 4 * 544


# --- DeepSeek-V4.1-Flash on H200 (seed 002) -----------------------------------------

CONFIG = Path(__file__).resolve().parents[2] / "registry" / "models" / "deepseek-ai--DeepSeek-V4.1-Flash.json"  # the bundled copy of the corpus config


def v41_flash_specs(num_speculative_tokens: int = 5):
    """Hand-built from the config and vllm/models/deepseek_v41/{attention,compressor}.py
    plus vllm/v1/attention/backends/mla/sparse_swa.py (0.33.0), SM90, --kv-cache-dtype fp8
    (-> fp8_ds_mla, the V4 584-byte record, 576-byte page alignment):

    * every layer (40 + 3 DSpark draft layers = len(compress_ratios) = 43) has a window
      ring: SlidingWindowMLASpec(block 32, window 128);
    * kv-source layers 2, 8, 14 (ratio 2) and 20 (ratio 1) own the compressed cache
      (MLAAttentionSpec, block_size 64) and the indexer K cache (132-byte records);
    * ratio-2 sources own a compressor ring: CircularBufferSpec(block 8, 1024 fp32)."""
    cfg = json.loads(CONFIG.read_text())["text_config"]
    ratios = cfg["compress_ratios"]
    sources = set(cfg["kv_source_layer_ids"])
    record = deepseek_v4_record_bytes("fp8_ds_mla", sm100=False, role="window")
    align = deepseek_v4_page_alignment(sm100=False)
    specs = {}
    for layer, ratio in enumerate(ratios):
        prefix = f"model.layers.{layer}.attn"
        if layer in sources and layer < cfg["num_hidden_layers"]:
            r = max(ratio, 1)
            specs[prefix] = MLAAttentionSpec(64, 512, "fp8_ds_mla", 1, compress_ratio=r, model_version="deepseek_v4",
                                             alignment=align, state_content_bytes=record)
            specs[f"{prefix}.indexer.k_cache"] = MLAAttentionSpec(64, cfg["index_head_dim"] + 4, "uint8", 1,
                                                                  compress_ratio=r, alignment=align)
            if r > 1:
                specs[f"{prefix}.compressor.state_cache"] = CircularBufferSpec(
                    compressor_state_block_size(num_speculative_tokens), 1, 2 * 512, "float32", 4, head_size_v=0)
        specs[f"{prefix}.swa_cache"] = SlidingWindowMLASpec(32, 512, "fp8_ds_mla", 1, cfg["sliding_window"],
                                                            model_version="deepseek_v4", alignment=align,
                                                            state_content_bytes=record)
    return specs


V41_CTX = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192, num_speculative_tokens=5,
                      num_prefill_lookahead_tokens=1)  # DSpark is eagle-family: lookahead 1 -> 0 extra retained


def test_v41_flash_layer_census() -> None:
    specs = v41_flash_specs()
    assert sum(isinstance(s, SlidingWindowMLASpec) for s in specs.values()) == 43
    assert sum(isinstance(s, MLAAttentionSpec) for s in specs.values()) == 8
    assert sum(isinstance(s, CircularBufferSpec) for s in specs.values()) == 3


def test_v41_flash_pool_block_and_groups() -> None:
    plan = plan_pool(v41_flash_specs(), 60 * GiB, V41_CTX)
    # compressed pages: ratio 2: round_up(32 * 584 = 18,688, 576) = 19,008 (x3);
    #                   ratio 1: round_up(64 * 584 = 37,376, 576) = 37,440
    # indexer pages:    ratio 2: round_up(32 * 132 = 4,224, 576) = 4,608 (x3);
    #                   ratio 1: round_up(64 * 132 = 8,448, 576) = 8,640
    # MLA bundle = 3 * (19,008 + 4,608) + 37,440 + 8,640 = 70,848 + 46,080 = 116,928
    assert plan.block_bytes == 116_928
    # the MLA bucket is unbalanced (3,1,3,1 layers per page size) -> no repeat pattern ->
    # window rings are state buckets: 116,928 // 19,008 = 6 rings per block,
    # cdiv(43, 6) = 8 groups, strided: 43 = 3 * 6 + 5 * 5
    ring_groups = [g for g in plan.groups if g.kind == "sliding_window_mla"]
    assert sorted((len(g.layer_names) for g in ring_groups), reverse=True) == [6, 6, 6, 5, 5, 5, 5, 5]
    # compressor rings: 116,928 // 32,768 = 3 per block -> one group of 3
    assert [len(g.layer_names) for g in plan.groups if g.kind == "circular_buffer"] == [3]
    assert [len(g.layer_names) for g in plan.groups if g.kind == "mla_attention"] == [8]
    assert len(plan.groups) == 10
    assert plan.bytes_per_token is None


def test_v41_flash_steady_decode_fixed_state() -> None:
    plan = plan_pool(v41_flash_specs(), 60 * GiB, V41_CTX)
    # per ring: cdiv(128 - 1 + 1 + 5, 32) + 1 = cdiv(133, 32) + 1 = 5 + 1 = 6 pages
    # 8 ring groups * 6 + 1 compressor-ring block = 49 blocks
    assert plan.sequence_fixed_blocks() == 49
    assert plan.sequence_fixed_bytes() == 49 * 116_928 == 5_729_472  # 5.73 MB
    # own pages: 43 rings * 6 * 19,008 + 3 * 32,768 = 4,904,064 + 98,304 = 5,002,368 (5.00 MB)
    assert plan.own_fixed_bytes() == 5_002_368


def test_v41_flash_admission() -> None:
    plan = plan_pool(v41_flash_specs(), 60 * GiB, V41_CTX)
    # cdiv(min(127 + 2 * 8,192, 131,072), 32) + 1 = cdiv(16,511, 32) + 1 = 516 + 1 = 517
    ring = next(g for g in plan.groups if g.kind == "sliding_window_mla")
    assert ring.pages_per_request(V41_CTX) == 517
    # 8 * 517 + 1 = 4,137 blocks * 116,928 = 483,731,136 B (~484 MB)
    assert plan.sequence_admission_blocks() == 4_137
    assert plan.sequence_admission_bytes() == 483_731_136
    # reported capacity: cdiv(131,072, 64) = 2,048 MLA blocks + 4,137
    assert plan.blocks_per_request == 2_048 + 4_137


def test_v41_flash_growing_bytes_per_token() -> None:
    plan = plan_pool(v41_flash_specs(), 60 * GiB, V41_CTX)
    # records per token on the 4 owners: 3 * 584 / 2 + 584 + 3 * 132 / 2 + 132
    # = 876 + 584 + 198 + 132 = 1,790
    assert plan.own_variable_bytes_per_token() == 1_790
    # pool cost: cdiv(1,000, 64) = 16 blocks * 116,928
    assert plan.sequence_variable_bytes(1_000) == 16 * 116_928


def test_approximate_gcd() -> None:
    # pads for d in 1..6 over (4, 6): d=2 -> 0, d=3 -> 2, d=4 -> 2, d=5 -> 5, d=6 -> 2; ties prefer larger
    assert approximate_gcd([4, 6]) == 2
    assert approximate_gcd([6, 6]) == 6
    assert approximate_gcd([3, 5], lower_bound=9) == 9


# --- pipeline stages --------------------------------------------------------------------


def test_multi_worker_takes_min_blocks() -> None:
    specs = llama8b()
    names = list(specs)
    w0 = {n: specs[n] for n in names[:16]}
    w1 = {n: specs[n] for n in names[16:]}
    ctx = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192)
    plan = plan_pool_multi_worker([(w0, 30 * GiB), (w1, 20 * GiB)], ctx)
    # global group of 32, projected to 16 per stage: 16 * 65,536 = 1 MiB a block
    assert plan.block_bytes == MiB
    # 30 GiB / 1 MiB = 30,720 ; 20 GiB / 1 MiB = 20,480 -> min 20,480
    assert plan.num_blocks == 20_480
    assert plan.max_concurrency == 2.5  # 20,480 / 8,192
    assert plan.kv_cache_tokens == 327_680
    assert plan.fits_one_request


# --- properties -----------------------------------------------------------------------

layer_counts = st.integers(min_value=1, max_value=48)
heads = st.sampled_from([1, 2, 4, 8])
head_sizes = st.sampled_from([64, 96, 128, 256])
block_sizes = st.sampled_from([16, 32, 64])
avail = st.integers(min_value=-(1 << 20), max_value=200 * GiB)
lengths = st.integers(min_value=1, max_value=1 << 20)


def _hybrid(n_full: int, n_swa: int, kv: int, hs: int, bs: int, cache: str = "auto", width: int = 2):
    specs = {f"f{i}": FullAttentionSpec(bs, kv, hs, cache, width) for i in range(n_full)}
    specs.update({f"s{i}": SlidingWindowSpec(bs, kv, hs, cache, width, 512) for i in range(n_swa)})
    return specs


@settings(max_examples=60, deadline=None)
@given(layer_counts, st.integers(0, 24), heads, head_sizes, block_sizes, avail, st.integers(0, 50 * GiB))
def test_more_memory_never_fewer_blocks(n, m, kv, hs, bs, a, extra) -> None:
    ctx = PoolContext(max_model_len=32_768, max_num_batched_tokens=4_096)
    specs = _hybrid(n, m, kv, hs, bs)
    assert plan_pool(specs, a + extra, ctx).num_blocks >= plan_pool(specs, a, ctx).num_blocks


@settings(max_examples=60, deadline=None)
@given(layer_counts, st.integers(0, 24), heads, head_sizes, block_sizes, avail)
def test_blocks_fit_in_available(n, m, kv, hs, bs, a) -> None:
    ctx = PoolContext(max_model_len=32_768, max_num_batched_tokens=4_096)
    plan = plan_pool(_hybrid(n, m, kv, hs, bs), a, ctx)
    assert plan.num_blocks * plan.block_bytes <= max(a, 0)


@settings(max_examples=60, deadline=None)
@given(layer_counts, st.integers(0, 24), heads, head_sizes, block_sizes, lengths, lengths)
def test_longer_context_never_higher_concurrency(n, m, kv, hs, bs, l1, l2) -> None:
    short, long_ = sorted((l1, l2))
    specs = _hybrid(n, m, kv, hs, bs)
    c_short = plan_pool(specs, 80 * GiB, PoolContext(max_model_len=short, max_num_batched_tokens=4_096))
    c_long = plan_pool(specs, 80 * GiB, PoolContext(max_model_len=long_, max_num_batched_tokens=4_096))
    assert c_long.max_concurrency <= c_short.max_concurrency


@settings(max_examples=60, deadline=None)
@given(layer_counts, st.integers(0, 24), heads, head_sizes, block_sizes, st.integers(0, 200 * GiB), lengths)
def test_fp8_never_fewer_tokens_than_auto(n, m, kv, hs, bs, a, length) -> None:
    ctx = PoolContext(max_model_len=length, max_num_batched_tokens=4_096)
    auto = plan_pool(_hybrid(n, m, kv, hs, bs, "auto", 2), a, ctx)
    fp8 = plan_pool(_hybrid(n, m, kv, hs, bs, "fp8", 1), a, ctx)
    assert fp8.kv_cache_tokens >= auto.kv_cache_tokens
