"""Liquid AI LFM2 (``Lfm2ForCausalLM``): short-convolution layers next to grouped-query
attention layers, every layer followed by a SwiGLU feed-forward.

Mirrors vllm/model_executor/models/lfm2.py (Lfm2MLP, Lfm2Attention,
Lfm2AttentionDecoderLayer, Lfm2ShortConvDecoderLayer, Lfm2Model, Lfm2ForCausalLM) with
vllm/model_executor/layers/mamba/short_conv.py::ShortConv (0.33.0).  A short-conv layer's
recurrent state is one conv tensor ``(conv_L_cache - 1 + num_spec) x conv_dim/tp``
(MambaStateShapeCalculator.short_conv_state_shape) in the conv-state dtype
(short_conv_state_dtype); it takes MambaBase.get_kv_cache_spec unchanged (no prefill
checkpoint page).  ``layer_types`` lists "conv" / "full_attention".
"""

from __future__ import annotations

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid import LayerKind, StateTensor, _divide, state_dtypes
from vmemplan.models.mixer_blocks import (
    RecurrentHybrid,
    embedding_tensors,
    gqa_attention_tensors,
    head_tensors,
    mlp_tensors,
)

__all__ = ["Lfm2", "lfm2_ff_dim"]


def lfm2_ff_dim(intermediate_size: int, multiple_of: int, auto_adjust: bool, multiplier: float | None) -> int:
    """The feed-forward width Lfm2MLP builds: with ``block_auto_adjust_ff_dim``,
    ``int(2 I / 3)``, times ``block_ffn_dim_multiplier`` (int), rounded up to
    ``block_multiple_of``; else ``I`` (vllm/model_executor/models/lfm2.py::Lfm2MLP, 0.33.0)."""
    if not auto_adjust:
        return intermediate_size
    width = int(2 * intermediate_size / 3)
    if multiplier is not None:
        width = int(multiplier * width)
    return multiple_of * -(-width // multiple_of)


@register
class Lfm2(RecurrentHybrid):
    """LFM2 / LFM2.5 dense: ``layer_types`` (or the older ``full_attn_idxs``) picks attention
    or a short convolution per layer; the LM head is always tied to the embedding."""

    architectures = ("Lfm2ForCausalLM",)
    attention_layer_name = "model.layers.{i}.self_attn.attn"
    mamba_layer_name = "model.layers.{i}.short_conv"

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        n = self.config.num_hidden_layers
        types = self.config.text.get("layer_types")
        if isinstance(types, list) and len(types) == n:
            bad = sorted({str(t) for t in types} - {"conv", "full_attention"})
            if bad:
                raise ModelConfigError(f"layer_types has unknown kinds {bad} (LFM2 has conv and full_attention)")
            return tuple("attention" if t == "full_attention" else "mamba" for t in types)
        idxs = self.config.text.get("full_attn_idxs")
        if isinstance(idxs, list):
            attn = {int(i) for i in idxs}
            return tuple("attention" if i in attn else "mamba" for i in range(n))
        raise ModelConfigError("config.json lacks 'layer_types' (or 'full_attn_idxs') for LFM2")

    @property
    def attention_head_size(self) -> int:
        # Lfm2Attention: head_dim = hidden_size // num_attention_heads
        return self.config.hidden_size // self.config.num_attention_heads

    def _conv_dim(self) -> int:
        return int(self._get("conv_dim", self.config.hidden_size))

    def _kernel(self) -> int:
        k = self.config.text.get("conv_L_cache")
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise ModelConfigError("config.json lacks 'conv_L_cache' (LFM2's short-convolution length)")
        return k

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Short-conv state (Lfm2ForCausalLM.get_mamba_state_shape_from_config /
        get_mamba_state_dtype_from_config, 0.33.0)."""
        conv, _ = state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, "auto")
        width = _divide(self._conv_dim(), ctx.tensor_parallel_size, "short-conv channels")
        return (StateTensor("conv", (self._kernel() - 1 + ctx.num_speculative_tokens, width), conv),)

    def ff_dim(self) -> int:
        mult = self.config.text.get("block_ffn_dim_multiplier")
        return lfm2_ff_dim(self.config.intermediate_size, int(self._get("block_multiple_of", 256)),
                           bool(self._get("block_auto_adjust_ff_dim", True)),
                           float(mult) if isinstance(mult, (int, float)) else None)

    @property
    def intermediate_size(self) -> int:
        return self.ff_dim()

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        tp, h, n = span.tp, span.hidden, span.layers
        lin, vec = self.linear, self.vector
        kinds = self.stage_kinds(span)
        n_attn, n_conv = kinds["attention"], kinds["mamba"]  # short convolutions are the recurrent kind
        out = embedding_tensors(span)
        if n_attn:
            hd = self.attention_head_size
            out += gqa_attention_tensors("self_attn", tp=tp, hidden=h, heads=cfg.num_attention_heads,
                                         kv_heads_local=self.attention_kv_heads(tp), head_dim=hd, count=n_attn,
                                         out_name="out_proj", norms=(vec("self_attn.q_layernorm+k_layernorm", hd, 2 * n_attn),))
            # one shared rotary cos/sin cache (get_rope), max_position_embeddings x head_dim
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", cfg.max_position_embeddings, hd))
        if n_conv:
            dim = self._conv_dim()
            dp = _divide(dim, tp, "short-conv channels")
            out += [
                # ShortConv.conv is a ColumnParallelLinear built without a quant config
                lin("short_conv.conv1d", dp, self._kernel(), n_conv, quantizable=False),
                lin("short_conv.in_proj", 3 * dp, dim, n_conv, in_full=dim),
                lin("short_conv.out_proj", dim, dp, n_conv, in_full=dim),
            ]
            if self._get("conv_bias", False):
                out += [vec("short_conv.conv1d.bias", dp, n_conv, kind="bias"),
                        vec("short_conv.in_proj.bias", 3 * dp, n_conv, kind="bias"),
                        vec("short_conv.out_proj.bias", dim, n_conv, kind="bias")]
        if n:
            out += mlp_tensors("feed_forward", tp=tp, hidden=int(self._get("block_dim", h)), inter=self.ff_dim(),
                               count=n, names=("w13", "w2"))
            out.append(vec("operator_norm+ffn_norm", h, 2 * n))
        # the head is tied; a last stage without the embedding holds its own copy
        return out + head_tensors(span, norm="model.embedding_norm", tied=True)
