"""Liquid AI LFM2-MoE (``Lfm2MoeForCausalLM``): LFM2's short-convolution and attention
layers (:class:`vmemplan.models.lfm2.Lfm2`) with a dense SwiGLU in the first
``num_dense_layers`` layers and a sigmoid-routed MoE (fp32 expert-score bias) after.

Mirrors vllm/model_executor/models/lfm2_moe.py (Lfm2MoeMlp, Lfm2MoeSparseMoeBlock,
Lfm2MoeAttention, Lfm2MoeAttentionDecoderLayer, Lfm2MoeShortConvDecoderLayer, Lfm2MoeModel,
Lfm2MoeForCausalLM) with vllm/model_executor/layers/mamba/short_conv.py::ShortConv (0.33.0).
"""

from __future__ import annotations

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.lfm2 import Lfm2
from vmemplan.models.mixer_blocks import fused_expert_tensors, mlp_tensors
from vmemplan.models.mixer_blocks import need_int as _need

__all__ = ["Lfm2Moe"]


@register
class Lfm2Moe(Lfm2):
    """LFM2-MoE: LFM2's layers; feed-forward dense (``intermediate_size``, no auto-adjust) in
    layers ``< num_dense_layers``, else ``Lfm2MoeSparseMoeBlock`` (GateLinear router, fp32
    ``e_score_correction_bias`` when ``use_expert_bias``, FusedMoE of ``num_experts`` x
    ``moe_intermediate_size``).  The short convolution is ``hidden_size`` wide
    (Lfm2MoeShortConvDecoderLayer passes ``dim=hidden_size``; lfm2_moe.py, 0.33.0)."""

    architectures = ("Lfm2MoeForCausalLM",)
    family = "moe"

    def _conv_dim(self) -> int:
        return self.config.hidden_size

    def _n_dense(self) -> int:
        return int(self._get("num_dense_layers", 0))

    @property
    def intermediate_size(self) -> int:
        return int(self._get("moe_intermediate_size", 0)) * int(self._get("num_experts_per_tok", 1))

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        e = _need(self.config.text, "num_experts")
        if ctx.tensor_parallel_size > e:
            # Lfm2MoeSparseMoeBlock.__init__ refuses tp > num_experts
            raise ModelConfigError(f"--tensor-parallel-size {ctx.tensor_parallel_size} exceeds the {e} experts")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = [t for t in super().weight_tensors(ctx) if not t.name.startswith("feed_forward.")]
        t = self.config.text
        span = self.rank_span(ctx)
        n_dense = sum(1 for i in range(span.start, span.end) if i < self._n_dense())
        n_moe = span.layers - n_dense
        if n_dense:
            out += mlp_tensors("feed_forward", tp=span.tp, hidden=span.hidden, inter=_need(t, "intermediate_size"),
                               count=n_dense, names=("w13", "w2"))
        if n_moe:
            e = _need(t, "num_experts")
            out.append(WeightTensor("feed_forward.gate", "router", e, span.hidden, n_moe))
            out += fused_expert_tensors("feed_forward.experts", num_experts=e, inter=_need(t, "moe_intermediate_size"),
                                        hidden=span.hidden, count=n_moe, ctx=ctx)
            if self._get("use_expert_bias", False):
                out.append(self.vector("feed_forward.gate.e_score_correction_bias", e, n_moe,
                                       kind="bias", dtype="float32"))
        return out
