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
    first_dense_default = 1

    def is_moe_layer(self, index: int) -> bool:
        types = self.config.text.get("mlp_layer_types")
        if isinstance(types, list) and index < len(types) and self.config.text.get("n_routed_experts"):
            return types[index] == "sparse"
        return super().is_moe_layer(index)

    def num_mtp_layers(self, ctx: GraphContext) -> int:
        return 0

    def router_bias(self) -> bool:
        # AXK1MoE: getattr(config, "topk_method", "noaux_tc")
        return self.config.text.get("topk_method") in (None, "noaux_tc")

    def extra_layer_tensors(self, n: int, ctx: GraphContext) -> list[WeightTensor]:
        return [WeightTensor("post_mlp_layernorm", "norm", self.config.hidden_size, 1, n)]
