"""Per-layer KV cache specs, per rank, as vLLM 0.33.0 describes them (the vocabulary).

Each class is a frozen dataclass holding integers only (no torch), mirroring one
spec class of ``vllm/v1/kv_cache_interface.py`` (0.33.0), with the page and
per-request arithmetic that class carries in vLLM.  The caller (a model adapter)
has already divided heads by tensor parallelism and resolved the cache dtype.

Page law (0.33.0, ``AttentionSpec.unpadded_page_size_bytes``)::

    page = num_head_slots * num_states * state_content_bytes
    num_states = block_size // tokens_per_state
    state_content_bytes = (head_size + head_size_v) * dtype_bytes   # unless a backend packs it

``page_size_padded`` (when set) replaces the page; the DeepSeek-V4 specs round
the page up to ``alignment`` (``_apply_alignment_padding``).

Per-request laws, with ``L`` = max_model_len and ``F`` = the tokens every step
in flight may schedule (``VllmConfig.max_in_flight_tokens`` =
max_concurrent_batches x max_num_batched_tokens):

* full / MLA: ``cdiv(cdiv(L, dcp) if dcp_sharded, block_size)`` pages;
* sliding window: ``cdiv(min(window - 1 + extra_retained + F, L), block_size) + 1``;
* chunked local: ``cdiv(min(chunk + F, L), block_size)``;
* Mamba: ``none`` 1 + spec, ``align`` 2 + spec + checkpoints, (pre-0.33 ``all``:
  ``cdiv(L, block_size)`` + spec);
* circular buffer (DeepSeek-V4.1 compressor state): 1 page;
* cross attention: ``cdiv(max_num_encoder_input_tokens, block_size)``.

The pool context a spec reads is any object with the attributes of
:class:`PoolContextLike` (``vmemplan.laws.kv_pool.PoolContext`` in practice).  The dtype
widths and the behaviour every spec shares live in :mod:`vmemplan.core.kv_spec_base`; their
public names are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, field
from fractions import Fraction
from typing import ClassVar, Union

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen
from vmemplan.core.kv_spec_base import (
    MambaCacheMode,
    PoolContextLike,
    _AttentionMixin,
    _check_positive,
    _SpecBase,
    attention_state_content_bytes,
    kv_dtype_bytes,
    mla_record_bytes,
)
from vmemplan.core.units import cdiv, round_up

__all__ = [
    "kv_dtype_bytes",
    "attention_state_content_bytes",
    "mla_record_bytes",
    "PoolContextLike",
    "FullAttentionSpec",
    "SlidingWindowSpec",
    "ChunkedLocalAttentionSpec",
    "MLAAttentionSpec",
    "SlidingWindowMLASpec",
    "CircularBufferSpec",
    "MambaSpec",
    "CrossAttentionSpec",
    "EncoderOnlyAttentionSpec",
    "UniformTypeKVCacheSpecs",
    "Spec",
    "MambaCacheMode",
    "LATENT_SPECS",
    "WINDOW_SPECS",
    "LOCAL_SPECS",
]


# --------------------------------------------------------------------------------------
# Attention specs
# --------------------------------------------------------------------------------------


@frozen
class _HeadAttentionFields(_AttentionMixin):
    """The fields every per-head attention spec shares: the five leading positional ones
    (block, heads, head size, cache dtype, element width) and, keyword-only, the page knobs
    of ``AttentionSpec`` (padding, tokens per stored state, packed record, head slots, DCP
    sharding, block stride alignment) in vllm/v1/kv_cache_interface.py (0.33.0)."""

    block_size: int
    num_kv_heads: int
    head_size: int
    cache_dtype: str
    dtype_bytes: int
    _: KW_ONLY
    page_size_padded: int | None = None
    #: tokens one stored state covers; vLLM's pooled Whisper-causal encoder stores ``block_pool_size``
    #: states per token (``Fraction(1, block_pool_size)``, whisper_causal.py::get_kv_cache_spec)
    tokens_per_state: int | Fraction = 1
    state_content_bytes: int | None = None
    num_head_slots: int | None = None
    dcp_sharded: bool = True
    block_stride_alignment: int | None = None

    _positive: ClassVar[tuple[str, ...]] = ("block_size",)  # the fields vLLM requires above zero, in the order it checks them

    def __post_init__(self) -> None:
        for name in self._positive:
            _check_positive(name, getattr(self, name))


def _apply_alignment(real: int, alignment: int | None, padded: int | None) -> int | None:
    """``_apply_alignment_padding``: round the real page up to ``alignment``; an
    aligned page overrides any padding passed in, as vLLM's ``__post_init__`` does."""
    if alignment is None:
        return padded
    aligned = round_up(real, alignment)
    return aligned if aligned != real else padded


@frozen
class _LatentAttentionFields(_AttentionMixin):
    """The fields and page of a latent (MLA) record cache, shared by :class:`MLAAttentionSpec`
    and :class:`SlidingWindowMLASpec`: one record per stored token, no separate V, the
    record ``head_size * dtype_bytes`` or a packed format's own size, the page rounded up to
    ``alignment`` (DeepSeek-V4).  Mirrors MLAAttentionSpec / SlidingWindowMLASpec in
    vllm/v1/kv_cache_interface.py (0.33.0)."""

    block_size: int
    head_size: int
    cache_dtype: str
    dtype_bytes: int
    _: KW_ONLY
    model_version: str | None = None
    alignment: int | None = None
    state_content_bytes: int | None = None
    page_size_padded: int | None = None
    num_kv_heads: int = 1
    dcp_sharded: bool = True
    block_stride_alignment: int | None = None
    num_head_slots: int | None = None

    _positive: ClassVar[tuple[str, ...]] = ("block_size",)  # the fields vLLM requires above zero, in the order it checks them

    def __post_init__(self) -> None:
        for name in self._positive:
            _check_positive(name, getattr(self, name))
        object.__setattr__(
            self,
            "page_size_padded",
            _apply_alignment(self.unpadded_page_size_bytes, self.alignment, self.page_size_padded),
        )

    @property
    def head_size_v(self) -> int:
        return 0

    def _slots_and_content(self) -> tuple[int, int]:
        slots = self.num_head_slots if self.num_head_slots is not None else self.num_kv_heads
        if self.state_content_bytes is not None:
            return slots, self.state_content_bytes
        if self.model_version == "deepseek_v4" and self.cache_dtype in ("fp8_ds_mla", "nvfp4_ds_mla"):
            raise UsageError("a DeepSeek-V4 packed MLA spec needs state_content_bytes (see deepseek_v4_record_bytes)")
        return slots, mla_record_bytes(self.cache_dtype, self.head_size, self.dtype_bytes)


class _GrowingLaws(_AttentionMixin):
    """Per-request law of a cache that holds every token: ``cdiv(cdiv(L, dcp), block_size)``
    pages (DCP shards tokens, PCP does not).  Mirrors FullAttentionSpec.max_memory_usage_bytes
    in vllm/v1/kv_cache_interface.py (0.33.0)."""

    grows_with_context = True

    def max_memory_usage_bytes(self, ctx: PoolContextLike) -> int:
        return cdiv(self._context_tokens(ctx.max_model_len, ctx), self.block_size) * self.page_size_bytes

    def context_pages(self, tokens: int, ctx: PoolContextLike) -> int:
        return cdiv(self._context_tokens(tokens, ctx), self.block_size)


class _AdmissionCapLaws(_AttentionMixin):
    """A bounded cache whose bytes a request claims are its admission cap,
    ``max_admission_blocks_per_request(in_flight, L)`` pages (vllm/v1/kv_cache_interface.py,
    0.33.0)."""

    def max_admission_blocks_per_request(self, max_in_flight_tokens: int, max_model_len: int) -> int:
        raise NotImplementedError  # pragma: no cover - defined by each spec

    def max_memory_usage_bytes(self, ctx: PoolContextLike) -> int:
        return self.max_admission_blocks_per_request(ctx.max_in_flight_tokens, ctx.max_model_len) * self.page_size_bytes

    def admission_pages(self, ctx: PoolContextLike) -> int:
        return self.max_admission_blocks_per_request(ctx.max_in_flight_tokens, ctx.max_model_len)


class _SlidingWindowLaws(_AdmissionCapLaws):
    """Laws of a sliding-window ring, shared by :class:`SlidingWindowSpec` and
    :class:`SlidingWindowMLASpec`.

    Admission cap (``max_admission_blocks_per_request``)::

        cdiv(min(window - 1 + extra_retained + in_flight, L), block_size) + 1

    where ``in_flight`` is max_concurrent_batches x max_num_batched_tokens.  The
    ``+ 1`` covers a window that starts mid-block.  Mirrors
    SlidingWindowSpec.max_admission_blocks_per_request /
    max_memory_usage_bytes in vllm/v1/kv_cache_interface.py (0.33.0).
    """

    sliding_window: int
    extra_retained_tokens: int

    def max_admission_blocks_per_request(self, max_in_flight_tokens: int, max_model_len: int) -> int:
        tokens = min(self.sliding_window - 1 + self.extra_retained_tokens + max_in_flight_tokens, max_model_len)
        return cdiv(tokens, self.block_size) + 1

    def max_memory_usage_bytes(self, ctx: PoolContextLike) -> int:
        if self.dcp_sharded and ctx.decode_context_parallel_size > 1:
            raise UsageError("vLLM does not support decode context parallelism with sliding-window layers")
        return super().max_memory_usage_bytes(ctx)

    def steady_pages(self, ctx: PoolContextLike) -> int:
        """Window ring in steady decode: ``window - 1 + extra_retained`` tokens plus the
        tokens one decode step writes (1 + speculative), rounded up, plus one page."""
        tokens = self.sliding_window - 1 + self.extra_retained_tokens + 1 + ctx.num_speculative_tokens
        return cdiv(min(tokens, ctx.max_model_len), self.block_size) + 1


@frozen
class FullAttentionSpec(_GrowingLaws, _HeadAttentionFields):
    """Full attention: every token of the context is cached.

    ``page = slots * (block_size / tokens_per_state) * content``; a request at
    max_model_len holds ``cdiv(cdiv(L, dcp), block_size)`` pages (DCP shards tokens,
    PCP does not).  ``sliding_window`` / ``attention_chunk_size`` are only recorded
    (the hybrid manager is off, so those layers hold every token).
    Mirrors FullAttentionSpec.max_memory_usage_bytes in
    vllm/v1/kv_cache_interface.py (0.33.0).
    """

    head_size_v: int | None = None
    sliding_window: int | None = None
    attention_chunk_size: int | None = None

    kind = "full_attention"


@frozen
class SlidingWindowSpec(_SlidingWindowLaws, _HeadAttentionFields):
    """Sliding-window attention: a ring bounded by the window (laws in
    :class:`_SlidingWindowLaws`).  Mirrors SlidingWindowSpec in
    vllm/v1/kv_cache_interface.py (0.33.0).
    """

    sliding_window: int
    head_size_v: int | None = None
    extra_retained_tokens: int = 0

    kind = "sliding_window"
    _positive = ("block_size", "sliding_window")


@frozen
class ChunkedLocalAttentionSpec(_AdmissionCapLaws, _HeadAttentionFields):
    """Chunked local attention (Llama-4 local layers).

    Admission cap: ``cdiv(min(chunk + in_flight, L), block_size)`` (no ``+ 1``).
    Mirrors ChunkedLocalAttentionSpec.max_admission_blocks_per_request in
    vllm/v1/kv_cache_interface.py (0.33.0).
    """

    attention_chunk_size: int
    head_size_v: int | None = None

    kind = "chunked_local_attention"
    _positive = ("block_size", "attention_chunk_size")

    def max_admission_blocks_per_request(self, max_in_flight_tokens: int, max_model_len: int) -> int:
        return cdiv(min(self.attention_chunk_size + max_in_flight_tokens, max_model_len), self.block_size)

    def steady_pages(self, ctx: PoolContextLike) -> int:
        tokens = self.attention_chunk_size + 1 + ctx.num_speculative_tokens
        return cdiv(min(tokens, ctx.max_model_len), self.block_size)


@frozen
class MLAAttentionSpec(_GrowingLaws, _LatentAttentionFields):
    """Latent (MLA) cache: one compressed vector per stored token, no separate V.

    ``page = (block_size // compress_ratio) * record``, where the record is
    ``head_size * dtype_bytes`` or a packed format's own size (656-byte
    ``fp8_ds_mla`` on V3.2; 584 / 528 / 288-byte DeepSeek-V4 records, pass them as
    ``state_content_bytes``).  ``alignment`` rounds the page up (DeepSeek-V4).
    Growth law as full attention.  Mirrors MLAAttentionSpec in
    vllm/v1/kv_cache_interface.py (0.33.0).
    """

    compress_ratio: int = 1
    cache_role: str = "sparse"

    kind = "mla_attention"
    _positive = ("block_size", "compress_ratio")

    @property
    def tokens_per_state(self) -> int:  # type: ignore[override]
        return self.compress_ratio


@frozen
class SlidingWindowMLASpec(_SlidingWindowLaws, _LatentAttentionFields):
    """Sliding-window ring in a latent record format (DeepSeek-V4 window caches).

    Page as :class:`MLAAttentionSpec`; admission and steady-decode laws as
    :class:`SlidingWindowSpec`.  Mirrors SlidingWindowMLASpec in
    vllm/v1/kv_cache_interface.py and DeepseekV4SWACache.get_kv_cache_spec in
    vllm/v1/attention/backends/mla/sparse_swa.py (0.33.0).
    """

    sliding_window: int
    extra_retained_tokens: int = 0
    bounded_replay: bool = False
    tokens_per_state: int = 1

    kind = "sliding_window_mla"
    _positive = ("block_size", "sliding_window")


@frozen
class CircularBufferSpec(_HeadAttentionFields):
    """One block per request for the whole request (DeepSeek-V4.1 compressor state:
    the open group's raw rows).  ``max_memory_usage_bytes = page``.  Mirrors
    CircularBufferSpec in vllm/v1/kv_cache_interface.py (0.33.0)."""

    head_size_v: int | None = 0

    kind = "circular_buffer"

    def max_memory_usage_bytes(self, ctx: PoolContextLike) -> int:
        return self.page_size_bytes

    def steady_pages(self, ctx: PoolContextLike) -> int:
        return 1

    def admission_pages(self, ctx: PoolContextLike) -> int:
        return 1


@frozen
class CrossAttentionSpec(_HeadAttentionFields):
    """Encoder-decoder cross attention: caches the encoder output,
    ``cdiv(max_num_encoder_input_tokens, block_size)`` pages.  Mirrors
    CrossAttentionSpec in vllm/v1/kv_cache_interface.py (0.33.0)."""

    head_size_v: int | None = None

    kind = "cross_attention"

    def _pages(self, ctx: PoolContextLike) -> int:
        return cdiv(ctx.encoder_input_tokens, self.block_size)

    def max_memory_usage_bytes(self, ctx: PoolContextLike) -> int:
        return self._pages(ctx) * self.page_size_bytes

    def steady_pages(self, ctx: PoolContextLike) -> int:
        return self._pages(ctx)

    def admission_pages(self, ctx: PoolContextLike) -> int:
        return self._pages(ctx)


@frozen
class EncoderOnlyAttentionSpec(_HeadAttentionFields):
    """Encoder-only attention: no KV cache kept (``max_memory_usage_bytes = 0``)."""

    head_size_v: int | None = None

    kind = "encoder_only_attention"
    _positive = ()  # no block size check

    def max_memory_usage_bytes(self, ctx: PoolContextLike) -> int:
        return 0


# --------------------------------------------------------------------------------------
# Recurrent state
# --------------------------------------------------------------------------------------


@frozen
class MambaSpec(_SpecBase):
    """Recurrent (Mamba / GDN / KDA ...) state of one layer, per rank.

    ``page_bytes_unpadded`` is the sum of the state tensors' bytes; the platform's
    hybrid alignment may pad it (``page_size_padded``).  Pages a request holds:
    ``none`` 1 + spec, ``align`` 2 + spec + prefill checkpoints (0.33.0
    MambaSpec.max_memory_usage_bytes); ``all`` (releases before 0.33.0 only)
    ``cdiv(L, block_size)`` + spec.
    """

    block_size: int
    page_bytes_unpadded: int
    mamba_cache_mode: MambaCacheMode = "none"
    num_speculative_blocks: int = 0
    page_size_padded: int | None = None
    num_prefill_checkpoint_blocks: int = 0
    tp_replicated: bool = False

    kind = "mamba"

    def __post_init__(self) -> None:
        _check_positive("page_bytes_unpadded", self.page_bytes_unpadded)
        if self.mamba_cache_mode not in ("none", "align", "all"):
            raise UsageError(f"unknown mamba cache mode {self.mamba_cache_mode!r}")

    @property
    def grows_with_context(self) -> bool:  # type: ignore[override]
        return self.mamba_cache_mode == "all"

    @property
    def unpadded_page_size_bytes(self) -> int:
        return self.page_bytes_unpadded

    @property
    def page_size_bytes(self) -> int:
        if self.page_size_padded is not None:
            if self.page_size_padded < self.page_bytes_unpadded:
                raise UsageError("mamba page_size_padded is below the state bytes")
            return self.page_size_padded
        return self.page_bytes_unpadded

    def _fixed_pages(self) -> int:
        if self.mamba_cache_mode == "align":
            return 2 + self.num_speculative_blocks + self.num_prefill_checkpoint_blocks
        if self.mamba_cache_mode == "all":
            return self.num_speculative_blocks
        return 1 + self.num_speculative_blocks

    def max_memory_usage_bytes(self, ctx: PoolContextLike) -> int:
        pages = self._fixed_pages()
        if self.mamba_cache_mode == "all":
            pages += cdiv(ctx.max_model_len, self.block_size)
        return pages * self.page_size_bytes

    def context_pages(self, tokens: int, ctx: PoolContextLike) -> int:
        if self.mamba_cache_mode == "all":
            return cdiv(tokens, self.block_size) + self.num_speculative_blocks
        return 0

    def steady_pages(self, ctx: PoolContextLike) -> int:
        return 0 if self.mamba_cache_mode == "all" else self._fixed_pages()

    def admission_pages(self, ctx: PoolContextLike) -> int:
        return self.steady_pages(ctx)


# --------------------------------------------------------------------------------------
# Same-type bundle
# --------------------------------------------------------------------------------------


@frozen
class UniformTypeKVCacheSpecs(_SpecBase):
    """Layers of one attention type (same token slots per request) but different
    pages, bundled into one group: the page is the *sum* of the layers' pages and a
    request claims ``max_l cdiv(mem_l, page_l)`` pages.  Mirrors
    UniformTypeKVCacheSpecs in vllm/v1/kv_cache_interface.py (0.33.0).

    ``layers`` is an ordered tuple of ``(layer_name, spec)``.
    """

    block_size: int
    layers: tuple[tuple[str, Spec], ...] = field(default=())

    kind = "uniform_type"

    @property
    def specs(self) -> dict[str, Spec]:
        return dict(self.layers)

    @property
    def first_spec(self) -> Spec:
        return self.layers[0][1]

    @property
    def grows_with_context(self) -> bool:  # type: ignore[override]
        return self.first_spec.grows_with_context

    @property
    def inner_kind(self) -> str:
        kinds = {s.kind for _, s in self.layers}
        return kinds.pop() if len(kinds) == 1 else "full_attention"

    @property
    def page_size_bytes(self) -> int:
        return sum(s.page_size_bytes for _, s in self.layers)

    @property
    def unpadded_page_size_bytes(self) -> int:
        return sum(s.unpadded_page_size_bytes for _, s in self.layers)

    def max_memory_usage_pages(self, ctx: PoolContextLike) -> int:
        return max(s.max_memory_usage_pages(ctx) for _, s in self.layers)

    def max_memory_usage_bytes(self, ctx: PoolContextLike) -> int:
        return self.max_memory_usage_pages(ctx) * self.page_size_bytes

    def max_layers_per_page_size(self) -> int:
        """Most layers sharing one page size (``get_max_layers_per_page_size``)."""
        counts: dict[int, int] = {}
        for _, s in self.layers:
            counts[s.page_size_bytes] = counts.get(s.page_size_bytes, 0) + 1
        return max(counts.values())

    def context_pages(self, tokens: int, ctx: PoolContextLike) -> int:
        return max(s.context_pages(tokens, ctx) for _, s in self.layers)

    def steady_pages(self, ctx: PoolContextLike) -> int:
        return max(s.steady_pages(ctx) for _, s in self.layers)

    def admission_pages(self, ctx: PoolContextLike) -> int:
        return max(s.admission_pages(ctx) for _, s in self.layers)

    @classmethod
    def of(cls, layer_specs: Mapping[str, Spec]) -> UniformTypeKVCacheSpecs:
        items = tuple(layer_specs.items())
        return cls(block_size=items[0][1].block_size, layers=items)


Spec = Union[
    FullAttentionSpec,
    SlidingWindowSpec,
    ChunkedLocalAttentionSpec,
    MLAAttentionSpec,
    SlidingWindowMLASpec,
    CircularBufferSpec,
    CrossAttentionSpec,
    EncoderOnlyAttentionSpec,
    MambaSpec,
    UniformTypeKVCacheSpecs,
]


#: Spec classes by the family the grouping laws test for (``isinstance``): one latent record
#: per token, a sliding-window ring, and the local layers promoted to full attention when the
#: hybrid allocator is off (vllm/v1/core/kv_cache_utils.py, 0.33.0).
LATENT_SPECS = (MLAAttentionSpec, SlidingWindowMLASpec)
WINDOW_SPECS = (SlidingWindowSpec, SlidingWindowMLASpec)
LOCAL_SPECS = (SlidingWindowSpec, SlidingWindowMLASpec, ChunkedLocalAttentionSpec)
