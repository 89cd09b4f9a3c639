"""The pure concurrency laws, with hand arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.concurrency import (
    RequestShape,
    binding_limit,
    concurrency_report,
    crossover_tokens,
    default_lengths,
    effective_concurrency,
    image_tokens,
    requests_by_kv,
    video_tokens,
)
from vmemplan.core.errors import UsageError
from vmemplan.core.units import cdiv


def blocks16(tokens: int) -> int:
    return cdiv(tokens, 16)


def test_requests_by_kv_is_floor_of_usable_over_blocks():
    # 28,807 usable blocks, a 1,300-token request holds ceil(1300/16) = 82 blocks: 28807 // 82 = 351
    assert requests_by_kv(28_807, 82) == 351
    assert requests_by_kv(28_807, 0) is None  # a request that holds nothing: the pool never limits
    assert requests_by_kv(-5, 10) == 0


def test_effective_and_binding():
    assert effective_concurrency(256, 351) == 256 and binding_limit(256, 351) == "max_num_seqs"
    assert effective_concurrency(256, 14) == 14 and binding_limit(256, 14) == "kv_cache"
    assert binding_limit(256, 256) == "max_num_seqs"  # a tie: both cap at 256; the flag is named
    assert effective_concurrency(256, None) == 256 and binding_limit(256, None) == "max_num_seqs"


def test_crossover_of_the_seed_example():
    # 28,808 blocks (one null) -> 28,807 usable; 256 requests fit while 256 * ceil(L/16) <= 28,807,
    # i.e. ceil(L/16) <= 112 (256 * 112 = 28,672; 256 * 113 = 28,928 > 28,807): L <= 112 * 16 = 1,792.
    assert crossover_tokens(28_807, blocks16, 256, 32_768) == 1_792


def test_crossover_edges():
    # the pool holds 4 requests of 32 tokens (2 blocks each, 8 usable): the pool never binds
    assert crossover_tokens(8, blocks16, 4, 32) is None
    # 3 usable blocks, 4 one-token requests need 4 blocks: the pool binds everywhere
    assert crossover_tokens(3, blocks16, 4, 32) == 0


@given(usable=st.integers(0, 200_000), seqs=st.integers(1, 1024), mml=st.integers(1, 131_072),
       fixed=st.integers(0, 50))
def test_crossover_is_the_last_length_that_fits(usable, seqs, mml, fixed):
    def blocks(n: int) -> int:
        return cdiv(n, 16) + fixed

    c = crossover_tokens(usable, blocks, seqs, mml)
    if c is None:
        assert seqs * blocks(mml) <= usable
    elif c == 0:
        assert seqs * blocks(1) > usable
    else:
        assert 1 <= c < mml
        assert seqs * blocks(c) <= usable < seqs * blocks(c + 1)


def test_default_lengths_are_powers_of_two_then_max_model_len():
    assert default_lengths(32_768) == (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
    assert default_lengths(5_000) == (64, 128, 256, 512, 1024, 2048, 4096, 5000)


def test_report_rows_and_the_third_limit():
    shapes = [RequestShape(1000, 1000), RequestShape(8000, 8000), RequestShape(40_000, 40_000)]
    rep = concurrency_report(shapes, num_blocks=28_808, blocks_for=blocks16, admission_blocks_for=blocks16,
                             max_num_seqs=256, max_num_batched_tokens=8192, max_model_len=32_768,
                             vllm_max_concurrency=14.06640625)
    short, long_, too_long = rep.rows
    # 1,000 tokens: 63 blocks, 28807 // 63 = 457 >= 256 -> max_num_seqs binds
    assert (short.blocks_per_request, short.by_kv_cache, short.effective, short.binding) == (63, 457, 256, "max_num_seqs")
    # one 1,000-token prompt: 1 step; 256 of them: ceil(256,000 / 8,192) = 32 steps
    assert (short.prefill_steps, short.fill_steps) == (1, 32)
    # 8,000 tokens: 500 blocks, 28807 // 500 = 57 -> the pool binds
    assert (long_.by_kv_cache, long_.effective, long_.binding) == (57, 57, "kv_cache")
    # 57 prompts of 8,000 tokens: ceil(456,000 / 8,192) = 56 steps
    assert long_.fill_steps == 56
    # longer than max_model_len: vLLM refuses it
    assert too_long.effective == 0 and not too_long.within_max_model_len
    assert rep.binding == "kv_cache" and rep.reference_tokens == 32_768
    assert rep.crossover_tokens == 1_792


def test_qwen_image_tokens_by_hand(config_dict):
    cfg = config_dict("Qwen--Qwen2.5-VL-7B-Instruct.json")
    # patch 14, merge 2 -> 28-pixel units; 1280x720 rounds to 1288x728 (46 x 26 units)
    # tokens = (728/14) * (1288/14) / 2^2 = 52 * 92 / 4 = 1,196
    n, _ = image_tokens(cfg, (1280, 720))
    assert n == 1_196
    # no size: the processor's largest image, 16,384 merged patches
    assert image_tokens(cfg)[0] == 16_384
    # a huge image is scaled down under max_pixels = 16384 * 28^2
    assert image_tokens(cfg, (10_000, 10_000))[0] <= 16_384


def test_qwen_video_tokens_by_hand(config_dict):
    cfg = config_dict("Qwen--Qwen2.5-VL-7B-Instruct.json")
    # 16 frames, temporal patch 2 -> grid_t 8; 640x360 -> 644x364 (23 x 13 units)
    # per frame pair: (364/14) * (644/14) / 4 = 26 * 46 / 4 = 299; 8 * 299 = 2,392
    assert video_tokens(cfg, 16, (640, 360))[0] == 2_392
    # 15 frames pad to 16
    assert video_tokens(cfg, 15, (640, 360))[0] == 2_392


def test_gemma3_image_tokens(config_dict):
    assert image_tokens(config_dict("google--gemma-3-27b-it.json"))[0] == 256


def test_unsupported_vision_and_text_models(config_dict):
    with pytest.raises(UsageError, match="not supported yet"):
        image_tokens(config_dict("meta-llama--Llama-4-Scout-17B-16E-Instruct.json"))
    with pytest.raises(UsageError, match="no vision_config"):
        image_tokens(config_dict("meta-llama--Llama-3.1-8B.json"))
    with pytest.raises(UsageError):
        video_tokens(config_dict("google--gemma-3-27b-it.json"), 16, (640, 360))
