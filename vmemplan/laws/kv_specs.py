"""Packed record laws of the DeepSeek-V4 / V4.1 KV caches.

The spec dataclasses themselves (and the ordinary page arithmetic) live in
:mod:`vmemplan.core.kv_specs`, the vocabulary both laws and model adapters import.
"""

from __future__ import annotations

from typing import Literal

from vmemplan.core.errors import UsageError

__all__ = ["deepseek_v4_record_bytes", "deepseek_v4_page_alignment", "compressor_state_block_size"]


def deepseek_v4_record_bytes(
    cache_dtype: str, *, sm100: bool, role: Literal["window", "compressed"]
) -> int:
    """Packed DeepSeek-V4 / V4.1 KV record bytes per stored token.

    Off SM100 the V4 record is used: 448 fp8 NoPE + 64 bf16 RoPE + 7 UE8M0 scales and
    a pad byte = 584.  On SM100 the V4.1 MXFP8 record: 512 fp8 + 16 scales = 528.
    ``nvfp4_ds_mla`` (SM100 only) keeps the 528-byte window record and stores the
    compressed cache as 256 bytes of e2m1 pairs + 32 scales = 288.
    Mirrors DeepseekV4Attention.__init__ (swa_bytes_per_token /
    compressed_bytes_per_token) in vllm/models/deepseek_v41/attention.py (0.33.0).
    """
    if cache_dtype not in ("fp8_ds_mla", "nvfp4_ds_mla"):
        raise UsageError(f"{cache_dtype!r} is not a packed DeepSeek-V4 cache format")
    if cache_dtype == "nvfp4_ds_mla" and not sm100:
        raise UsageError("nvfp4_ds_mla needs the V4.1 records, which FlashMLA decodes only on SM100")
    window = 528 if sm100 else 584
    if role == "window":
        return window
    return 288 if cache_dtype == "nvfp4_ds_mla" else window


def deepseek_v4_page_alignment(*, sm100: bool) -> int:
    """Page alignment of the packed DeepSeek-V4 pages: 576 (V4 TMA stride) off SM100,
    512 on SM100 (``kv_page_alignment`` in vllm/models/deepseek_v41/attention.py)."""
    return 512 if sm100 else 576


def compressor_state_block_size(num_speculative_tokens: int) -> int:
    """Rows of the DeepSeek-V4.1 compressor ring: drafts + bonus + previous row, as a
    power of two of at least 8 (CompressorStateCache.__init__,
    vllm/models/deepseek_v41/compressor.py, 0.33.0)."""
    rows = num_speculative_tokens + 2
    return max(8, 1 << (rows - 1).bit_length())
