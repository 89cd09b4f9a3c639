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
from vmemplan.models.deepseek import moe_expert_tensors, shared_expert_tensors
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

    def mlp_tensors(self, dense: int, moe: int, ctx: GraphContext) -> list[WeightTensor]:
        text = self.config.text
        tp = ctx.tensor_parallel_size
        h = self.config.hidden_size
        out: list[WeightTensor] = []
        if dense:
            inter = int(text.get("intermediate_size") or 16384)
            out += [
                WeightTensor("mlp.gate_up_proj", "linear", 2 * inter // tp, h, dense, True, in_features_full=h),
                WeightTensor("mlp.down_proj", "linear", h, inter // tp, dense, True, in_features_full=inter),
            ]
        if moe:
            experts = int(text["num_experts"])
            moe_inter = int(text["moe_intermediate_size"])
            out.append(WeightTensor("mlp.gate", "router", experts, h, moe))
            if text.get("moe_router_enable_expert_bias", True):
                out.append(WeightTensor("mlp.gate.e_score_correction_bias", "router", experts, 1, moe,
                                        dtype="float32"))
            shared = text.get("num_shared_experts", 1)
            shared_inter = text.get("moe_shared_expert_intermediate_size") or moe_inter
            out += shared_expert_tensors("mlp.shared_experts", shared=int(shared or 0), moe_inter=int(shared_inter),
                                         hidden=h, num_layers=moe, ctx=ctx)
            out += moe_expert_tensors("mlp.experts", num_experts=experts, hidden=h, inter=moe_inter,
                                      num_layers=moe, ctx=ctx)
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if self.config.tie_word_embeddings and ctx.pipeline_rank == 0:
            out = [t for t in out if t.name != "lm_head"]  # ParallelLMHead.tie_weights
        return out
