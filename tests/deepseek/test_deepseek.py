"""DeepSeek MLA / V3.2 / V4 / V4.1 adapters: figures worked by hand from vLLM 0.33.0."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.core.errors import UsageError
from vmemplan.laws.kv_pool import PoolContext, plan_pool
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for
from vmemplan.core.graph import GraphContext
from vmemplan.models.deepseek import DeepseekMLA, DeepseekV32, select_mla_backend
from vmemplan.models.deepseek_v4 import DeepseekV4, DeepseekV41, mega_attention_serves
from vmemplan.models.deepseek_v4_profile import profile_buffers

REG = Path(__file__).resolve().parents[2] / "registry" / "models"
GIB = 1 << 30


def load(name: str):
    return adapter_for(ModelConfig.from_dict(json.loads((REG / f"{name}.json").read_text())))


V3 = "deepseek-ai--DeepSeek-V3"
V32 = "deepseek-ai--DeepSeek-V3.2"
V41 = "deepseek-ai--DeepSeek-V4.1-Flash"
V4 = "deepseek-ai--DeepSeek-V4-Flash"


def test_architectures_register():
    assert type(load(V3)) is DeepseekMLA
    assert type(load("deepseek-ai--DeepSeek-R1")) is DeepseekMLA
    assert type(load("moonshotai--Kimi-K2-Instruct")) is DeepseekMLA  # DeepseekV3ForCausalLM
    assert type(load("deepseek-ai--DeepSeek-Coder-V2-Lite-Base")) is DeepseekMLA
    assert type(load(V32)) is DeepseekV32
    assert type(load(V4)) is DeepseekV4
    assert type(load(V41)) is DeepseekV41


# ---------------------------------------------------------------------------------- MLA


def _v3_ctx(**kw) -> GraphContext:
    base = dict(tensor_parallel_size=8, cache_dtype="fp8", sm_major=9, max_model_len=163840)
    base.update(kw)
    return GraphContext(**base)


def test_backend_block_sizes():
    a = load(V3)
    # Hopper, bf16: FLASH_ATTN_MLA (MultipleOf(16)) accepts the default 16.
    assert a.resolve_block_size(_v3_ctx(cache_dtype="auto"), user_block_size=None, default=16) == 16
    # Hopper, fp8: FLASH_ATTN_MLA takes only 16-bit caches -> FLASHMLA, kernel [64].
    assert a.resolve_block_size(_v3_ctx(), user_block_size=None, default=16) == 64
    # Blackwell: FLASHINFER_MLA [32, 64] -> 16 unsupported -> smallest, 32.
    assert a.resolve_block_size(_v3_ctx(sm_major=10), user_block_size=None, default=16) == 32
    # Blackwell with --block-size 16: FLASHINFER/TOKENSPEED/CUTLASS/FLASHMLA refuse it,
    # FLASH_ATTN_MLA is Hopper-only, TRITON_MLA (MultipleOf(16)) takes it.
    assert select_mla_backend(sm_major=10, cache_dtype="auto", user_block_size=16, qk_nope_head_dim=128,
                              qk_rope_head_dim=64, v_head_dim=128).name == "TRITON_MLA"
    # Hopper fp8 with --block-size 128: FLASHMLA accepts multiples of 64.
    assert a.resolve_block_size(_v3_ctx(), user_block_size=128, default=16) == 128
    with pytest.raises(UsageError):
        a.resolve_block_size(_v3_ctx(cache_dtype="fp8_e5m2"), user_block_size=None, default=16)


def test_seed_002_latent_fp8_cache_every_tp():
    # 61 layers x 576 one-byte elements = 35,136 bytes a token; FLASHMLA block 64:
    # page 64 x 576 = 36,864 per layer, one group of 61 -> block 2,248,704 bytes.
    # 4,096 tokens = 64 blocks -> 143,917,056 bytes = 137.25 MiB on every rank.
    a = load(V3)
    for tp in (1, 2, 4, 8, 16, 32):
        ctx = _v3_ctx(tensor_parallel_size=tp, block_size=64)
        plan = plan_pool(a.kv_cache_specs(ctx), 50 * GIB, PoolContext(max_model_len=163840, max_num_batched_tokens=8192))
        assert plan.bytes_per_token == 61 * 576 == 35_136
        assert plan.block_bytes == 2_248_704
        assert plan.sequence_variable_bytes(4096) == 143_917_056
        assert round(plan.sequence_variable_bytes(4096) / 2**20) == 137


def test_v3_pool_numbers_tp8_fixed_budget():
    # --kv-cache-memory 50 GiB = 53,687,091,200 B.  get_kv_cache_config_from_groups:
    # num_blocks = 53,687,091,200 // 2,248,704 = 23,874.  A request at 163,840 tokens holds
    # cdiv(163840, 64) = 2,560 blocks; concurrency 23,874 / 2,560 = 9.3258 and
    # "GPU KV cache size" = int(23,874 / 2,560 x 163,840) = 23,874 x 64 = 1,527,936 tokens.
    a = load(V3)
    ctx = _v3_ctx(block_size=64)
    plan = plan_pool(a.kv_cache_specs(ctx), 50 * GIB, PoolContext(max_model_len=163840, max_num_batched_tokens=8192))
    assert 53_687_091_200 // 2_248_704 == 23_874
    assert plan.num_blocks == 23_874
    assert plan.blocks_per_request == 2_560
    assert plan.kv_cache_tokens == 1_527_936
    assert plan.max_concurrency == pytest.approx(9.3258, abs=1e-4)


def test_v3_weights_per_rank_tp8_bf16_elements():
    # DeepSeek-V3, TP 8, no EP, per rank (elements):
    # embed + lm_head: 129,280/8 x 7,168 = 16,160 x 7,168 = 115,834,880 each -> 231,669,760
    # attention per layer: fused_qkv_a (1,536 + 576) x 7,168 = 15,138,816 (replicated);
    #   q_a_ln 1,536; q_b 16 x 192 x 1,536 = 4,718,592; kv_a_ln 512;
    #   kv_b 16 x 256 x 512 = 2,097,152; o_proj 7,168 x 16 x 128 = 14,680,064
    #   -> 36,636,672 x 61 = 2,234,836,992
    # dense MLP (3 layers): 2 x 18,432/8 x 7,168 + 7,168 x 2,304 = 33,030,144 + 16,515,072
    #   = 49,545,216 x 3 = 148,635,648
    # MoE (58 layers): gate 256 x 7,168 = 1,835,008; bias 256; shared 3 x 7,168 x 256
    #   = 5,505,024; experts 256 x 3 x 7,168 x 256 = 1,409,286,144 -> 1,416,626,432 x 58
    #   = 82,164,333,056
    # norms 2 x 7,168 x 61 = 874,496; final 7,168
    expected = 231_669_760 + 2_234_836_992 + 148_635_648 + 82_164_333_056 + 874_496 + 7_168
    a = load(V3)
    tensors = a.weight_tensors(_v3_ctx())
    params = sum(t.elements for t in tensors if t.kind != "buffer")
    assert params == expected == 84_780_357_120
    # at TP 1 the whole checkpoint without MTP: 671,026,419,200 parameters
    assert a.total_params() == 671_026_419_200


def test_v3_fp8_weights_seed_002():
    # DeepSeek-V3's checkpoint is fp8 with 128 x 128 block scales (its quantization_config):
    # seed 002 gives about 78.2 GiB a rank at TP 8; vLLM replicates the q_a/kv_a projections,
    # so the exact figure sits a little above (79.3 GiB, +1.5 %).
    from vmemplan.laws.quant_config import scheme_for

    a = load(V3)
    scheme = scheme_for(a.config.quantization_config, sm_major=9)
    assert scheme is not None
    wb = weight_bytes_per_rank(a.weight_tensors(_v3_ctx()), model_dtype="bfloat16", scheme=scheme)
    assert wb.total_bytes / GIB == pytest.approx(78.2, rel=0.02)  # seed 002


def test_expert_parallel_splits_whole_experts():
    a = load(V3)
    ep = a.weight_tensors(_v3_ctx(enable_expert_parallel=True))
    w13 = next(t for t in ep if t.name.endswith("w13_weight"))
    # 256 experts over 8 EP ranks = 32 whole experts a layer, 58 MoE layers
    assert (w13.rows, w13.cols, w13.count) == (2 * 2048, 7168, 32 * 58)
    tp = a.weight_tensors(_v3_ctx())
    w13 = next(t for t in tp if t.name.endswith("w13_weight"))
    assert (w13.rows, w13.count) == (2 * 2048 // 8, 256 * 58)


def test_mtp_layer_only_while_speculating():
    a = load(V3)
    plain = a.kv_cache_specs(_v3_ctx(block_size=64))
    mtp = a.kv_cache_specs(_v3_ctx(block_size=64, num_speculative_tokens=1, speculative_method="mtp"))
    assert len(plain) == 61 and len(mtp) == 62


@given(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]))
def test_latent_cache_never_shrinks_with_tp(tp):
    a = load(V3)
    specs = a.kv_cache_specs(_v3_ctx(tensor_parallel_size=tp, block_size=64))
    assert {s.page_size_bytes for s in specs.values()} == {64 * 576}


def test_tp_must_divide_heads():
    with pytest.raises(UsageError):
        load(V3).validate_parallel(GraphContext(tensor_parallel_size=3))


# ---------------------------------------------------------------------------------- V3.2


def test_v32_cache_dtype_resolution():
    a = load(V32)
    # auto stays a bf16 latent cache (DeepseekV32ForCausalLM.verify_and_update_config only
    # maps bfloat16 -> auto); fp8 becomes fp8_ds_mla on FLASHMLA_SPARSE (Hopper) ...
    assert a.resolve_cache_dtype(_v3_ctx(cache_dtype="auto"), "auto") == "auto"
    assert a.resolve_cache_dtype(_v3_ctx(), "bfloat16") == "auto"
    assert a.resolve_cache_dtype(_v3_ctx(), "fp8") == "fp8_ds_mla"
    # ... and stays plain fp8 on Blackwell's FLASHINFER_MLA_SPARSE.
    assert a.resolve_cache_dtype(_v3_ctx(sm_major=10), "fp8") == "fp8"
    assert a.resolve_block_size(_v3_ctx(), user_block_size=None, default=16) == 64
    with pytest.raises(UsageError):
        a.resolve_block_size(_v3_ctx(), user_block_size=16, default=16)


def test_v32_pool_fp8_tp8():
    # fp8_ds_mla, block 64: MLA page 64 x 656 = 41,984, indexer 64 x 132 = 8,448, one
    # UniformType group of 122 layers: 61 x 50,432 = 3,076,352 bytes a block.
    # 50 GiB: 53,687,091,200 // 3,076,352 = 17,451 blocks; 2,560 blocks a request;
    # tokens int(17,451/2,560 x 163,840) = 17,451 x 64 = 1,116,864.
    a = load(V32)
    ctx = _v3_ctx(block_size=64, cache_dtype="fp8_ds_mla")
    specs = a.kv_cache_specs(ctx)
    assert len(specs) == 122
    pc = PoolContext(max_model_len=163840, max_num_batched_tokens=8192, kv_cache_layout=a.kv_cache_layout(ctx))
    plan = plan_pool(specs, 50 * GIB, pc)
    assert plan.block_bytes == 3_076_352
    assert plan.num_blocks == 17_451
    assert plan.blocks_per_request == 2_560
    assert plan.kv_cache_tokens == 1_116_864


def test_v32_pool_bf16_tp8_layer_outermost():
    # auto: FLASH_ATTN_MLA_SPARSE, page 64 x 1,152 = 73,728 (whole 1,152-byte rows), indexer
    # 8,448 -> 61 x 82,176 = 5,012,736 under vLLM's default LBNHC layout.
    # 50 GiB // 5,012,736 = 10,710 blocks; tokens 10,710 x 64 = 685,440.
    a = load(V32)
    ctx = _v3_ctx(block_size=64, cache_dtype="auto")
    pc = PoolContext(max_model_len=163840, max_num_batched_tokens=8192, kv_cache_layout=a.kv_cache_layout(ctx))
    plan = plan_pool(a.kv_cache_specs(ctx), 50 * GIB, pc)
    assert plan.block_bytes == 5_012_736
    assert 53_687_091_200 // 5_012_736 == 10_710
    assert plan.num_blocks == 10_710
    assert plan.kv_cache_tokens == 685_440


# ---------------------------------------------------------------------------------- V4.1


def _v41_ctx(spec: int, **kw) -> GraphContext:
    base = dict(tensor_parallel_size=1, block_size=64, cache_dtype="fp8", sm_major=9, max_model_len=131072,
                num_speculative_tokens=spec, speculative_method="dspark" if spec else None)
    base.update(kw)
    return GraphContext(**base)


def _v41_plan(spec: int, avail: int = 40 * GIB, **kw):
    a = load(V41)
    ctx = _v41_ctx(spec, **kw)
    pc = PoolContext(max_model_len=ctx.max_model_len, max_num_batched_tokens=8192, num_speculative_tokens=spec,
                     kv_cache_layout=a.kv_cache_layout(ctx))
    return plan_pool(a.kv_cache_specs(ctx), avail, pc)


def test_v41_records_and_blocks():
    a = load(V41)
    assert a.resolve_cache_dtype(_v41_ctx(5), "fp8") == "fp8_ds_mla"
    assert a.resolve_cache_dtype(_v41_ctx(5, sm_major=10), "auto") == "nvfp4_ds_mla"  # mega attention
    # TP 16 leaves 4 heads a rank: mega attention declines (64 % 16 == 0 but 8 groups % 16 != 0)
    assert not mega_attention_serves(64, 8, 16)
    assert a.resolve_block_size(_v41_ctx(5), user_block_size=None, default=16) == 64
    assert a.resolve_block_size(_v41_ctx(5, sm_major=10), user_block_size=None, default=16) == 128


def test_v41_flash_h200_dspark_seed_002():
    # H200 (SM90), fp8 -> fp8_ds_mla 584-byte records, 576-byte page alignment, block 64.
    # kv sources 2, 8, 14 (ratio 2) and 20 (ratio 1):
    #   compressed r2: 32 x 584 = 18,688 -> 19,008; r1: 64 x 584 = 37,376 -> 37,440
    #   indexer    r2: 32 x 132 =  4,224 ->  4,608; r1: 64 x 132 =  8,448 ->  8,640
    #   block = 3 x (19,008 + 4,608) + 37,440 + 8,640 = 116,928
    # growing bytes/token: 3 x (292 + 66) + 584 + 132 = 1,790
    # windows: 40 + 3 DSpark rings, 32-token blocks, 32 x 584 = 18,688 -> 19,008 a ring;
    #   six fit a block (114,048 <= 116,928): cdiv(43, 6) = 8 groups.
    # steady ring: cdiv(128 - 1 + 1 + 5, 32) + 1 = 6 pages; compressor ring 1 page ->
    #   8 x 6 + 1 = 49 blocks = 5,729,472 bytes; own pages 43 x 6 x 19,008 + 3 x 8 x 1,024 x 4
    #   = 4,904,064 + 98,304 = 5,002,368.
    # admission ring: cdiv(min(127 + 2 x 8,192, L), 32) + 1 = 517 pages; 8 x 517 + 1 = 4,137
    #   blocks x 116,928 = 483,731,136 bytes.
    plan = _v41_plan(5)
    assert plan.block_bytes == 116_928
    assert plan.own_variable_bytes_per_token() == 1_790
    windows = [g for g in plan.groups if g.kind == "sliding_window_mla"]
    assert len(windows) == 8 and max(len(g.layer_names) for g in windows) == 6
    assert sum(len(g.layer_names) for g in windows) == 43
    assert plan.sequence_fixed_blocks() == 49
    assert plan.sequence_fixed_bytes() == 5_729_472
    assert plan.own_fixed_bytes() == 5_002_368
    assert all(g.pages_per_request(plan.ctx) == 517 for g in windows)
    assert plan.sequence_admission_bytes() == 483_731_136
    assert {g.page_size_bytes for g in plan.groups if g.kind == "mla_attention"} == {116_928}


def test_v41_flash_h200_without_speculation():
    # 40 rings -> cdiv(40, 6) = 7 groups; steady ring cdiv(128 - 1 + 1, 32) + 1 = 5 pages;
    # 7 x 5 + 1 = 36 blocks = 4,209,408 bytes.
    plan = _v41_plan(0)
    windows = [g for g in plan.groups if g.kind == "sliding_window_mla"]
    assert len(windows) == 7
    assert plan.sequence_fixed_blocks() == 36
    assert plan.sequence_fixed_bytes() == 36 * 116_928
    assert plan.block_bytes == 116_928


@pytest.mark.parametrize("spec,groups", [(5, 10), (0, 9)])
@pytest.mark.parametrize("tp", [1, 8])
def test_v41_pool_numbers_fixed_budget(spec, groups, tp):
    # 40 GiB = 42,949,672,960 // 116,928 = 367,317 blocks (116,928 x 367,317 = 42,949,642,176) (the specs do not depend on TP).
    # A request at 131,072 tokens: the compressed group cdiv(131,072, 64) = 2,048 blocks,
    # each window group 517, the compressor ring 1 -> 2,048 + 517 x rings + 1.
    plan = _v41_plan(spec, tensor_parallel_size=tp)
    rings = 8 if spec else 7
    per_request = 2_048 + 517 * rings + 1
    assert len(plan.groups) == groups
    assert 42_949_672_960 // 116_928 == 367_317
    assert plan.num_blocks == 367_317
    assert plan.blocks_per_request == per_request
    assert plan.kv_cache_tokens == int(367_317 / per_request * 131_072)


def test_v41_profile_buffers_seed_002():
    # 1M context, 32,768-token budget, DSpark: indexer gather 40 x 1,048,576 x 132 + 1 MiB
    # = 5,537,529,856 beats the attention gather (4 x 1,081,472 x 512 x 2 + 32,768 x 640 x 4
    # + 32,768 x 4 = 4,513,726,464); DSpark lane 4 x 32,896 x 1,024 + 32,768 x 128 x 4
    # + 131,072 = 151,650,304; logits 536,870,912; top-k 2 x 32,768 x 512 x 4 = 134,217,728;
    # candidates 32,768 x 2,048 x 4 = 268,435,456; hidden 32,768 x 4 x 5,120 x 2
    # = 1,342,177,280; rotary 2 x 1,048,576 x 64 x 4 = 536,870,912 -> 8,507,752,448 (7.92 GiB)
    a = load(V41)
    ctx = _v41_ctx(5, max_model_len=1_048_576)
    big, _ = profile_buffers(a, ctx, max_num_batched_tokens=32_768)
    assert big == 8_507_752_448
    assert round(big / GIB, 1) == 7.9
    # 131,072 and 8,192: indexer 5,242,880 x 132 + 1 MiB = 693,108,736; DSpark lane
    # 38,305,792; logits 536,870,912; top-k 33,554,432; candidates 67,108,864; hidden
    # 335,544,320; rotary 536,870,912 -> 2,241,363,968 (2.09 GiB)
    small, prov = profile_buffers(a, _v41_ctx(5), max_num_batched_tokens=8_192)
    assert small == 2_241_363_968
    assert round(small / GIB, 1) == 2.1
    assert "rotary" in prov


def test_v41_buffers_the_weights_hold_are_not_charged_twice():
    # The rotary caches, the backbone's top-k buffer and the candidate-block buffer are registered at
    # model init (in the weights, as vLLM's own fixtures count them), so the profile term leaves them
    # out: 8,507,752,448 - 32,768 x 512 x 4 - 32,768 x 2,048 x 4 - 536,870,912 = 7,635,337,216 (the
    # drafter's top-k buffer stays: the drafter allocates it at run time).
    a = load(V41)
    ctx = _v41_ctx(5, max_model_len=1_048_576)
    extra, prov = a.extra_activation_bytes(ctx, max_num_batched_tokens=32_768, max_num_seqs=256)
    assert extra == 8_507_752_448 - 67_108_864 - 268_435_456 - 536_870_912 == 7_635_337_216
    assert "in the weights" in prov
    names = {t.name for t in a.weight_tensors(replace(ctx, max_num_batched_tokens=32_768))}
    assert {"model.topk_indices_buffer", "model.candidate_block_buffer"} <= names
    assert any(n.startswith("attn.rotary_emb.cos_sin_cache") for n in names)


# ---------------------------------------------------------------------------------- V4


def test_v4_flash_specs_and_pool():
    # V4-Flash (SM90): 43 layers, ratios [0, 0, 4, 128, 4, ..., 4, 0] -> 21 ratio-4 and
    # 20 ratio-128 layers.  Block 256: r4 compressed 64 x 584 = 37,376 -> 37,440;
    # r128 2 x 584 = 1,168 -> 1,728; indexer 64 x 132 = 8,448 -> 8,640; 64-token window
    # rings 37,440; r4 compressor ring 4 x 2,048 x 4 = 32,768 -> 32,832; r128 ring
    # 8 x 1,024 x 4 = 32,768 -> 32,832; indexer compressor ring 4 x 512 x 4 = 8,192 -> 8,640.
    a = load(V4)
    ctx = GraphContext(block_size=256, cache_dtype="auto", sm_major=9, max_model_len=1_048_576)
    assert a.resolve_block_size(ctx, user_block_size=None, default=16) == 256
    specs = a.kv_cache_specs(ctx)
    pages = sorted(s.page_size_bytes for s in specs.values())
    assert pages.count(37_440) == 21 + 43  # compressed r4 + window rings
    assert pages.count(1_728) == 20
    assert pages.count(8_640) == 21 + 21
    assert pages.count(32_832) == 41
    # The compressed + indexer caches fill the widest group: 21 x (37,440 + 8,640) + 20 x 1,728
    # = 967,680 + 34,560 = 1,002,240 bytes a block (block-outermost, alignment 1).
    pc = PoolContext(max_model_len=1_048_576, max_num_batched_tokens=8192, kv_cache_layout="block_outermost")
    plan = plan_pool(specs, 40 * GIB, pc)
    assert plan.block_bytes == 1_002_240
    assert plan.num_blocks == 42_949_672_960 // 1_002_240 == 42_853


def test_v4_rejects_bf16_cache():
    with pytest.raises(UsageError):
        load(V4).resolve_cache_dtype(GraphContext(), "bfloat16")
