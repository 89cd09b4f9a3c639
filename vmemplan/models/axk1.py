"""A.X K1 (``AXK1ForCausalLM``, SK Telecom): DeepSeek-V3's MLA + MoE decoder with a third
RMSNorm per layer.

Mirrors vllm/model_executor/models/AXK1.py (0.33.0): AXK1MLAAttention is DeepSeek-V2's MLA
(a replicated fused ``q_a_proj + kv_a_proj_with_mqa`` with a ``q_lora_rank``), AXK1MoE
DeepSeek's MoE block (a model-dtype GateLinear router, an fp32 ``e_score_correction_bias``
when ``topk_method`` is ``noaux_tc``, which is also its default), and AXK1DecoderLayer adds a
``post_mlp_layernorm`` to every layer.  Dense and sparse layers follow ``mlp_layer_types``,
else ``first_k_dense_replace`` (default 1, transformers' AXK1Config) and ``moe_layer_freq``
(_get_mlp_layer_types).  No MTP module is registered for it in 0.33.0.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.mla_common import MlaDecoder

__all__ = ["AXK1"]


@register
class AXK1(MlaDecoder):
    """MlaDecoder with AXK1's layer types, router-bias default and post-MLP norm."""

    architectures = ("AXK1ForCausalLM",)

    def is_moe_layer(self, index: int) -> bool:
        text = self.config.text
        if not text.get("n_routed_experts"):
            return False
        types = text.get("mlp_layer_types")
        if isinstance(types, list) and index < len(types):
            return types[index] == "sparse"
        first = int(text.get("first_k_dense_replace", 1) if text.get("first_k_dense_replace") is not None else 1)
        freq = int(text.get("moe_layer_freq", 1) or 1)
        return index >= first and index % freq == 0

    def num_mtp_layers(self, ctx: GraphContext) -> int:
        return 0

    def mlp_tensors(self, dense: int, moe: int, ctx: GraphContext) -> list[WeightTensor]:
        out = super().mlp_tensors(dense, moe, ctx)
        text = self.config.text
        if moe and text.get("topk_method") is None:  # AXK1MoE: getattr(config, "topk_method", "noaux_tc")
            out.append(WeightTensor("mlp.gate.e_score_correction_bias", "router", int(text["n_routed_experts"]), 1,
                                    moe, dtype="float32"))
        return out

    def extra_layer_tensors(self, n: int, ctx: GraphContext) -> list[WeightTensor]:
        return [WeightTensor("post_mlp_layernorm", "norm", self.config.hidden_size, 1, n)]
