"""GLM-4.7-Flash (``Glm4MoeLiteForCausalLM``): DeepSeek-V2's MLA attention with GLM-4.5's MoE.

Mirrors vllm/model_executor/models/glm4_moe_lite.py (0.33.0): Glm4MoeLiteDecoderLayer takes
its attention from deepseek_v2.py (Glm4MoeLiteMLAAttention is DeepseekV2MLAAttention) and
its MoE block from glm4_moe.py::Glm4MoE (Glm4MoeLite): an fp32 GateLinear router and an
fp32 ``e_score_correction_bias`` on every MoE layer, whatever ``topk_method`` says.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.mla_common import MlaDecoder

__all__ = ["Glm4MoeLite"]


@register
class Glm4MoeLite(MlaDecoder):
    """MlaDecoder (DeepseekMLA with the decode copies) with GLM's router: ``mlp.gate`` ``[n_routed_experts, hidden]`` in fp32
    (glm4_moe.py::Glm4MoE, ``GateLinear(params_dtype=torch.float32)``) and its fp32
    correction bias on every MoE layer."""

    architectures = ("Glm4MoeLiteForCausalLM",)

    def mlp_tensors(self, dense: int, moe: int, ctx: GraphContext) -> list[WeightTensor]:
        out = []
        for t in super().mlp_tensors(dense, moe, ctx):
            if t.name == "mlp.gate.e_score_correction_bias":
                continue
            if t.name == "mlp.gate":
                out.append(WeightTensor("mlp.gate", "router", t.rows, t.cols, t.count, dtype="float32"))
                out.append(WeightTensor("mlp.gate.e_score_correction_bias", "router", t.rows, 1, t.count,
                                        dtype="float32"))
                continue
            out.append(t)
        return out
