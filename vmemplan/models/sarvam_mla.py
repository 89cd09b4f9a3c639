"""Sarvam-105B (``SarvamMLAForCausalLM``, Sarvam AI): DeepSeek-V2's MLA attention with Sarvam's
MoE keys.

Mirrors vllm/model_executor/models/sarvam.py (0.33.0):

* SarvamMLAAttention: with a ``q_lora_rank`` a replicated ``q_a_proj``, ``q_a_layernorm`` and a
  column-parallel ``q_b_proj``, else a column-parallel ``q_proj``; a replicated
  ``kv_a_proj_with_mqa`` (not fused with ``q_a_proj``: the same bytes), ``kv_a_layernorm``,
  ``kv_b_proj``, ``o_proj`` and MultiHeadLatentAttentionWrapper (one latent cache per layer, the
  decode copies of :mod:`vmemplan.models.mla_copies`).  Its rotary embedding is ``get_rope`` of
  the config's ``rope_parameters`` (default: ``max_position_embeddings`` rows; YaRN:
  ``original_max_position_embeddings × factor``).
* SarvamMLABlock: MoE when ``num_experts`` is set, the layer is at or past
  ``first_k_dense_replace`` (default 1) and on the ``moe_layer_freq`` stride counted from it;
  else SarvamMLAMLP of ``intermediate_size`` (default 16384).
* SarvamMLAMoE: a GateLinear router in the model dtype, an fp32 ``e_score_correction_bias``
  unless ``moe_router_enable_expert_bias`` is false (on by default), a TP-split shared expert of
  ``(moe_shared_expert_intermediate_size or moe_intermediate_size) × num_shared_experts``
  (default 1) and fused experts of ``moe_intermediate_size``.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.mla_common import MlaDecoder

__all__ = ["SarvamMLA"]


@register
class SarvamMLA(MlaDecoder):
    """MlaDecoder with Sarvam's layer pattern and MoE keys."""

    architectures = ("SarvamMLAForCausalLM",)

    def is_moe_layer(self, index: int) -> bool:
        text = self.config.text
        if text.get("num_experts") is None:
            return False
        first = text.get("first_k_dense_replace")
        first = 1 if first is None else int(first)
        freq = int(text.get("moe_layer_freq", 1) or 1)
        return index >= first and (index - first) % freq == 0

    def num_mtp_layers(self, ctx: GraphContext) -> int:
        return 0

    def dense_intermediate(self) -> int:
        return int(self.config.text.get("intermediate_size") or 16384)

    def num_routed_experts(self) -> int:
        return int(self.config.text["num_experts"])

    def shared_experts(self) -> tuple[int, int]:
        text = self.config.text
        width = text.get("moe_shared_expert_intermediate_size") or self._t("moe_intermediate_size")
        return int(text.get("num_shared_experts", 1) or 0), int(width)

    def router_bias(self) -> bool:
        return bool(self.config.text.get("moe_router_enable_expert_bias", True))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if self.config.tie_word_embeddings and ctx.pipeline_rank == 0:
            out = [t for t in out if t.name != "lm_head"]  # ParallelLMHead.tie_weights
        return out
