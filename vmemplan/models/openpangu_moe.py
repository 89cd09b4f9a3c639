"""openPangu MoE decoders (``PanguUltraMoEForCausalLM``, ``PanguProMoEV2ForCausalLM``) on their
MLA path.

Mirrors vllm/model_executor/models/openpangu.py (0.33.0).  OpenPanguDecoderLayer takes MLA
(OpenPanguMLAAttention) when the config has ``qk_nope_head_dim``, ``qk_rope_head_dim``,
``v_head_dim`` and ``kv_lora_rank``: DeepSeek-V2's projections (a replicated fused
``q_a_proj + kv_a_proj_with_mqa`` with a ``q_lora_rank``, else a column-parallel ``q_proj`` and a
replicated ``kv_a_proj_with_mqa``; ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``) around
MultiHeadLatentAttentionWrapper, so one latent cache per layer and the decode copies of
:mod:`vmemplan.models.mla_copies`.  Its rotary embedding is a DeepSeek YaRN of factor 1 whatever
the config says (``original_max_position_embeddings = max_position_embeddings``): a cache of
``[max_position_embeddings, qk_rope_head_dim]``.

Layers at or past ``first_k_dense_replace`` hold OpenPanguMoE when ``n_routed_experts`` is set: a
GateLinear router in the model dtype, an fp32 ``e_score_correction_bias`` only under
``router_enable_expert_bias``, a TP-split shared expert of ``moe_intermediate_size ×
n_shared_experts`` when ``n_shared_experts`` is not None, and the fused experts.  The others hold
OpenPanguMLP (biased under ``mlp_bias``).  Two RMSNorms per layer, four under ``sandwich_norm``.
The MTP layers are the separate OpenPanguMTP drafter (not counted here).
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.deepseek import DeepseekMLA

__all__ = ["OpenPanguMoE"]


@register
class OpenPanguMoE(DeepseekMLA):
    """openPangu-Ultra-MoE / Pro-MoE-V2 with MLA attention (DeepseekMLA with openPangu's MoE keys,
    sandwich norms and its fixed rotary table)."""

    architectures = ("PanguUltraMoEForCausalLM", "PanguProMoEV2ForCausalLM")

    def is_moe_layer(self, index: int) -> bool:
        """OpenPanguDecoderLayer: MoE when ``n_routed_experts`` is not None and the layer is at or
        past ``first_k_dense_replace`` (no stride)."""
        text = self.config.text
        if text.get("n_routed_experts") is None:
            return False
        first = text.get("first_k_dense_replace")
        return index >= int(first if first is not None else self.config.num_hidden_layers)

    def num_mtp_layers(self, ctx: GraphContext) -> int:
        return 0

    def mlp_tensors(self, dense: int, moe: int, ctx: GraphContext) -> list[WeightTensor]:
        text = self.config.text
        h = self.config.hidden_size
        tp = ctx.tensor_parallel_size
        out = [t for t in super().mlp_tensors(dense, moe, ctx) if t.name != "mlp.gate.e_score_correction_bias"]
        if dense and text.get("mlp_bias"):
            inter = self.config.intermediate_size
            out += [
                WeightTensor("mlp.gate_up_proj.bias", "bias", 2 * inter // tp, 1, dense),
                WeightTensor("mlp.down_proj.bias", "bias", h, 1, dense),
            ]
        if moe and text.get("router_enable_expert_bias"):
            out.append(WeightTensor("mlp.gate.e_score_correction_bias", "router", int(text["n_routed_experts"]), 1,
                                    moe, dtype="float32"))
        return out

    def extra_layer_tensors(self, n: int, ctx: GraphContext) -> list[WeightTensor]:
        if self.config.text.get("sandwich_norm"):
            return [WeightTensor("pre_mlp_layernorm+post_mlp_layernorm", "norm", self.config.hidden_size, 1, 2 * n)]
        return []

    def rope_cache(self, ctx: GraphContext | None = None) -> WeightTensor:
        """OpenPanguMLAAttention's DeepSeek YaRN of factor 1: ``max_position_embeddings`` rows (in
        fp32 under the rotary custom op, as :meth:`DeepseekMLA.rope_cache`)."""
        t = super().rope_cache(ctx)
        positions = int(self.config.text.get("max_position_embeddings") or 8192)
        return WeightTensor(t.name, t.kind, positions, t.cols, dtype=t.dtype)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if self.config.tie_word_embeddings and ctx.pipeline_rank == 0:
            # ParallelLMHead.tie_weights: the head is the embedding's storage
            out = [t for t in out if t.name != "lm_head"]
        return out
