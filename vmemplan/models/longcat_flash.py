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
from vmemplan.models.base import register
from vmemplan.models.deepseek import moe_expert_tensors
from vmemplan.models.dense import pad_vocab, pp_layer_range
from vmemplan.models.mla_common import MlaDecoder

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
        cfg = self.config
        text = cfg.text
        tp = ctx.tensor_parallel_size
        h = cfg.hidden_size
        layers = self._layer_indices(ctx)
        n = len(layers)
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        out: list[WeightTensor] = []
        if first:
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        if n:
            ffn = self._t("intermediate_size")
            experts = int(text.get("n_routed_experts", 512))
            routes = experts + int(text.get("zero_expert_num", 0) or 0)
            out += self.attention_tensors(2 * n, ctx)  # self_attn[0] and self_attn[1]
            out += [
                WeightTensor("mlps.gate_up_proj", "linear", 2 * ffn // tp, h, 2 * n, True, in_features_full=h),
                WeightTensor("mlps.down_proj", "linear", h, ffn // tp, 2 * n, True, in_features_full=ffn),
                WeightTensor("mlp.router.classifier", "router", routes, h, n, dtype="float32"),
                WeightTensor("mlp.router.e_score_correction_bias", "router", routes, 1, n, dtype="float32"),
                WeightTensor("input_layernorm[2]+post_attention_layernorm[2]", "norm", h, 1, 4 * n),
            ]
            out += moe_expert_tensors("mlp.experts", num_experts=experts, hidden=h,
                                      inter=self._t("moe_intermediate_size"), num_layers=n, ctx=ctx)
            out.append(self.rope_cache(ctx))
        if last:
            out.append(WeightTensor("model.norm", "norm", h, 1))
            out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Two latent specs per layer, one per MLA attention (``self_attn.0`` / ``self_attn.1``)."""
        spec = self._mla_spec(ctx, ctx.cache_dtype)
        return {f"model.layers.{i}.self_attn.{j}.attn": spec for i in self._layer_indices(ctx) for j in (0, 1)}
