"""DeepSeek-MoE (v1): ordinary multi-head attention with DeepSeek's MoE block.

``DeepseekForCausalLM`` (deepseek-ai/deepseek-moe-16b-base / -chat, model_type ``deepseek``)
maps in vLLM 0.33.0 to vllm/model_executor/models/deepseek_v2.py::DeepseekForCausalLM, a
plain subclass of DeepseekV2ForCausalLM.  DeepseekV2DecoderLayer picks its attention by
``use_mha = config.model_type == "deepseek" or (qk_nope_head_dim, qk_rope_head_dim) are both
0``: then the layer is ``DeepseekAttention`` ("Normal MHA implementation used by Deepseek v1"),
not MLA.  Per layer on one rank:

* DeepseekAttention: a ``QKVParallelLinear`` of head size ``hidden_size // num_heads`` and an
  ``o_proj`` (RowParallelLinear), both without bias whatever the config says, a rotary
  cache from ``get_rope(head_dim, max_position_embeddings, rope_parameters)`` and an ordinary
  ``Attention`` (full-attention KV cache of the per-rank KV heads; four fp32 scale scalars);
* DeepseekV2MoE where ``n_routed_experts`` is set, the layer index is at least
  ``first_k_dense_replace`` and a multiple of ``moe_layer_freq``: a GateLinear router in the
  model dtype (vLLM passes only an ``out_dtype``), an fp32 ``e_score_correction_bias`` under
  ``topk_method: noaux_tc``, the routed experts of ``moe_intermediate_size`` and one
  tensor-parallel shared MLP of ``moe_intermediate_size × n_shared_experts``;
  DeepseekV2MLP of ``intermediate_size`` elsewhere;
* two RMSNorms.

This adapter is the Llama-shaped :class:`vmemplan.models.moe.MoEDecoder` with those rules;
the MLA adapter (:mod:`vmemplan.models.deepseek`) covers the V2/V3 architectures.
"""

from __future__ import annotations

from vmemplan.models.base import register
from vmemplan.models.moe import MoEDecoder, _int

__all__ = ["DeepseekMoEMHA"]


@register
class DeepseekMoEMHA(MoEDecoder):
    """DeepSeek-MoE 16B and its kin (``DeepseekForCausalLM``): see the module docstring."""

    architectures = ("DeepseekForCausalLM",)
    # DeepseekAttention builds qkv_proj and o_proj with bias=False; DeepseekV2MLP likewise.
    attn_qkv_bias = attn_o_bias = mlp_has_bias = False

    @property
    def router_correction_bias(self) -> bool:  # type: ignore[override]
        """DeepseekV2MoE.__init__: an fp32 ``gate.e_score_correction_bias`` only under
        ``topk_method == "noaux_tc"``."""
        return self.config.text.get("topk_method") == "noaux_tc"

    def num_experts(self) -> int:
        return _int(self.config.text, "n_routed_experts")

    def shared_intermediate(self) -> int:
        """DeepseekV2MoE: one shared DeepseekV2MLP of ``moe_intermediate_size × n_shared_experts``
        (none when ``n_shared_experts`` is null)."""
        return _int(self.config.text, "n_shared_experts") * self.expert_intermediate()

    def is_moe_layer(self, index: int) -> bool:
        """DeepseekV2DecoderLayer.__init__: ``n_routed_experts is not None and layer_idx >=
        first_k_dense_replace and layer_idx % moe_layer_freq == 0``."""
        text = self.config.text
        if text.get("n_routed_experts") is None:
            return False
        freq = _int(text, "moe_layer_freq", default=1) or 1
        return index >= _int(text, "first_k_dense_replace") and index % freq == 0
