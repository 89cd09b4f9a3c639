"""Pool figures for hybrid models at a fixed available-bytes figure, vLLM 0.33.0 defaults.

0.33.0 defaults for a generative hybrid: prefix caching on (ModelConfig.
is_prefix_caching_supported: attn_type "hybrid" -> True), so the recurrent cache mode is
"align" (MambaModelConfig.verify_and_update_config) and a request holds 2 (+ spec, + 1
prefill checkpoint for gated-delta layers on FlashInfer) state pages per recurrent group.
Pool: block bytes = group size x page; num_blocks = avail // block bytes; blocks per request
= sum over groups; concurrency = num_blocks / that; tokens = int(concurrency * L)
(vllm/v1/core/kv_cache_utils.py, 0.33.0).  H100 (SM 9.0), bf16, block size 16 before
alignment.
"""

from __future__ import annotations

import json

import pytest

from vmemplan.laws.kv_pool import PoolContext, plan_pool
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.core.graph import GraphContext
from vmemplan.models.hybrid_mamba import Jamba, NemotronH
from vmemplan.models.hybrid_qwen import Qwen3Next

from tests.conftest import CONFIGS

AVAIL = 40 * 2**30  # 42,949,672,960 bytes


def _adapter(name: str):
    return adapter_for(ModelConfig.from_dict(json.loads((CONFIGS / f"{name}.json").read_text())))


def _plan(adapter, tp: int, max_len: int, *, prefix_caching: bool = True):
    ctx = GraphContext(tensor_parallel_size=tp, max_model_len=max_len, enable_prefix_caching=prefix_caching,
                       sm_major=9)
    block = adapter.resolve_block_size(ctx, user_block_size=None, default=16)
    specs = adapter.kv_cache_specs(ctx)
    return block, plan_pool(specs, AVAIL, PoolContext(max_model_len=max_len, max_num_batched_tokens=8192))


def test_adapters_registered():
    assert isinstance(_adapter("Qwen--Qwen3-Next-80B-A3B-Thinking"), Qwen3Next)
    assert isinstance(_adapter("ai21labs--Jamba-v0.1"), Jamba)
    assert isinstance(_adapter("nvidia--Nemotron-H-56B-Base-8K"), NemotronH)
    a = _adapter("Qwen--Qwen3-Next-80B-A3B-Thinking")
    assert a.prefix_caching_supported() is True
    assert a.layer_kinds().count("attention") == 12 and a.layer_kinds()[3] == "attention"


@pytest.mark.parametrize(
    "tp, block, block_bytes, num_blocks, per_request",
    [
        # tp1: mamba 1,097,728; attn 1 tok 2,048; align = lcm(16, 64 FlashInfer GDN checkpoints) = 64
        #   block 64 * cdiv(1,097,728, 131,072) = 64 * 9 = 576; page 1,179,648; group size 12 (36 >= 1.5*12)
        #   -> 1 full + 3 GDN groups; block bytes 12 * 1,179,648 = 14,155,776
        #   num_blocks = 42,949,672,960 // 14,155,776 = 3,034
        #   per request: cdiv(262,144, 576) = 456 + 3 groups * (2 + 1 checkpoint) = 465
        (1, 576, 14_155_776, 3034, 465),
        # tp8: kv heads 2 -> 1 per rank: attn 1 tok 1,024; mamba 3*1,024*2 + 4*128*128*2 = 137,216
        #   block 64 * cdiv(137,216, 65,536) = 192; page 196,608; block bytes 2,359,296
        #   num_blocks = 42,949,672,960 // 2,359,296 = 18,204; per request cdiv(262,144, 192) = 1,366 + 9 = 1,375
        (8, 192, 2_359_296, 18204, 1375),
    ],
)
def test_qwen3_next_align(tp, block, block_bytes, num_blocks, per_request):
    got_block, p = _plan(_adapter("Qwen--Qwen3-Next-80B-A3B-Thinking"), tp, 262_144)
    assert got_block == block
    assert (p.block_bytes, p.num_blocks, p.blocks_per_request) == (block_bytes, num_blocks, per_request)
    assert p.kv_cache_tokens == num_blocks * 262_144 // per_request
    assert round(p.max_concurrency, 2) == round(num_blocks / per_request, 2)
    assert len(p.groups) == 4


def test_qwen3_next_prefix_caching_off_matches_reference_t5():
    # mode none: block 544 (see test_alignment_reference_vector_t5); 30 GiB:
    # 32,212,254,720 // (12 * 1,114,112) = 2,409; per request 482 + 3 = 485 -> 4.97x, 1,302,071 tokens
    a = _adapter("Qwen--Qwen3-Next-80B-A3B-Thinking")
    ctx = GraphContext(max_model_len=262_144, enable_prefix_caching=False, sm_major=9)
    p = plan_pool(a.kv_cache_specs(ctx), 30 * 2**30, PoolContext(max_model_len=262_144, max_num_batched_tokens=8192))
    assert (p.num_blocks, p.blocks_per_request, p.kv_cache_tokens) == (2409, 485, 1_302_071)
    assert f"{p.max_concurrency:.2f}" == "4.97"


@pytest.mark.parametrize(
    "tp, block_bytes, num_blocks",
    [
        # tp1: mamba 311,296; attn 1 tok 8*256*2 = 4,096; block 16 * cdiv(311,296, 65,536) = 80; page 327,680
        #   4 attention + 28 mamba: group size 4 -> 7 mamba groups + 1; block bytes 4 * 327,680 = 1,310,720
        #   num_blocks = 42,949,672,960 / 1,310,720 = 32,768
        (1, 1_310_720, 32768),
        # tp8: 1 kv head: 512 B/token; mamba 38,912 -> block 16 * cdiv(38,912, 8,192) = 80; page 40,960
        #   block bytes 163,840 -> 262,144 blocks
        (8, 163_840, 262144),
    ],
)
def test_jamba_align(tp, block_bytes, num_blocks):
    block, p = _plan(_adapter("ai21labs--Jamba-v0.1"), tp, 262_144)
    assert block == 80
    # per request: cdiv(262,144, 80) = 3,277 + 7 groups * 2 = 3,291
    assert (p.block_bytes, p.num_blocks, p.blocks_per_request) == (block_bytes, num_blocks, 3291)
    assert p.kv_cache_tokens == num_blocks * 262_144 // 3291
    assert len(p.groups) == 8


@pytest.mark.parametrize(
    "tp, block_bytes, num_blocks, tokens",
    [
        # tp1: mamba 16,900,096 (fp32 ssm); attn 1 tok 8*256*2 = 4,096; block 16*cdiv(16,900,096, 65,536)=4,128
        #   page 16,908,288; 10 attention + 54 mamba -> group size 10, 6 mamba groups + 1
        #   block bytes 169,082,880 -> 254 blocks; per request cdiv(8,192, 4,128) = 2 + 6 * 2 = 14
        #   tokens int(254 / 14 * 8,192) = 148,626
        (1, 169_082_880, 254, 148_626),
        # tp8: mamba 2,112,512; 1 kv head: 512 B/token -> block 16 * cdiv(2,112,512, 8,192) = 4,128
        #   page 2,113,536; block bytes 21,135,360 -> 2,032 blocks; tokens int(2,032 / 14 * 8,192) = 1,189,010
        (8, 21_135_360, 2032, 1_189_010),
    ],
)
def test_nemotron_h_align(tp, block_bytes, num_blocks, tokens):
    block, p = _plan(_adapter("nvidia--Nemotron-H-56B-Base-8K"), tp, 8192)
    assert block == 4128
    assert (p.block_bytes, p.num_blocks, p.blocks_per_request, p.kv_cache_tokens) == (
        block_bytes, num_blocks, 14, tokens)
    assert len(p.groups) == 7


def test_nemotron_h_prefix_caching_off_holds_one_state_page():
    # mode none: per request 2 + 6 * 1 = 8 -> 254 / 8 = 31.75x
    _, p = _plan(_adapter("nvidia--Nemotron-H-56B-Base-8K"), 1, 8192, prefix_caching=False)
    assert p.blocks_per_request == 8 and p.max_concurrency == 31.75


def test_speculative_tokens_add_state_pages_and_conv_columns():
    a = _adapter("nvidia--Nemotron-H-56B-Base-8K")
    ctx = GraphContext(max_model_len=8192, num_speculative_tokens=2, sm_major=9)
    # conv grows by 2 columns: (3 + 2) * 20,480 * 2 = 204,800; + ssm 16,777,216 = 16,982,016
    assert a.mamba_page_bytes(ctx) == 16_982_016
    specs = a.kv_cache_specs(ctx)
    p = plan_pool(specs, AVAIL, PoolContext(max_model_len=8192, max_num_batched_tokens=8192, num_speculative_tokens=2))
    # align: 2 + 2 speculative pages per mamba group: 6 * 4 = 24, + attention 2 -> 26
    assert p.blocks_per_request == 26


def test_gdn_checkpoint_only_on_flashinfer_prefill():
    a = _adapter("Qwen--Qwen3-Next-80B-A3B-Thinking")
    hopper = GraphContext(max_model_len=4096, sm_major=9)
    ampere = GraphContext(max_model_len=4096, sm_major=8)
    assert a.prefill_checkpoint_alignment(hopper, "align") == 64
    assert a.prefill_checkpoint_alignment(ampere, "align") is None
    # Ampere (Triton prefill): align 16 -> block 544 as in mode none, 2 pages per GDN layer
    assert a.resolve_block_size(ampere, user_block_size=None, default=16) == 544
    spec = a.kv_cache_specs(ampere)["model.layers.0.linear_attn"]
    assert spec.num_prefill_checkpoint_blocks == 0 and spec.mamba_cache_mode == "align"


def test_end_to_end_plan_uses_the_aligned_hybrid_groups():
    # H200 is SM 9.0, tp8: block 192 (see test_qwen3_next_align), 3 pages per GDN group in align mode
    from vmemplan.api import plan

    kv = plan("Qwen/Qwen3-Next-80B-A3B-Thinking", gpu="h200", max_model_len=32768,
              tensor_parallel_size=8).to_json()["kv_cache"]
    groups = kv["groups"]
    assert [g["kind"] for g in groups] == ["mamba", "mamba", "mamba", "full_attention"]
    assert {g["block_size"] for g in groups} == {192}
    # full attention: cdiv(32,768, 192) = 171 blocks
    assert [g["blocks_per_request"] for g in groups] == [3, 3, 3, 171]
