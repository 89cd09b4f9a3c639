"""Recurrent-state laws and the attention/mamba page alignment (vLLM 0.33.0).

Expected numbers are worked by hand in the comments from
vllm/model_executor/layers/mamba/mamba_utils.py and vllm/platforms/interface.py (0.33.0).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.core.errors import UsageError
from vmemplan.models.hybrid import (
    align_hybrid_block_size,
    default_mamba_cache_mode,
    gdn_state,
    kda_state,
    kda_state_dtypes,
    mamba1_state,
    mamba2_state,
    state_dtypes,
    state_page_bytes,
)


def test_state_dtypes_follow_cache_flags_not_kv_dtype():
    # "auto" conv = model dtype; "auto" ssm = conv dtype
    assert state_dtypes("bfloat16") == ("bfloat16", "bfloat16")
    assert state_dtypes("bfloat16", "auto", "float32") == ("bfloat16", "float32")
    assert state_dtypes("float16", "float32", "auto") == ("float32", "float32")
    # KDA keeps its recurrent state in fp32 by default
    assert kda_state_dtypes("bfloat16") == ("bfloat16", "float32")
    assert kda_state_dtypes("bfloat16", "auto", "bfloat16") == ("bfloat16", "bfloat16")
    with pytest.raises(UsageError):
        kda_state_dtypes("bfloat16", "auto", "float16")


def test_mamba1_state_jamba_tp1_and_tp8():
    # Jamba: I = 2 * 4096 = 8192, d_state 16, d_conv 4, bf16
    # tp1: conv 3 * 8192 * 2 = 49,152; ssm 8192 * 16 * 2 = 262,144 -> 311,296
    s = mamba1_state(tp=1, intermediate_size=8192, state_size=16, conv_kernel=4,
                     conv_dtype="bfloat16", ssm_dtype="bfloat16")
    assert [t.shape for t in s] == [(3, 8192), (8192, 16)]
    assert state_page_bytes(s) == 311_296
    # tp8: 1024 channels -> 3*1024*2 + 1024*16*2 = 6,144 + 32,768 = 38,912
    s8 = mamba1_state(tp=8, intermediate_size=8192, state_size=16, conv_kernel=4,
                      conv_dtype="bfloat16", ssm_dtype="bfloat16")
    assert state_page_bytes(s8) == 38_912


def test_mamba2_state_nemotron_h_56b():
    # I = 256 heads * 64 = 16,384; 8 groups * 256 state -> conv_dim 16,384 + 4,096 = 20,480
    # tp1: conv 3 * 20,480 * 2 = 122,880; ssm 256*64*256*4 (fp32) = 16,777,216 -> 16,900,096
    s = mamba2_state(tp=1, intermediate_size=16384, n_groups=8, num_heads=256, head_dim=64, state_size=256,
                     conv_kernel=4, num_spec=0, conv_dtype="bfloat16", ssm_dtype="float32")
    assert state_page_bytes(s) == 16_900_096
    # tp8: conv 3 * 2,560 * 2 = 15,360; ssm 32*64*256*4 = 2,097,152 -> 2,112,512
    s8 = mamba2_state(tp=8, intermediate_size=16384, n_groups=8, num_heads=256, head_dim=64, state_size=256,
                      conv_kernel=4, num_spec=0, conv_dtype="bfloat16", ssm_dtype="float32")
    assert state_page_bytes(s8) == 2_112_512


def test_mamba2_group_padding_and_spec_columns():
    # one group at tp4: groups become 1 + (4 - 1) = 4 -> conv_dim 1536 + 2*4*128 = 2560, /4 = 640
    # 2 speculative tokens add two conv columns: (4 - 1 + 2) = 5
    s = mamba2_state(tp=4, intermediate_size=1536, n_groups=1, num_heads=24, head_dim=64, state_size=128,
                     conv_kernel=4, num_spec=2, conv_dtype="bfloat16", ssm_dtype="bfloat16")
    assert s[0].shape == (5, 640)
    assert s[1].shape == (6, 64, 128)


def test_gdn_state_qwen3_next():
    # conv_dim = 128*16*2 + 128*32 = 8,192; conv 3*8192*2 = 49,152; ssm 32*128*128*2 = 1,048,576
    s = gdn_state(tp=1, num_k_heads=16, num_v_heads=32, head_k_dim=128, head_v_dim=128, conv_kernel=4,
                  num_spec=0, conv_dtype="bfloat16", ssm_dtype="bfloat16")
    assert state_page_bytes(s) == 1_097_728
    with pytest.raises(UsageError):  # 32 value heads do not split over 3 ranks
        gdn_state(tp=3, num_k_heads=16, num_v_heads=32, head_k_dim=128, head_v_dim=128, conv_kernel=4,
                  num_spec=0, conv_dtype="bfloat16", ssm_dtype="bfloat16")


def test_kda_state_kimi_linear_tp2():
    # conv_dim = 3 * 32 * 128 = 12,288, /2 = 6,144: 3 * 6,144 * 2 = 36,864
    # recurrent 16 * 128 * 128 * 4 (fp32) = 1,048,576 -> 1,085,440
    s = kda_state(tp=2, num_heads=32, head_dim=128, conv_kernel=4, num_spec=0,
                  conv_dtype="bfloat16", rec_dtype="float32")
    assert state_page_bytes(s) == 1_085_440


def test_default_mode_0_33():
    assert default_mamba_cache_mode(True) == "align"
    assert default_mamba_cache_mode(False) == "none"
    assert default_mamba_cache_mode(False, "align") == "none"  # prefix caching off forces none
    with pytest.raises(UsageError):
        default_mamba_cache_mode(True, "all")  # 0.33.0 has only none / align


def test_alignment_reference_vector_t5():
    # attn 1 token = 2 heads * (256+256) * 2 = 2,048; mamba 1,097,728; align 16
    # 16 * cdiv(1,097,728, 32,768) = 16 * 34 = 544; page 1,114,112; padding 1.49%
    al = align_hybrid_block_size(block_size=16, mamba_page_bytes=1_097_728, attention_page_per_token_bytes=2048,
                                 kernel_block_alignment=16)
    assert (al.block_size, al.attention_page_bytes, al.mamba_page_size_padded) == (544, 1_114_112, 1_114_112)
    assert al.raised
    assert al.log_lines() == (
        "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
        "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
    )
    # pre-0.33 "all" mode with chunk 64: lcm(64,16) * cdiv(cdiv(1,097,728, 2,048) = 536, 64) = 64 * 9 = 576
    al_all = align_hybrid_block_size(block_size=16, mamba_page_bytes=1_097_728, attention_page_per_token_bytes=2048,
                                     kernel_block_alignment=16, mamba_cache_mode="all", mamba_chunk_size=64)
    assert al_all.block_size == 576 and al_all.mamba_block_size == 576


def test_alignment_keeps_a_larger_user_block():
    # user 1024 >= 544: no raise; page 1024 * 2048 = 2,097,152 pads the mamba page
    al = align_hybrid_block_size(block_size=1024, mamba_page_bytes=1_097_728, attention_page_per_token_bytes=2048,
                                 kernel_block_alignment=1024)
    assert al.block_size == 1024 and not al.raised
    assert al.mamba_page_size_padded == 2_097_152


@given(
    mamba=st.integers(1, 50_000_000),
    per_token=st.integers(1, 10_000),
    align=st.sampled_from([16, 32, 64, 128, 576]),
    block=st.sampled_from([16, 32, 64]),
)
def test_alignment_properties(mamba, per_token, align, block):
    kernel = max(align, block)
    al = align_hybrid_block_size(block_size=block, mamba_page_bytes=mamba, attention_page_per_token_bytes=per_token,
                                 kernel_block_alignment=kernel)
    # the attention page holds the state, the block is on the kernel grid, and one grid step less would not fit
    assert al.attention_page_bytes >= mamba
    assert al.block_size >= block
    if al.raised:
        assert al.block_size % kernel == 0
        assert (al.block_size - kernel) * per_token < mamba
    # idempotent: aligning the result again changes nothing
    again = align_hybrid_block_size(block_size=al.block_size, mamba_page_bytes=mamba,
                                    attention_page_per_token_bytes=per_token,
                                    kernel_block_alignment=max(al.block_size, align))
    assert again.block_size == al.block_size and not again.raised
    assert (al.mamba_page_size_padded or mamba) == al.attention_page_bytes
    assert math.isfinite(al.padding_pct)
