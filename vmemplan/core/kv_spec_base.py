"""The shared floor of the KV cache specs (vocabulary): dtype widths, the pool context a
spec reads, and the page arithmetic every spec class inherits.

Split out of :mod:`vmemplan.core.kv_specs` (which re-exports every public name here) so that
each module stays a size one can read; the laws mirror ``vllm/v1/kv_cache_interface.py``
(0.33.0): ``KVCacheSpec`` (page and per-request bytes) and ``AttentionSpec`` (the page law
``num_head_slots x num_states x state_content_bytes``), and the dtype table of
``vllm/utils/torch_utils.py::STR_DTYPE_TO_TORCH_DTYPE``.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from fractions import Fraction
from typing import Any, Literal, Protocol

from vmemplan.core.errors import UsageError
from vmemplan.core.units import cdiv

MambaCacheMode = Literal["none", "align", "all"]


class PoolContextLike(Protocol):
    """What a spec reads from the pool's context (``laws.kv_pool.PoolContext``)."""

    @property
    def max_model_len(self) -> int: ...
    @property
    def max_in_flight_tokens(self) -> int: ...
    @property
    def decode_context_parallel_size(self) -> int: ...
    @property
    def num_speculative_tokens(self) -> int: ...
    @property
    def encoder_input_tokens(self) -> int: ...


# --------------------------------------------------------------------------------------
# Dtype helpers
# --------------------------------------------------------------------------------------

# Element width of each --kv-cache-dtype string, from the STR_DTYPE_TO_TORCH_DTYPE
# table of vllm/utils/torch_utils.py (0.33.0).  Every packed / quantized format is
# stored in a 1-byte container; its real record size is stated separately.
_CACHE_DTYPE_BYTES: dict[str, int] = {
    "float32": 4,
    "float": 4,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "int8": 1,
    "int4_per_token_head": 1,
    "int8_per_token_head": 1,
    "fp8_per_token_head": 1,
    "fp8_inc": 1,
    "fp8_ds_mla": 1,
    "nvfp4_ds_mla": 1,
    "turboquant_k8v4": 1,
    "turboquant_4bit_nc": 1,
    "turboquant_k3v4_nc": 1,
    "turboquant_3bit_nc": 1,
    "octave_k3v4": 1,
    "octave_k3v3": 1,
    "octave_k3v3_compact": 1,
    "ultraquant_4bit": 1,
    "nvfp4": 1,
    "nvfp4_4over6": 1,
    # raw containers some caches use directly (DeepSeek indexer, compressor state)
    "uint8": 1,
}


def kv_dtype_bytes(cache_dtype: str, model_dtype_bytes: int) -> int:
    """Bytes per stored element for a ``--kv-cache-dtype`` value.

    ``"auto"`` takes the model's dtype width; every other name is looked up in the
    table vLLM uses.  Mirrors vllm/utils/torch_utils.py::kv_cache_dtype_str_to_dtype
    with STR_DTYPE_TO_TORCH_DTYPE (0.33.0) followed by get_dtype_size.

    Raises :class:`UsageError` for a name vLLM would not accept.
    """
    if cache_dtype == "auto":
        if model_dtype_bytes not in (1, 2, 4):
            raise UsageError(f"model dtype width {model_dtype_bytes} bytes is not a torch float width")
        return model_dtype_bytes
    if cache_dtype not in _CACHE_DTYPE_BYTES:
        raise UsageError(f"unknown --kv-cache-dtype {cache_dtype!r}",
                         hint="use auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16, float16, nvfp4, ...")
    return _CACHE_DTYPE_BYTES[cache_dtype]


def _is_per_token_head(cache_dtype: str) -> bool:
    return cache_dtype in ("int4_per_token_head", "int8_per_token_head", "fp8_per_token_head")


def _is_nvfp4(cache_dtype: str) -> bool:
    return cache_dtype.startswith("nvfp4") and cache_dtype != "nvfp4_ds_mla"


def _nvfp4_full_dim(head_size: int) -> int:
    """Packed NVFP4 width: two e2m1 values a byte plus one fp8 scale per 16 values
    (vllm/utils/torch_utils.py::nvfp4_kv_cache_full_dim)."""
    return head_size // 2 + head_size // 16


def attention_state_content_bytes(
    cache_dtype: str, head_size: int, head_size_v: int, dtype_bytes: int
) -> tuple[int, int]:
    """``(head_slots_per_kv_head, bytes per slot per stored token)`` for ordinary attention.

    * dense: one slot per KV head holding K and V, ``(h + h_v) * dtype_bytes``;
    * nvfp4 (FlashInfer ``customize_spec``): K and V are separate slots of
      ``h//2 + h//16`` bytes each;
    * per-token-head int8/fp8/int4 (Triton ``customize_spec``): K and V data plus two
      fp32 scales; int4 halves the data.
    """
    if _is_nvfp4(cache_dtype):
        return 2, _nvfp4_full_dim(head_size) * dtype_bytes
    if _is_per_token_head(cache_dtype):
        hk, hv = head_size, head_size_v
        if cache_dtype == "int4_per_token_head":
            hk, hv = hk // 2, hv // 2
        return 1, (hk + hv) * dtype_bytes + 2 * 4
    return 1, (head_size + head_size_v) * dtype_bytes


def mla_record_bytes(cache_dtype: str, head_size: int, dtype_bytes: int) -> int:
    """Bytes one latent-cache token takes for the DeepSeek-V2/V3/V3.2 MLA layer.

    ``fp8_ds_mla`` packs 512 fp8 NoPE values, 4 fp32 scales and 64 bf16 RoPE values
    into 656 bytes; ``nvfp4_ds_mla`` into 352.  Per-token-head modes add two fp32
    scales.  Otherwise ``head_size * dtype_bytes`` (no factor two: one latent).
    Mirrors MLAAttention.get_kv_cache_spec in
    vllm/model_executor/layers/attention/mla_attention.py and
    MLACommonBackend.customize_spec (0.33.0).
    """
    if cache_dtype == "fp8_ds_mla":
        return 656
    if cache_dtype == "nvfp4_ds_mla":
        return 352
    if _is_per_token_head(cache_dtype):
        h = head_size // 2 if cache_dtype == "int4_per_token_head" else head_size
        return h * dtype_bytes + 2 * 4
    return head_size * dtype_bytes


# --------------------------------------------------------------------------------------
# Shared behaviour
# --------------------------------------------------------------------------------------


class _SpecBase:
    """Behaviour common to every spec (no dataclass fields here)."""

    block_size: int

    # kind tag used in JSON summaries
    kind: str = "unknown"
    # whether the cache grows with the context (full-attention-like)
    grows_with_context: bool = False

    @property
    def page_size_bytes(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def unpadded_page_size_bytes(self) -> int:
        return self.page_size_bytes

    @property
    def stride_alignment_bytes(self) -> int:
        """Byte alignment between physical blocks (``get_block_stride_alignment``); 1 when unset."""
        return getattr(self, "block_stride_alignment", None) or 1

    def max_memory_usage_bytes(self, ctx: PoolContextLike) -> int:  # pragma: no cover
        raise NotImplementedError

    def max_memory_usage_pages(self, ctx: PoolContextLike) -> int:
        """``cdiv(max_memory_usage_bytes, page_size_bytes)``: pages one request at
        max_model_len claims from this layer's group."""
        return cdiv(self.max_memory_usage_bytes(ctx), self.page_size_bytes)

    def with_block_size(self, block_size: int) -> Any:
        """Copy with a new block size (``copy_with_new_block_size``)."""
        return replace(self, block_size=block_size)  # type: ignore[type-var]

    # steady-decode and growing figures, used by PoolPlan ---------------------------
    def context_pages(self, tokens: int, ctx: PoolContextLike) -> int:
        """Pages held for a context of ``tokens`` by a growing cache (0 otherwise)."""
        return 0

    def steady_pages(self, ctx: PoolContextLike) -> int:
        """Pages held regardless of length in steady decode (0 for growing caches)."""
        return 0

    def admission_pages(self, ctx: PoolContextLike) -> int:
        """Pages reserved at admission for bounded state (0 for growing caches)."""
        return 0


class _AttentionMixin(_SpecBase):
    """Page arithmetic of ``AttentionSpec`` (0.33.0)."""

    num_kv_heads: int
    head_size: int
    cache_dtype: str
    dtype_bytes: int
    page_size_padded: int | None
    tokens_per_state: int | Fraction
    state_content_bytes: int | None
    num_head_slots: int | None
    dcp_sharded: bool

    def _v_size(self) -> int:
        hv = getattr(self, "head_size_v", None)
        return self.head_size if hv is None else hv

    def _slots_and_content(self) -> tuple[int, int]:
        if self.state_content_bytes is not None:
            slots = self.num_head_slots if self.num_head_slots is not None else self.num_kv_heads
            return slots, self.state_content_bytes
        per_head, content = attention_state_content_bytes(
            self.cache_dtype, self.head_size, self._v_size(), self.dtype_bytes
        )
        slots = self.num_head_slots if self.num_head_slots is not None else per_head * self.num_kv_heads
        return slots, content

    @property
    def num_states(self) -> int:
        """Stored records per block: ``block_size // tokens_per_state``."""
        if self.tokens_per_state > 0:
            return int(self.block_size // self.tokens_per_state)
        return 1

    @functools.cached_property  # per frozen spec: a pool sums these over every layer, many times a plan
    def unpadded_page_size_bytes(self) -> int:
        slots, content = self._slots_and_content()
        return slots * self.num_states * content

    @functools.cached_property
    def page_size_bytes(self) -> int:
        if self.page_size_padded is not None:
            if self.page_size_padded < self.unpadded_page_size_bytes:
                raise UsageError(
                    f"page_size_padded {self.page_size_padded} is below the real page "
                    f"{self.unpadded_page_size_bytes}"
                )
            return self.page_size_padded
        return self.unpadded_page_size_bytes

    def _context_tokens(self, tokens: int, ctx: PoolContextLike) -> int:
        dcp = ctx.decode_context_parallel_size
        if self.dcp_sharded and dcp > 1:
            return cdiv(tokens, dcp)
        return tokens


def _check_positive(name: str, value: int) -> None:
    if value <= 0:
        raise UsageError(f"{name} must be positive, got {value}")
