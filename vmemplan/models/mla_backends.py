"""The MLA attention backend vLLM selects for a chip, and the block size and cache dtype it leads to.

Dense MLA (DeepSeek-V2/V3 and the families built on them) and sparse MLA (DeepSeek-V3.2's
indexer layers) each have their own table of backends (vllm/v1/attention/backends/mla/,
0.33.0).  Split out of :mod:`vmemplan.models.deepseek`, which re-exports these names.
"""

from __future__ import annotations

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen

__all__ = ["MlaBackendChoice", "select_mla_backend", "select_sparse_mla_backend", "sparse_block_stride_alignment"]


@frozen
class MlaBackendChoice:
    """The MLA backend vLLM picks, the block size it leads to and the cache dtype it runs.

    The record size and any block-stride alignment follow from ``name`` and
    ``cache_dtype`` (see :meth:`vmemplan.models.deepseek.DeepseekV32.kv_cache_specs`)."""

    name: str
    block_size: int
    cache_dtype: str


# (name, sm majors, kv cache dtypes accepted, kernel sizes, sizes are MultipleOf bases)
_DENSE_MLA_BACKENDS: dict[str, tuple[tuple[int, ...], tuple[str, ...], tuple[int, ...], bool]] = {
    # vllm/v1/attention/backends/mla/flashinfer_mla.py::FlashInferMLABackend
    "FLASHINFER_MLA": ((10,), ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"), (32, 64), False),
    # tokenspeed_mla.py::TokenspeedMLABackend (R1 dims, fp8 only)
    "TOKENSPEED_MLA": ((10,), ("fp8", "fp8_e4m3"), (32, 64), False),
    # cutlass_mla.py::CutlassMLABackend
    "CUTLASS_MLA": ((10,), ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"), (128,), False),
    # flashattn_mla.py::FlashAttnMLABackend (Hopper only, 16-bit caches)
    "FLASH_ATTN_MLA": ((9,), ("auto", "float16", "bfloat16"), (16,), True),
    # flashmla.py::FlashMLABackend
    "FLASHMLA": ((9, 10), ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"), (64,), False),
    # triton_mla.py::TritonMLABackend
    "TRITON_MLA": ((), ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"), (16,), True),
}


def _supports_block(sizes: tuple[int, ...], block_size: int | None) -> bool:
    """``AttentionBackend.supports_block_size`` (0.33.0): any multiple of a kernel size."""
    if block_size is None:
        return True
    return any(block_size % s == 0 for s in sizes)


def _preferred_block(sizes: tuple[int, ...], default: int = 16) -> int:
    """``AttentionBackend.get_preferred_block_size`` (0.33.0): the default when the backend
    accepts it, else the smallest kernel size."""
    return default if _supports_block(sizes, default) else min(sizes)


def select_mla_backend(
    *,
    sm_major: int | None,
    cache_dtype: str,
    user_block_size: int | None,
    qk_nope_head_dim: int,
    qk_rope_head_dim: int,
    v_head_dim: int,
) -> MlaBackendChoice:
    """The dense MLA backend vLLM 0.33.0 selects, and the block size it ends with.

    Mirrors vllm/platforms/cuda.py::_get_backend_priorities and
    CudaPlatformBase.get_attn_backend_cls (first valid backend in priority order; a
    user block size rules out backends whose kernel sizes do not divide it), then
    Platform.update_block_size_for_backend (the user's size, else the backend's
    preferred size from 16).  SM100: FLASHINFER_MLA, TOKENSPEED_MLA, CUTLASS_MLA,
    FLASH_ATTN_MLA, FLASHMLA, TRITON_MLA.  Other chips: FLASH_ATTN_MLA, FLASHMLA,
    FLASHINFER_MLA, TRITON_MLA.
    """
    major = 9 if sm_major is None else sm_major
    if major == 10:
        order = ["FLASHINFER_MLA", "TOKENSPEED_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA"]
    elif major == 12:
        order = ["TRITON_MLA"]
    else:
        order = ["FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA"]
    for name in order:
        majors, dtypes, sizes, _multiple = _DENSE_MLA_BACKENDS[name]
        if majors and major not in majors:
            continue
        if cache_dtype not in dtypes:
            continue
        if not _supports_block(sizes, user_block_size):
            continue
        if name == "FLASHINFER_MLA" and qk_nope_head_dim not in (64, 128, 192):
            continue
        if name == "TOKENSPEED_MLA" and (qk_nope_head_dim, qk_rope_head_dim, v_head_dim) != (128, 64, 128):
            continue
        block = user_block_size if user_block_size is not None else _preferred_block(sizes)
        return MlaBackendChoice(name, block, cache_dtype)
    raise UsageError(
        f"no MLA attention backend accepts --kv-cache-dtype {cache_dtype}"
        + (f" with --block-size {user_block_size}" if user_block_size is not None else ""),
        hint="vLLM's MLA backends take auto/bfloat16/fp8 caches and block sizes of 16, 32, 64 or 128",
    )


_FP8_NAMES = ("fp8", "fp8_e4m3", "fp8_e5m2")


def select_sparse_mla_backend(
    *,
    sm_major: int | None,
    cache_dtype: str,
    user_block_size: int | None,
    num_local_heads: int,
    head_size: int = 576,
) -> MlaBackendChoice:
    """The sparse MLA backend DeepSeek-V3.2 runs on, its cache dtype and the block size.

    Mirrors vllm/platforms/cuda.py::_get_backend_priorities (sparse tails, 0.33.0) and
    vllm/model_executor/layers/attention/mla_attention.py::
    _canonicalize_sparse_mla_kv_cache_dtype:

    * Hopper, 16-bit cache: FLASH_ATTN_MLA_SPARSE (block ``MultipleOf(64)``, blocks
      aligned to whole 1,152-byte rows); fp8: FLASHMLA_SPARSE, which serves every fp8
      dtype as the packed 656-byte ``fp8_ds_mla`` record.
    * Blackwell, quantized cache: FLASHINFER_MLA_SPARSE keeps plain ``fp8`` (576-byte
      records, blocks aligned to 32 rows); it refuses ``fp8_ds_mla`` / ``nvfp4_ds_mla``,
      which fall to FLASHMLA_SPARSE.  16-bit cache: FLASHMLA_SPARSE (or the FA4 sparse
      backend at 16 local heads or fewer; same block size).

    The block size is the smallest every attention backend accepts: the sparse MLA
    backend's and the indexer's ``[64]`` (vllm/v1/attention/backends/mla/indexer.py::
    DeepseekV32IndexerBackend), so 64 unless the user gives a multiple of 64.
    """
    major = 9 if sm_major is None else sm_major
    dtype = "auto" if cache_dtype in ("auto", "bfloat16") else cache_dtype
    if dtype == "float16":
        raise UsageError("DeepSeek-V3.2's sparse MLA backends do not take a float16 cache")
    if user_block_size is not None and user_block_size % 64:
        raise UsageError(
            f"--block-size {user_block_size} is not a multiple of 64, which the DeepSeek-V3.2 "
            "indexer and sparse MLA kernels need",
            hint="use 64 or a multiple of it",
        )
    block = user_block_size if user_block_size is not None else 64
    if major == 10:
        if dtype in _FP8_NAMES and dtype != "fp8_e5m2":
            return MlaBackendChoice("FLASHINFER_MLA_SPARSE", block, dtype)
        if dtype in ("fp8_ds_mla", "fp8_e5m2"):
            return MlaBackendChoice("FLASHMLA_SPARSE", block, "fp8_ds_mla")
        if dtype == "nvfp4_ds_mla":
            return MlaBackendChoice("FLASHMLA_SPARSE", block, "nvfp4_ds_mla")
        if dtype == "auto":
            name = "FLASH_ATTN_MLA_SPARSE_FA4" if num_local_heads <= 16 else "FLASHMLA_SPARSE"
            return MlaBackendChoice(name, block, "auto")
    else:
        if dtype == "auto":
            return MlaBackendChoice("FLASH_ATTN_MLA_SPARSE", block, "auto")
        if dtype in _FP8_NAMES or dtype == "fp8_ds_mla":
            return MlaBackendChoice("FLASHMLA_SPARSE", block, "fp8_ds_mla")
        if dtype == "nvfp4_ds_mla":
            raise UsageError("nvfp4_ds_mla needs FlashMLA's SM100 kernels", hint="use --kv-cache-dtype fp8")
    raise UsageError(
        f"DeepSeek-V3.2's sparse MLA backends do not take --kv-cache-dtype {cache_dtype}",
        hint="use auto (bf16) or fp8",
    )


def sparse_block_stride_alignment(choice: MlaBackendChoice, record_bytes: int, sm_major: int | None) -> int | None:
    """The block-stride alignment a sparse MLA backend's ``customize_spec`` asks of the latent
    cache (0.33.0): FLASH_ATTN_MLA_SPARSE and FLASHMLA_SPARSE (16-bit, or quantized on SM100)
    align blocks to whole rows; FLASHMLA_SPARSE quantized off SM100 asks for whole 64-token
    kernel pages (a no-op at a multiple of 64: None); FLASHINFER_MLA_SPARSE aligns to rows of
    its 32-token pages."""
    if choice.name == "FLASHINFER_MLA_SPARSE":
        return 32 * record_bytes
    if choice.name == "FLASHMLA_SPARSE" and choice.cache_dtype != "auto" and (sm_major or 9) != 10:
        return None
    return record_bytes
