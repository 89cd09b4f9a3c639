"""Hybrid recurrent models: attention layers next to Mamba / gated-delta / KDA mixers.

This module holds what every hybrid family shares:

* the per-rank recurrent state of one mixer layer (``StateTensor`` lists built by
  :func:`mamba1_state`, :func:`mamba2_state`, :func:`gdn_state`, :func:`kda_state`), mirroring
  vllm/model_executor/layers/mamba/mamba_utils.py::MambaStateShapeCalculator and
  MambaStateDtypeCalculator (0.33.0);
* the recurrent cache mode vLLM picks (:func:`default_mamba_cache_mode`);
* the platform's attention/mamba page alignment (:func:`align_hybrid_block_size`), mirroring
  vllm/platforms/interface.py::Platform._align_hybrid_block_size (0.33.0) and, for older
  releases, its ancestor HybridAttentionMambaModelConfig.verify_and_update_config;
* :class:`HybridAdapter`, the base class the family modules (``hybrid_qwen``, ``hybrid_mamba``,
  ``hybrid_kimi``) derive from: it turns a layer plan plus one layer's state into
  ``kv_cache_specs`` and answers the block-size and prefix-caching hooks.

Arithmetic is over integers only; no torch.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Literal

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import FullAttentionSpec, MambaSpec, MLAAttentionSpec, kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.laws.moe import moe_shard
from vmemplan.models.base import Adapter, RankSpan, pp_layer_range

__all__ = [
    "StateTensor",
    "HybridAlignment",
    "state_page_bytes",
    "state_dtypes",
    "kda_state_dtypes",
    "extra_groups_for_head_shards",
    "mamba1_state",
    "mamba2_state",
    "gdn_state",
    "kda_state",
    "default_mamba_cache_mode",
    "align_hybrid_block_size",
    "HybridAdapter",
    "LayerKind",
    "experts_per_rank",
]

LayerKind = Literal["attention", "mla", "mamba", "attention+mamba", "none"]

_STATE_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def _dtype_width(dtype: str) -> int:
    try:
        return _STATE_DTYPE_BYTES[dtype]
    except KeyError:
        raise UsageError(
            f"unknown recurrent-state dtype {dtype!r}", hint="use auto, float32, float16 or bfloat16"
        ) from None


def _divide(numerator: int, denominator: int, what: str) -> int:
    """``vllm.distributed.divide``: exact division or an error."""
    if numerator % denominator:
        raise UsageError(
            f"--tensor-parallel-size {denominator} does not divide the {numerator} {what}",
            hint="vLLM shards recurrent state by whole heads; use a divisor",
        )
    return numerator // denominator


@frozen
class StateTensor:
    """One recurrent-state tensor of one layer, as one rank holds it for one request slot."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * _dtype_width(self.dtype)


def state_page_bytes(tensors: tuple[StateTensor, ...] | list[StateTensor]) -> int:
    """Bytes of one recurrent-state page: the sum of the state tensors' bytes.

    Mirrors vllm/v1/kv_cache_interface.py::MambaSpec.page_size_bytes (0.33.0) before padding.
    """
    return sum(t.nbytes for t in tensors)


def _normalise_dtype(name: str) -> str:
    key = name.lower().removeprefix("torch.")
    return {"float": "float32", "fp32": "float32", "half": "float16", "fp16": "float16",
            "bf16": "bfloat16"}.get(key, key)


def state_dtypes(model_dtype: str, mamba_cache_dtype: str = "auto",
                 mamba_ssm_cache_dtype: str = "auto") -> tuple[str, str]:
    """``(conv dtype, temporal dtype)`` of a Mamba-1/2 or gated-delta state.

    The conv state takes ``--mamba-cache-dtype`` ("auto" = the model dtype); the temporal (SSM)
    state takes ``--mamba-ssm-cache-dtype`` unless that is "auto", when it follows the conv
    state.  Mirrors vllm/model_executor/layers/mamba/mamba_utils.py::
    MambaStateDtypeCalculator._mamba_state_dtype (0.33.0).  The KV cache dtype plays no part.
    """
    conv = _normalise_dtype(model_dtype if mamba_cache_dtype == "auto" else mamba_cache_dtype)
    ssm = conv if mamba_ssm_cache_dtype == "auto" else _normalise_dtype(mamba_ssm_cache_dtype)
    _dtype_width(conv)
    _dtype_width(ssm)
    return conv, ssm


def kda_state_dtypes(model_dtype: str, mamba_cache_dtype: str = "auto",
                     mamba_ssm_cache_dtype: str = "auto") -> tuple[str, str]:
    """``(conv dtype, recurrent dtype)`` of a Kimi-delta-attention state: the recurrent state is
    float32 unless ``--mamba-ssm-cache-dtype`` asks for float32 or bfloat16.  Mirrors
    MambaStateDtypeCalculator.kda_state_dtype (0.33.0)."""
    conv = _normalise_dtype(model_dtype if mamba_cache_dtype == "auto" else mamba_cache_dtype)
    if mamba_ssm_cache_dtype == "auto":
        rec = "float32"
    else:
        rec = _normalise_dtype(mamba_ssm_cache_dtype)
        if rec not in ("float32", "bfloat16"):
            raise UsageError(f"KDA recurrent state supports only auto, float32 and bfloat16, got {rec!r}")
    _dtype_width(conv)
    return conv, rec


def extra_groups_for_head_shards(n_groups: int, tp: int) -> int:
    """Groups added so every rank's heads keep their B/C group: 0 when tp divides the groups,
    else ``tp - n_groups``.  Mirrors MambaStateShapeCalculator.extra_groups_for_head_shards."""
    return 0 if n_groups % tp == 0 else tp - n_groups


def mamba1_state(*, tp: int, intermediate_size: int, state_size: int, conv_kernel: int,
                 conv_dtype: str, ssm_dtype: str) -> tuple[StateTensor, ...]:
    """Mamba-1 state per rank: conv ``(kernel-1) x I/tp`` and ssm ``I/tp x d_state``.

    No speculative columns (the Mamba-1 calculator takes none).  Mirrors
    MambaStateShapeCalculator.mamba1_state_shape (0.33.0).
    """
    inner = _divide(intermediate_size, tp, "Mamba inner channels")
    return (
        StateTensor("conv", (conv_kernel - 1, inner), conv_dtype),
        StateTensor("ssm", (inner, state_size), ssm_dtype),
    )


def mamba2_state(*, tp: int, intermediate_size: int, n_groups: int, num_heads: int, head_dim: int,
                 state_size: int, conv_kernel: int, num_spec: int, conv_dtype: str,
                 ssm_dtype: str) -> tuple[StateTensor, ...]:
    """Mamba-2 state per rank.

    ``conv_dim = I + 2 * (n_groups + extra) * d_state``; conv ``(kernel - 1 + num_spec) x
    conv_dim/tp``; ssm ``heads/tp x head_dim x d_state``.  Mirrors
    MambaStateShapeCalculator.mamba2_state_shape (0.33.0).
    """
    groups = n_groups + extra_groups_for_head_shards(n_groups, tp)
    conv_dim = intermediate_size + 2 * groups * state_size
    return (
        StateTensor("conv", (conv_kernel - 1 + num_spec, _divide(conv_dim, tp, "Mamba-2 conv channels")),
                    conv_dtype),
        StateTensor("ssm", (_divide(num_heads, tp, "Mamba-2 heads"), head_dim, state_size), ssm_dtype),
    )


def gdn_state(*, tp: int, num_k_heads: int, num_v_heads: int, head_k_dim: int, head_v_dim: int,
              conv_kernel: int, num_spec: int, conv_dtype: str, ssm_dtype: str) -> tuple[StateTensor, ...]:
    """Gated-delta-net state per rank.

    ``conv_dim = 2 * k_heads * head_k + v_heads * head_v``; conv ``(kernel - 1 + num_spec) x
    conv_dim/tp``; recurrent ``v_heads/tp x head_v x head_k``.  Mirrors
    MambaStateShapeCalculator.gated_delta_net_state_shape (0.33.0).
    """
    conv_dim = head_k_dim * num_k_heads * 2 + head_v_dim * num_v_heads
    return (
        StateTensor("conv", (conv_kernel - 1 + num_spec, _divide(conv_dim, tp, "gated-delta conv channels")),
                    conv_dtype),
        StateTensor("ssm", (_divide(num_v_heads, tp, "gated-delta value heads"), head_v_dim, head_k_dim),
                    ssm_dtype),
    )


def kda_state(*, tp: int, num_heads: int, head_dim: int, conv_kernel: int, num_spec: int,
              conv_dtype: str, rec_dtype: str) -> tuple[StateTensor, ...]:
    """Kimi-delta-attention state per rank (keys share the value heads' shape).

    ``conv_dim = 3 * heads * head_dim`` (q, k, v short convolutions); conv ``(kernel - 1 +
    num_spec) x conv_dim/tp``; recurrent ``heads/tp x head_dim x head_dim``.  Mirrors
    MambaStateShapeCalculator.kda_state_shape (0.33.0); 0.11.1 stored the three convolutions
    as three tensors of the same total bytes.
    """
    conv_dim = 3 * num_heads * head_dim
    return (
        StateTensor("conv", (conv_kernel - 1 + num_spec, _divide(conv_dim, tp, "KDA conv channels")), conv_dtype),
        StateTensor("recurrent", (_divide(num_heads, tp, "KDA heads"), head_dim, head_dim), rec_dtype),
    )


def default_mamba_cache_mode(enable_prefix_caching: bool, requested: str | None = None) -> str:
    """The recurrent cache mode vLLM 0.33.0 runs.

    Prefix caching on: a requested "none" (the default) becomes "align"; off: always "none".
    0.33.0 knows only these two modes (vllm/config/cache.py::MambaCacheMode); "all" was dropped.
    Mirrors vllm/model_executor/models/config.py::MambaModelConfig.verify_and_update_config.
    """
    if requested not in (None, "none", "align", "all"):
        raise UsageError(f"unknown --mamba-cache-mode {requested!r}", hint="use none or align")
    if requested == "all":
        raise UsageError("vLLM 0.33.0 has no mamba cache mode 'all'", hint="use none or align")
    if not enable_prefix_caching:
        return "none"
    return "align"


@frozen
class HybridAlignment:
    """Result of the attention/mamba page alignment on one rank.

    ``block_size`` is the attention block size after alignment; ``attention_page_bytes`` the
    attention page at that size; ``mamba_page_size_padded`` the padded mamba page (None when
    the pages are already equal); ``raised`` whether vLLM logs "Setting attention block size
    to N tokens"; ``padding_pct`` what it logs in "Padding mamba page size by X%".
    ``mamba_block_size`` is set in modes that tie it to the attention block ("align"/"all").
    """

    block_size: int
    attention_page_bytes: int
    mamba_page_bytes: int
    raised: bool
    kernel_block_alignment: int
    mamba_block_size: int | None = None

    @property
    def mamba_page_size_padded(self) -> int | None:
        """The mamba page padded up to the attention page; None when the two are already equal."""
        return self.attention_page_bytes if self.attention_page_bytes != self.mamba_page_bytes else None

    @property
    def padding_pct(self) -> float:
        pad = (self.mamba_page_size_padded or self.mamba_page_bytes) - self.mamba_page_bytes
        return 100 * pad / self.mamba_page_bytes

    def log_lines(self) -> tuple[str, ...]:
        """The two INFO lines vLLM prints for this alignment (format strings of
        Platform._align_hybrid_block_size, 0.33.0)."""
        lines = []
        if self.raised:
            lines.append(
                f"Setting attention block size to {self.block_size} tokens to ensure that attention "
                "page size is >= mamba page size."
            )
        if self.mamba_page_size_padded is not None:
            lines.append(
                f"Padding mamba page size by {self.padding_pct:.2f}% to ensure that mamba page size "
                "and attention page size are exactly equal."
            )
        return tuple(lines)


def align_hybrid_block_size(*, block_size: int, mamba_page_bytes: int, attention_page_per_token_bytes: int,
                            kernel_block_alignment: int, backend_block_alignment: int = 1,
                            mamba_cache_mode: str = "none", mamba_chunk_size: int | None = None,
                            ) -> HybridAlignment:
    """Raise the attention block size until one attention page holds a mamba state page.

    ``kernel_block_alignment`` is the already-combined alignment the release uses (0.33.0:
    ``max(smallest kernel block of the backend, block_size)``, at least 128 for MLA, lcm'd with
    the layers' prefill-checkpoint alignment in "align" mode; see
    :meth:`HybridAdapter.kernel_block_alignment`).  Then::

        attn_block = align * cdiv(mamba_page, align * attn_page_1tok)        # "none" / "align"
        attn_block = lcm(chunk, align) * cdiv(cdiv(mamba_page, attn_page_1tok), lcm(chunk, align))
                                                                       # "all" (releases < 0.33)
        attn_block = round_up(attn_block, backend_block_alignment)
        block_size = max(block_size, attn_block)
        mamba_page_size_padded = block_size * attn_page_1tok   (when it differs from the state)

    Mirrors vllm/platforms/interface.py::Platform._align_hybrid_block_size (0.33.0) and
    vllm/model_executor/models/config.py::HybridAttentionMambaModelConfig (0.11.1), whose rule
    is the same with the release's own alignment.
    """
    for name, value in (("block_size", block_size), ("mamba_page_bytes", mamba_page_bytes),
                        ("attention_page_per_token_bytes", attention_page_per_token_bytes),
                        ("kernel_block_alignment", kernel_block_alignment),
                        ("backend_block_alignment", backend_block_alignment)):
        if value <= 0:
            raise UsageError(f"{name} must be positive, got {value}")
    align = kernel_block_alignment
    mamba_block: int | None = None
    if mamba_cache_mode == "all":
        if not mamba_chunk_size:
            raise UsageError("mamba cache mode 'all' needs the model's mamba chunk size")
        chunk = math.lcm(mamba_chunk_size, align)
        tokens = -(-mamba_page_bytes // attention_page_per_token_bytes)
        attn_block = chunk * -(-tokens // chunk)
        mamba_block = attn_block
    else:
        attn_block = align * -(-mamba_page_bytes // (align * attention_page_per_token_bytes))
    attn_block = backend_block_alignment * -(-attn_block // backend_block_alignment)
    raised = block_size < attn_block
    final = attn_block if raised else block_size
    if mamba_cache_mode == "align":
        mamba_block = final
    return HybridAlignment(block_size=final, attention_page_bytes=final * attention_page_per_token_bytes,
                           mamba_page_bytes=mamba_page_bytes, raised=raised, kernel_block_alignment=align,
                           mamba_block_size=mamba_block)


# --------------------------------------------------------------------------------------
# The shared adapter
# --------------------------------------------------------------------------------------


class HybridAdapter(Adapter):
    """Base adapter for attention + recurrent hybrids.

    Subclasses state:

    * ``layer_kinds()``: one :data:`LayerKind` per decoder layer (which cache each owns);
    * ``mamba_state(ctx)``: one recurrent layer's per-rank state tensors;
    * ``attention_kv_heads(tp)`` / ``attention_head_size`` (or ``uses_mla`` and
      ``mla_head_size``) for the attention layers' cache;
    * ``weight_tensors(ctx)``;
    * optionally ``prefill_checkpoint_alignment(ctx)`` (gated-delta layers on the FlashInfer
      prefill kernel) and the layer-name formats.
    """

    architectures: tuple[str, ...] = ()
    uses_mla: bool = False
    attention_layer_name = "model.layers.{i}.self_attn.attn"
    mamba_layer_name = "model.layers.{i}.mixer"

    # -- what subclasses state --------------------------------------------------------
    def _get(self, key: str, default=None):
        """``config.text[key]``, with ``default`` also for a null value."""
        v = self.config.text.get(key, default)
        return default if v is None else v

    def layer_kinds(self) -> tuple[LayerKind, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:  # pragma: no cover
        raise NotImplementedError

    def attention_kv_heads(self, tp: int) -> int:
        """KV heads one rank caches: ``max(1, kv_heads // tp)`` (split or replicated)."""
        return max(1, self.config.num_key_value_heads // tp)

    @property
    def attention_head_size(self) -> int:
        return self.config.head_dim

    @property
    def mla_head_size(self) -> int:  # pragma: no cover - MLA families override
        raise NotImplementedError

    def prefill_checkpoint_alignment(self, ctx: GraphContext, mode: str) -> int | None:
        """Token alignment of the prefill checkpoints every recurrent layer exports in "align"
        mode, or None when some layer exports none (vllm/model_executor/layers/mamba/
        abstract.py::get_mamba_prefill_checkpoint_alignment, 0.33.0).  Default: none."""
        return None

    def prefill_checkpoint_blocks(self, ctx: GraphContext, mode: str) -> int:
        """Prefill-checkpoint pages one recurrent layer's ``MambaSpec`` holds a request in
        "align" mode (``num_prefill_checkpoint_blocks``; 0 in the other modes, where
        MambaSpec.max_memory_usage_bytes ignores them).

        Independent of :meth:`prefill_checkpoint_alignment`: a layer may hold the page and
        still declare no alignment (Mamba-2), in which case the block-size alignment is
        untouched.  Default: one page exactly when the layers export aligned checkpoints
        (QwenGatedDeltaNetAttention.get_kv_cache_spec, the FlashKDA layers, 0.33.0); Mamba-1
        (MambaMixer), short convolutions (ShortConv) and the Kimi gated-delta layers use
        MambaBase.get_kv_cache_spec unchanged (0) (vllm/model_executor/layers/mamba/, 0.33.0).
        """
        return 1 if (mode == "align" and self.prefill_checkpoint_alignment(ctx, mode)) else 0

    # -- derived facts ------------------------------------------------------------------
    def layer_range(self, ctx: GraphContext) -> tuple[int, int]:
        return pp_layer_range(len(self.layer_kinds()), ctx.pipeline_parallel_size, ctx.pipeline_rank)

    def mamba_cache_mode(self, ctx: GraphContext) -> str:
        """The mode vLLM runs: see :func:`default_mamba_cache_mode`."""
        return default_mamba_cache_mode(ctx.enable_prefix_caching, ctx.mamba_cache_mode)

    def stage_kinds(self, span: RankSpan) -> Counter[str]:
        """How many layers of each :data:`LayerKind` the stage ``span`` holds."""
        return Counter(self.layer_kinds()[span.start:span.end])

    def num_recurrent_layers(self) -> int:
        return sum(1 for k in self.layer_kinds() if "mamba" in k)

    def num_attention_layers(self) -> int:
        return sum(1 for k in self.layer_kinds() if k in ("attention", "mla", "attention+mamba"))

    def _cache_dtype(self, ctx: GraphContext) -> tuple[str, int]:

        nbytes = kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype))
        name = ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype
        return name, nbytes

    def _attention_spec(self, ctx: GraphContext, block_size: int):
        name, nbytes = self._cache_dtype(ctx)
        if self.uses_mla:
            return MLAAttentionSpec(block_size=block_size, head_size=self.mla_head_size,
                                    cache_dtype=name, dtype_bytes=nbytes)
        return FullAttentionSpec(block_size=block_size, num_kv_heads=self.attention_kv_heads(ctx.tensor_parallel_size),
                                 head_size=self.attention_head_size, cache_dtype=name, dtype_bytes=nbytes)

    def attention_page_per_token_bytes(self, ctx: GraphContext) -> int:
        """One token's attention page on one rank (``FullAttentionSpec``/``MLAAttentionSpec``
        with block size 1, as the alignment computes it)."""
        return self._attention_spec(ctx, 1).page_size_bytes

    def mamba_page_bytes(self, ctx: GraphContext) -> int:
        return state_page_bytes(self.mamba_state(ctx))

    def kernel_block_alignment(self, ctx: GraphContext, block_size: int, mode: str) -> int:
        """The alignment the 0.33.0 platform rounds the attention block to.

        ``max(smallest kernel block of the first attention backend, block_size)``: 16 for
        FLASH_ATTN (``MultipleOf(16)``) and FlashInfer (``[16, 32, 64]``), 32 for FlashInfer-MLA;
        at least 128 when the model uses MLA (TRT-LLM/FlashInfer MLA decode); in "align" mode
        lcm'd with the recurrent layers' prefill-checkpoint alignment.  Mirrors
        Platform._align_hybrid_block_size (0.33.0).
        """
        smallest = 32 if (self.uses_mla and (ctx.sm_major or 0) >= 10) else 16
        align = max(smallest, block_size)
        if self.uses_mla:
            align = max(align, 128)
        if mode == "align":
            align = math.lcm(align, self.prefill_checkpoint_alignment(ctx, mode) or 1)
        return align

    def hybrid_alignment(self, ctx: GraphContext, block_size: int) -> HybridAlignment:
        """The 0.33.0 alignment for this rank, starting from ``block_size`` (the user's or the
        backend's preferred size)."""
        mode = self.mamba_cache_mode(ctx)
        backend = 32 if (self.uses_mla and (ctx.sm_major or 0) >= 10) else 16
        return align_hybrid_block_size(
            block_size=block_size,
            mamba_page_bytes=self.mamba_page_bytes(ctx),
            attention_page_per_token_bytes=self.attention_page_per_token_bytes(ctx),
            kernel_block_alignment=self.kernel_block_alignment(ctx, block_size, mode),
            backend_block_alignment=backend,
            mamba_cache_mode=mode,
        )

    # -- hooks ---------------------------------------------------------------------------
    def prefix_caching_supported(self) -> bool:
        """vLLM 0.33.0 enables prefix caching by default for generative hybrids
        (vllm/config/model.py::ModelConfig.is_prefix_caching_supported: ``attn_type ==
        "hybrid"`` → True), so the recurrent cache runs in "align" mode by default."""
        return True

    def resolve_block_size(self, ctx: GraphContext, *, user_block_size: int | None, default: int) -> int:
        """The attention block size after the hybrid alignment (may override ``--block-size``).
        Mirrors vllm/platforms/interface.py::Platform.update_block_size_for_backend →
        _align_hybrid_block_size (0.33.0)."""
        start = user_block_size if user_block_size is not None else default
        if not self.num_recurrent_layers() or not self.num_attention_layers():
            return start
        return self.hybrid_alignment(ctx, start).block_size

    def notes(self) -> tuple[str, ...]:
        return ()

    # -- KV cache ----------------------------------------------------------------------
    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Attention specs and one ``MambaSpec`` per recurrent layer on this stage, as vLLM
        0.33.0 builds them.

        The attention block size is ``ctx.block_size`` raised by the hybrid alignment (a no-op
        when the planner already resolved it); the mamba page is padded to the attention page;
        in "align" mode the recurrent layers that export prefill checkpoints (Mamba-2; gated
        delta on FlashInfer's prefill kernel) also hold one prefill-checkpoint page
        (:meth:`prefill_checkpoint_blocks`).  See :meth:`kv_cache_specs_for`.
        """
        mode = self.mamba_cache_mode(ctx)
        block, padded = ctx.block_size, None
        if self.num_attention_layers() and self.num_recurrent_layers():
            al = self.hybrid_alignment(ctx, ctx.block_size)
            block, padded = al.block_size, al.mamba_page_size_padded
        ckpt = self.prefill_checkpoint_blocks(ctx, mode)
        return self.kv_cache_specs_for(ctx, block_size=block, mamba_cache_mode=mode,
                                       mamba_page_size_padded=padded, prefill_checkpoint_blocks=ckpt)

    def kv_cache_specs_for(self, ctx: GraphContext, *, block_size: int, mamba_cache_mode: str,
                           mamba_page_size_padded: int | None, prefill_checkpoint_blocks: int = 0,
                           mamba_block_size: int | None = None) -> dict[str, Any]:
        """The specs for explicitly resolved values (a release's own alignment result).

        Attention layers get ``FullAttentionSpec`` / ``MLAAttentionSpec`` at ``block_size``;
        recurrent layers a ``MambaSpec`` with the per-rank state bytes, the given padding and
        mode, ``num_speculative_tokens`` speculative pages, and block size
        ``mamba_block_size`` (default: the attention block in "align"/"all" mode,
        ``max_model_len`` in "none" mode, as MambaModelConfig.verify_and_update_config sets
        it).  Mirrors vllm/model_executor/layers/mamba/abstract.py::MambaBase.get_kv_cache_spec
        and vllm/model_executor/layers/attention/attention.py::Attention.get_kv_cache_spec
        (0.33.0).
        """
        kinds = self.layer_kinds()
        start, end = self.layer_range(ctx)
        mamba_spec = None
        if self.num_recurrent_layers():
            if mamba_block_size is None:
                mamba_block_size = ctx.max_model_len if mamba_cache_mode == "none" else block_size
            mamba_spec = MambaSpec(
                block_size=mamba_block_size,
                page_bytes_unpadded=self.mamba_page_bytes(ctx),
                mamba_cache_mode=mamba_cache_mode,  # type: ignore[arg-type]
                num_speculative_blocks=ctx.num_speculative_tokens,
                page_size_padded=mamba_page_size_padded,
                num_prefill_checkpoint_blocks=prefill_checkpoint_blocks,
            )
        attn_spec = self._attention_spec(ctx, block_size) if self.num_attention_layers() else None
        specs: dict[str, Any] = {}
        for i in range(start, end):
            kind = kinds[i]
            if kind in ("attention", "mla", "attention+mamba"):
                specs[self.attention_layer_name.format(i=i)] = attn_spec
            if kind in ("mamba", "attention+mamba"):
                specs[self.mamba_layer_name.format(i=i)] = mamba_spec
        return specs

    # -- helpers for weight lists ---------------------------------------------------------
    @staticmethod
    def linear(name: str, rows: int, cols: int, count: int, *, quantizable: bool = True,
               in_full: int | None = None, dtype: str | None = None) -> WeightTensor:
        return WeightTensor(name, "linear", rows, cols, count, quantizable, dtype, in_full)

    @staticmethod
    def vector(name: str, size: int, count: int, *, kind: str = "norm", dtype: str | None = None) -> WeightTensor:
        return WeightTensor(name, kind, size, 1, count, False, dtype)  # type: ignore[arg-type]


def experts_per_rank(num_experts: int, ctx: GraphContext) -> tuple[int, int]:
    """``(local experts, intermediate divisor)`` for a FusedMoE layer on one rank.

    Without expert parallelism every rank holds every expert, sharded on the intermediate
    dimension by tp; with it, each of the ``tp x dp`` EP ranks holds ``(E + R) / ep`` whole
    experts (one more on the first ``(E + R) % ep`` ranks).  Mirrors
    vllm/model_executor/layers/fused_moe/layer.py::FusedMoE.__init__ and determine_expert_map
    (0.33.0).  Reports the first (fullest) rank.
    """
    return moe_shard(ctx, num_experts)
