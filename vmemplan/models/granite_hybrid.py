"""IBM Granite 4.0 hybrids (``GraniteMoeHybridForCausalLM``): Mamba-2 and attention layers,
each followed by an optional routed MoE and an optional shared MLP.

Mirrors vllm/model_executor/models/granitemoehybrid.py (GraniteMoeHybridModel,
GraniteMoeHybridMambaDecoderLayer, GraniteMoeHybridAttentionDecoderLayer,
GraniteMoeHybridAttention), granitemoe.py::GraniteMoeMoE, granitemoeshared.py::
GraniteMoeSharedMLP and vllm/model_executor/layers/mamba/mamba_mixer2.py::MambaMixer2
(0.33.0).  ``layer_types`` lists "mamba" / "attention" per layer (transformers'
GraniteMoeHybridConfig); the Mamba-2 mixer is built with the model's quant config; the
attention has no rotary embedding unless ``position_embedding_type`` is "rope".
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register, rope_cache_positions
from vmemplan.models.hybrid import LayerKind, StateTensor
from vmemplan.models.mixer_blocks import (
    Mamba2Hybrid,
    embedding_tensors,
    fused_expert_tensors,
    gqa_attention_tensors,
    head_tensors,
    listed_layer_types,
    mamba2_layer_state,
    mamba2_mixer_tensors,
    mlp_tensors,
    need_int,
)

__all__ = ["GraniteMoeHybrid"]


def _need(text, key: str) -> int:
    return need_int(text, key, " (needed for the Mamba-2 layers)")


@register
class GraniteMoeHybrid(Mamba2Hybrid):
    """Granite 4.0-H: ``layer_types`` picks a Mamba-2 mixer or grouped-query attention per
    layer; every layer then runs ``block_sparse_moe`` (when ``num_local_experts`` > 0) and
    ``shared_mlp`` (when ``shared_intermediate_size`` > 0)."""

    architectures = ("GraniteMoeHybridForCausalLM",)
    attention_layer_name = "model.layers.{i}.self_attn.attn"
    mamba_layer_name = "model.layers.{i}.mixer"

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        table: dict[str, LayerKind] = {"mamba": "mamba", "attention": "attention"}
        types = listed_layer_types(self.config.text, self.config.num_hidden_layers, table, "Granite 4.0 hybrid")
        return tuple(table[t] for t in types)

    @property
    def family(self):  # type: ignore[override]
        return "moe" if self._get("num_local_experts", 0) else "dense"

    @property
    def attention_head_size(self) -> int:
        # GraniteMoeHybridAttention: head_dim = hidden_size // num_attention_heads
        return self.config.hidden_size // self.config.num_attention_heads

    def _inner(self) -> int:
        return int(self._get("mamba_expand", 2)) * self.config.hidden_size

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Mamba-2 state (GraniteMoeHybridForCausalLM.get_mamba_state_shape_from_config /
        get_mamba_state_dtype_from_config, 0.33.0)."""
        t = self.config.text
        return mamba2_layer_state(
            ctx, intermediate_size=self._inner(), n_groups=int(self._get("mamba_n_groups", 1)),
            num_heads=_need(t, "mamba_n_heads"), head_dim=_need(t, "mamba_d_head"),
            state_size=_need(t, "mamba_d_state"), conv_kernel=_need(t, "mamba_d_conv"),
        )

    @property
    def intermediate_size(self) -> int:
        e = int(self._get("num_local_experts", 0))
        routed = int(self._get("intermediate_size", 0)) * int(self._get("num_experts_per_tok", 1)) if e else 0
        return routed + int(self._get("shared_intermediate_size", 0))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg, t = self.config, self.config.text
        span = self.rank_span(ctx)
        tp, h, n = span.tp, span.hidden, span.layers
        hd = self.attention_head_size
        kinds = self.stage_kinds(span)
        out = embedding_tensors(span)
        if kinds["attention"]:
            bias = bool(self._get("attention_bias", False))
            out += gqa_attention_tensors("self_attn", tp=tp, hidden=h, heads=cfg.num_attention_heads,
                                         kv_heads_local=self.attention_kv_heads(tp), head_dim=hd,
                                         count=kinds["attention"], out_in_full=h, qkv_bias=bias, out_bias=bias)
            if self._get("position_embedding_type", "nope") == "rope":
                positions, _ = rope_cache_positions(cfg)
                out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, hd))
        if kinds["mamba"]:
            out += mamba2_mixer_tensors(
                tp=tp, hidden_size=h, intermediate_size=self._inner(), n_groups=int(self._get("mamba_n_groups", 1)),
                num_heads=_need(t, "mamba_n_heads"), state_size=_need(t, "mamba_d_state"),
                conv_kernel=_need(t, "mamba_d_conv"), use_conv_bias=bool(self._get("mamba_conv_bias", True)),
                use_bias=bool(self._get("mamba_proj_bias", False)), count=kinds["mamba"], prefix="mamba",
            )
        e = int(self._get("num_local_experts", 0))
        if n and e:
            out.append(WeightTensor("block_sparse_moe.gate", "router", e, h, n))
            out += fused_expert_tensors("block_sparse_moe.experts", num_experts=e, inter=_need(t, "intermediate_size"),
                                        hidden=h, count=n, ctx=ctx)
        shared = int(self._get("shared_intermediate_size", 0))
        if n and shared:
            out += mlp_tensors("shared_mlp", tp=tp, hidden=h, inter=shared, count=n,
                               names=("input_linear", "output_linear"))
        if n:
            out.append(self.vector("input_layernorm+post_attention_layernorm", h, 2 * n))
        return out + head_tensors(span, tied=cfg.tie_word_embeddings)
