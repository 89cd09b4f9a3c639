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
from vmemplan.models.hybrid import experts_per_rank
from vmemplan.models.lfm2 import Lfm2

__all__ = ["Lfm2Moe"]


def _need(text, key: str) -> int:
    value = text.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelConfigError(f"config.json lacks {key!r}")
    return value


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
        tp = ctx.tensor_parallel_size
        h = self.config.hidden_size
        start, end = self.layer_range(ctx)
        n_dense = sum(1 for i in range(start, end) if i < self._n_dense())
        n_moe = (end - start) - n_dense
        if n_dense:
            ff = _need(t, "intermediate_size")
            out += [
                self.linear("feed_forward.w13", 2 * ff // tp, h, n_dense, in_full=h),
                self.linear("feed_forward.w2", h, ff // tp, n_dense, in_full=ff),
            ]
        if n_moe:
            e = _need(t, "num_experts")
            inter = _need(t, "moe_intermediate_size")
            local, div = experts_per_rank(e, ctx)
            out += [
                WeightTensor("feed_forward.gate", "router", e, h, n_moe),
                WeightTensor("feed_forward.experts.w13", "expert", 2 * inter // div, h, local * n_moe, True,
                             in_features_full=h, allocations=n_moe),
                WeightTensor("feed_forward.experts.w2", "expert", h, inter // div, local * n_moe, True,
                             in_features_full=inter, allocations=n_moe),
            ]
            if self._get("use_expert_bias", False):
                out.append(self.vector("feed_forward.gate.e_score_correction_bias", e, n_moe,
                                       kind="bias", dtype="float32"))
        return out
