"""What one rank holds for an MLA layer beyond its projections, for the MLA families built
on :class:`~vmemplan.models.deepseek.DeepseekMLA` (GLM-4.7-Flash, MiniCPM3, ...).

* ``W_UK_T`` ``[heads/tp, qk_nope_head_dim, kv_lora_rank]`` and ``W_UV`` ``[heads/tp,
  kv_lora_rank, v_head_dim]``: the decode-time copies of ``kv_b_proj`` split per head, in
  the activation dtype, which vllm/model_executor/layers/attention/mla_attention.py::
  MLAAttention.process_weights_after_loading makes with split_kv_b_proj (0.33.0).  Together
  they are as many elements as ``kv_b_proj`` itself.
* the four fp32 scale scalars ``_k_scale/_v_scale/_q_scale/_prob_scale`` of each attention
  layer (vllm/model_executor/layers/attention/attention.py::set_default_quant_scales).
* the rotary cache: ``[max_position, qk_rope_head_dim]`` in the model dtype for the default
  rope (vllm/model_executor/layers/rotary_embedding/base.py::RotaryEmbedding); DeepSeek's
  YaRN keeps the family's fp32 (see DeepseekMLA.rope_cache).
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.deepseek import DeepseekMLA

__all__ = ["MlaDecoder", "mla_decode_copies"]


def mla_decode_copies(n: int, *, heads_local: int, kv_lora_rank: int, qk_nope_head_dim: int,
                      v_head_dim: int, source: str = "self_attn.kv_b_proj") -> list[WeightTensor]:
    """``W_UK_T`` and ``W_UV`` of ``n`` MLA layers plus each layer's four fp32 scales.

    The two copies hold memory of their own only when ``source`` (``kv_b_proj``) is quantized:
    split_kv_b_proj dequantizes it into a new tensor; from an unquantized ``kv_b_proj`` it returns
    views (``weight.to(act_dtype)`` of the same dtype is the weight itself) and
    ``replace_parameter`` wraps them in parameters sharing its storage (vllm/model_executor/
    layers/attention/mla_attention.py::MLAAttention.process_weights_after_loading, 0.33.0).
    ``WeightTensor.copy_of`` lets the weights law decide."""
    return [
        WeightTensor("self_attn.mla_attn.W_UK_T", "buffer", heads_local * qk_nope_head_dim, kv_lora_rank, n,
                     copy_of=source),
        WeightTensor("self_attn.mla_attn.W_UV", "buffer", heads_local * kv_lora_rank, v_head_dim, n, copy_of=source),
        WeightTensor("self_attn.mla_attn.k/v/q/prob_scale", "buffer", 1, 1, 4 * n, dtype="float32"),
    ]


class MlaDecoder(DeepseekMLA):
    """DeepseekMLA plus the decode-time copies and scales of every MLA layer, and the rotary
    cache in the model dtype unless the config asks for DeepSeek's YaRN.  Not registered:
    the families subclass it."""

    architectures = ()

    def rope_type(self) -> str:
        rs = self.config.rope_scaling() or {}
        return str(rs.get("rope_type", rs.get("type", "default")) or "default")

    def rope_cache(self, ctx: GraphContext | None = None) -> WeightTensor:
        t = super().rope_cache(ctx)
        if self.rope_type() in ("default", "none"):
            return WeightTensor(t.name, t.kind, self.config.max_position_embeddings, t.cols)
        return t
