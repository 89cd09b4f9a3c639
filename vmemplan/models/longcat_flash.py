"""LongCat-Flash (``LongcatFlashForCausalLM``, Meituan): two MLA attentions and two dense
MLPs per layer around one MoE block with zero (identity) experts.

Mirrors vllm/model_executor/models/longcat_flash.py (0.33.0): FlashDecoderLayer holds
``self_attn[0..1]`` (each deepseek_v2.py::DeepseekV2MLAAttention, so each its own latent
cache), ``input_layernorm[0..1]`` and ``post_attention_layernorm[0..1]``, ``mlps[0..1]``
(FlashMLP: gate_up_proj + down_proj of ``ffn_hidden_size``) and ``mlp`` (LongcatMoe): an
fp32 router ``classifier`` over ``n_routed_experts + zero_expert_num`` outputs with an fp32
``e_score_correction_bias`` of that length (LongcatRouter), and fused experts for the
``n_routed_experts`` real ones of ``expert_ffn_hidden_size`` (zero experts hold nothing).
FlashModel makes ``num_layers`` such layers (transformers' LongcatFlashConfig reports
``num_hidden_layers = 2 × num_layers``).  No shared experts; the MTP module is not counted.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import pp_layer_range, register
from vmemplan.models.mla_common import MlaDecoder
from vmemplan.models.moe_blocks import (
    gated_mlp_tensors,
    moe_expert_tensors,
    router_tensors,
    stage_embedding,
    stage_head,
)

__all__ = ["LongcatFlash"]


@register
class LongcatFlash(MlaDecoder):
    """Dual-MLA, dual-MLP LongCat-Flash layers (MlaDecoder per attention)."""

    architectures = ("LongcatFlashForCausalLM",)

    @property
    def num_layers(self) -> int:
        """FlashModel's layer count: ``num_layers`` (half of what ``num_hidden_layers`` reports)."""
        text = self.config.text
        if text.get("num_layers") is not None:
            return int(text["num_layers"])
        return int(text["num_hidden_layers"]) // 2

    def num_mtp_layers(self, ctx: GraphContext) -> int:
        return 0

    def _t(self, key: str, default: int | None = None) -> int:
        aliases = {"intermediate_size": "ffn_hidden_size", "moe_intermediate_size": "expert_ffn_hidden_size"}
        if key in aliases and self.config.text.get(aliases[key]) is not None:
            key = aliases[key]
        return super()._t(key, default)

    def _layer_indices(self, ctx: GraphContext) -> range:
        start, end = pp_layer_range(self.num_layers, ctx.pipeline_parallel_size, ctx.pipeline_rank)
        return range(start, end)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        text = self.config.text
        span = self.rank_span(ctx)  # its first/last and vocab rows; the layers are FlashModel's
        h, n = span.hidden, len(self._layer_indices(ctx))
        out = stage_embedding(span)
        if n:
            experts = int(text.get("n_routed_experts", 512))
            routes = experts + int(text.get("zero_expert_num", 0) or 0)
            out += self.attention_tensors(2 * n, ctx)  # self_attn[0] and self_attn[1]
            out += gated_mlp_tensors("mlps", self._t("intermediate_size"), h, 2 * n, span.tp)
            out += router_tensors("mlp.router.classifier", routes, h, n, dtype="float32",
                                  bias="mlp.router.e_score_correction_bias")
            out.append(WeightTensor("input_layernorm[2]+post_attention_layernorm[2]", "norm", h, 1, 4 * n))
            out += moe_expert_tensors("mlp.experts", num_experts=experts, hidden=h,
                                      inter=self._t("moe_intermediate_size"), num_layers=n, ctx=ctx)
            out.append(self.rope_cache(ctx))
        return out + stage_head(span)

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Two latent specs per layer, one per MLA attention (``self_attn.0`` / ``self_attn.1``)."""
        spec = self._mla_spec(ctx, ctx.cache_dtype)
        return {f"model.layers.{i}.self_attn.{j}.attn": spec for i in self._layer_indices(ctx) for j in (0, 1)}
