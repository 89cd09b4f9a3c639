"""The decode-time copies and scales every MLA layer holds beside its projections.

* ``W_UK_T`` ``[heads/tp, qk_nope_head_dim, kv_lora_rank]`` and ``W_UV`` ``[heads/tp,
  kv_lora_rank, v_head_dim]``: ``kv_b_proj`` split per head in the activation dtype, made by
  vllm/model_executor/layers/attention/mla_attention.py::MLAAttention.process_weights_after_loading
  with split_kv_b_proj (0.33.0).  From a quantized ``kv_b_proj`` they are a dequantized copy (new
  memory); from an unquantized one they are views of its weight (``weight.to(act_dtype)`` of the
  same dtype is the weight itself) wrapped by ``replace_parameter`` in parameters sharing its
  storage: ``WeightTensor.copy_of`` lets the weights law decide.
* the four fp32 scale scalars ``_k_scale/_v_scale/_q_scale/_prob_scale`` of each attention
  layer (vllm/model_executor/layers/attention/attention.py::set_default_quant_scales).
"""

from __future__ import annotations

from vmemplan.core.graph import WeightTensor, attention_scales

__all__ = ["mla_decode_copies"]


def mla_decode_copies(n: int, *, heads_local: int, kv_lora_rank: int, qk_nope_head_dim: int,
                      v_head_dim: int, source: str = "self_attn.kv_b_proj") -> list[WeightTensor]:
    """``W_UK_T`` and ``W_UV`` of ``n`` MLA layers (copies of ``source``) plus each layer's four
    fp32 scales."""
    return [
        WeightTensor("self_attn.mla_attn.W_UK_T", "buffer", heads_local * qk_nope_head_dim, kv_lora_rank, n,
                     copy_of=source),
        WeightTensor("self_attn.mla_attn.W_UV", "buffer", heads_local * kv_lora_rank, v_head_dim, n, copy_of=source),
        attention_scales("self_attn.mla_attn", n),
    ]
