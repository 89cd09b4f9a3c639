"""Page and per-request laws of the per-layer KV cache specs (vLLM 0.33.0).

Every expected number is worked out by hand in a comment from
vllm/v1/kv_cache_interface.py (0.33.0) and the model/backend code named there.
"""

from __future__ import annotations

import pytest

from vmemplan.core.errors import UsageError
from vmemplan.laws.kv_pool import PoolContext
from vmemplan.laws.kv_specs import compressor_state_block_size, deepseek_v4_page_alignment, deepseek_v4_record_bytes
from vmemplan.core.kv_specs import ChunkedLocalAttentionSpec, CircularBufferSpec, CrossAttentionSpec, FullAttentionSpec, MambaSpec, MLAAttentionSpec, SlidingWindowMLASpec, SlidingWindowSpec, UniformTypeKVCacheSpecs, kv_dtype_bytes

CTX = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192)


# --- dtype table (vllm/utils/torch_utils.py STR_DTYPE_TO_TORCH_DTYPE) -------------------


@pytest.mark.parametrize(
    ("name", "model_bytes", "expected"),
    [
        ("auto", 2, 2),  # auto -> model_config.dtype (bf16)
        ("auto", 4, 4),
        ("fp8", 2, 1),  # torch.uint8
        ("fp8_e5m2", 2, 1),
        ("fp8_ds_mla", 2, 1),
        ("nvfp4", 2, 1),
        ("int8_per_token_head", 2, 1),  # torch.int8
        ("fp8_inc", 2, 1),  # float8_e4m3fn
        ("bfloat16", 4, 2),
        ("float32", 2, 4),
    ],
)
def test_kv_dtype_bytes(name: str, model_bytes: int, expected: int) -> None:
    assert kv_dtype_bytes(name, model_bytes) == expected


def test_kv_dtype_bytes_rejects_unknown() -> None:
    with pytest.raises(UsageError):
        kv_dtype_bytes("fp7", 2)


# --- attention pages ------------------------------------------------------------------


def test_full_attention_page_llama8b() -> None:
    # AttentionSpec.unpadded_page_size_bytes = heads * states * (h + h_v) * dtype
    # = 8 * 16 * (128 + 128) * 2 = 65,536
    spec = FullAttentionSpec(16, 8, 128, "auto", 2)
    assert spec.page_size_bytes == 65_536
    # fp8: 8 * 16 * 256 * 1 = 32,768
    assert FullAttentionSpec(16, 8, 128, "fp8", 1).page_size_bytes == 32_768
    # max_memory_usage_bytes = cdiv(131072, 16) * 65,536 = 8192 * 65,536
    assert spec.max_memory_usage_bytes(CTX) == 8_192 * 65_536


def test_full_attention_dcp_shards_tokens_pcp_does_not() -> None:
    spec = FullAttentionSpec(16, 8, 128, "auto", 2)
    dcp = PoolContext(max_model_len=8_001, max_num_batched_tokens=8_192, decode_context_parallel_size=4)
    # cdiv(8001, 4) = 2001 tokens -> cdiv(2001, 16) = 126 pages
    assert spec.max_memory_usage_pages(dcp) == 126
    pcp = PoolContext(max_model_len=8_001, max_num_batched_tokens=8_192, prefill_context_parallel_size=4)
    # 0.33.0 FullAttentionSpec ignores PCP: cdiv(8001, 16) = 501
    assert spec.max_memory_usage_pages(pcp) == 501


def test_nvfp4_and_per_token_head_pages() -> None:
    # FlashInfer customize_spec: K and V as 2 slots of h//2 + h//16 = 64 + 8 = 72 bytes
    # page = (2 * 8 slots) * 16 tokens * 72 = 18,432
    assert FullAttentionSpec(16, 8, 128, "nvfp4", 1).page_size_bytes == 18_432
    # Triton customize_spec: (128 + 128) * 1 + 2 fp32 scales = 264 bytes; 8 * 16 * 264 = 33,792
    assert FullAttentionSpec(16, 8, 128, "fp8_per_token_head", 1).page_size_bytes == 33_792


def test_sliding_window_admission_and_steady() -> None:
    spec = SlidingWindowSpec(16, 8, 64, "auto", 2, 128)
    # page = 8 * 16 * (64 + 64) * 2 = 32,768
    assert spec.page_size_bytes == 32_768
    # max_admission_blocks_per_request(F, L) = cdiv(min(127 + F, L), 16) + 1
    # async scheduling: F = 2 * 8192 = 16,384 -> cdiv(16,511, 16) + 1 = 1032 + 1 = 1033
    assert spec.max_memory_usage_pages(CTX) == 1_033
    sync = PoolContext(max_model_len=131_072, max_num_batched_tokens=8_192, async_scheduling=False)
    # one batch in flight: cdiv(127 + 8192, 16) + 1 = cdiv(8319, 16) + 1 = 520 + 1 = 521
    assert spec.max_memory_usage_pages(sync) == 521
    # short context caps at L: cdiv(min(16,511, 100), 16) + 1 = 7 + 1 = 8
    short = PoolContext(max_model_len=100, max_num_batched_tokens=8_192)
    assert spec.max_memory_usage_pages(short) == 8
    # steady decode (no speculation): cdiv(127 + 1, 16) + 1 = 8 + 1 = 9 pages
    assert spec.steady_pages(CTX) == 9


def test_chunked_local_has_no_plus_one() -> None:
    spec = ChunkedLocalAttentionSpec(16, 8, 128, "auto", 2, 8_192)
    # cdiv(min(8192 + 16,384, 131,072), 16) = cdiv(24,576, 16) = 1536
    assert spec.max_memory_usage_pages(CTX) == 1_536


def test_mla_pages() -> None:
    # DeepSeek-V3 latent, bf16, block 64: 64 * 576 * 2 (no factor 2 for V) = 73,728
    assert MLAAttentionSpec(64, 576, "auto", 2).page_size_bytes == 73_728
    # fp8 (not ds_mla): 64 * 576 * 1 = 36,864
    assert MLAAttentionSpec(64, 576, "fp8", 1).page_size_bytes == 36_864
    # V3.2 fp8_ds_mla: 656-byte record (mla_attention.py get_kv_cache_spec): 64 * 656 = 41,984
    assert MLAAttentionSpec(64, 576, "fp8_ds_mla", 1).page_size_bytes == 41_984
    # V3.2 indexer: head 128 + 128 // 128 * 4 = 132 bytes: 64 * 132 = 8,448
    assert MLAAttentionSpec(64, 132, "uint8", 1).page_size_bytes == 8_448


def test_deepseek_v4_records_and_alignment() -> None:
    # SM90: V4 record 584 B, pages aligned to 576 B (attention.py kv_page_alignment)
    assert deepseek_v4_record_bytes("fp8_ds_mla", sm100=False, role="window") == 584
    assert deepseek_v4_record_bytes("fp8_ds_mla", sm100=True, role="compressed") == 528
    assert deepseek_v4_record_bytes("nvfp4_ds_mla", sm100=True, role="window") == 528
    assert deepseek_v4_record_bytes("nvfp4_ds_mla", sm100=True, role="compressed") == 288
    with pytest.raises(UsageError):
        deepseek_v4_record_bytes("nvfp4_ds_mla", sm100=False, role="window")
    assert deepseek_v4_page_alignment(sm100=False) == 576
    # ratio-2 compressed cache, block 64: 32 states * 584 = 18,688 -> round_up(576) = 33 * 576 = 19,008
    c2 = MLAAttentionSpec(64, 512, "fp8_ds_mla", 1, compress_ratio=2, model_version="deepseek_v4",
                          alignment=576, state_content_bytes=584)
    assert c2.unpadded_page_size_bytes == 18_688
    assert c2.page_size_bytes == 19_008
    # ratio-1: 64 * 584 = 37,376 -> 65 * 576 = 37,440
    c1 = MLAAttentionSpec(64, 512, "fp8_ds_mla", 1, compress_ratio=1, model_version="deepseek_v4",
                          alignment=576, state_content_bytes=584)
    assert c1.page_size_bytes == 37_440
    # window ring, block 32: 32 * 584 = 18,688 -> 19,008
    swa = SlidingWindowMLASpec(32, 512, "fp8_ds_mla", 1, 128, model_version="deepseek_v4",
                               alignment=576, state_content_bytes=584)
    assert swa.page_size_bytes == 19_008
    # changing the block size re-applies the alignment: 64 * 584 = 37,376 -> 37,440
    assert swa.with_block_size(64).page_size_bytes == 37_440


def test_compressor_ring() -> None:
    # rows = spec + 2; power of two >= 8: spec 5 -> 7 -> 8; spec 7 -> 9 -> 16
    assert compressor_state_block_size(5) == 8
    assert compressor_state_block_size(7) == 16
    assert compressor_state_block_size(0) == 8
    # state_dim 2 * 512 = 1024 fp32, no V: 1 * 8 * 1024 * 4 = 32,768 bytes, one page a request
    ring = CircularBufferSpec(8, 1, 1024, "float32", 4, head_size_v=0)
    assert ring.page_size_bytes == 32_768
    assert ring.max_memory_usage_pages(CTX) == 1


def test_mamba_modes() -> None:
    m = MambaSpec(544, 1_097_728, "none", 0, page_size_padded=1_114_112)
    assert m.page_size_bytes == 1_114_112
    assert m.max_memory_usage_pages(CTX) == 1  # none: 1 + 0
    assert MambaSpec(544, 1_097_728, "none", 2).max_memory_usage_pages(CTX) == 3  # 1 + 2 spec
    assert MambaSpec(544, 1_097_728, "align", 2).max_memory_usage_pages(CTX) == 4  # 2 + 2 spec
    # pre-0.33 "all": cdiv(131072, 544) + 1 = 241 + 1 = 242
    all_mode = MambaSpec(544, 1_097_728, "all", 1)
    assert all_mode.max_memory_usage_pages(CTX) == 242
    assert all_mode.steady_pages(CTX) == 0
    with pytest.raises(UsageError):
        MambaSpec(16, 100, "bogus")  # type: ignore[arg-type]


def test_cross_attention_uses_encoder_budget() -> None:
    spec = CrossAttentionSpec(16, 8, 64, "auto", 2)
    ctx = PoolContext(max_model_len=448, max_num_batched_tokens=8_192, max_num_encoder_input_tokens=1_500)
    # cdiv(1500, 16) = 94 pages
    assert spec.max_memory_usage_pages(ctx) == 94


def test_uniform_type_bundle() -> None:
    a = MLAAttentionSpec(64, 576, "fp8_ds_mla", 1)  # 41,984
    b = MLAAttentionSpec(64, 132, "uint8", 1)  # 8,448
    u = UniformTypeKVCacheSpecs.of({"a": a, "b": b})
    assert u.page_size_bytes == 41_984 + 8_448
    # max_l cdiv(mem_l, page_l) = cdiv(131072, 64) = 2048 for both
    assert u.max_memory_usage_pages(CTX) == 2_048
    assert u.max_memory_usage_bytes(CTX) == 2_048 * 50_432
