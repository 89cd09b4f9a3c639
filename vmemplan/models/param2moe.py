"""Param2MoE (BharatGen Param-2): a Bailing-shaped MoE with an fp32 router and RMSNorm q/k norms.

Mirrors vllm/model_executor/models/param2moe.py (0.33.0):

* ``Param2MoEAttention``: ``qkv_proj`` (QKVParallelLinear, bias with ``use_qkv_bias``),
  ``o_proj`` (RowParallelLinear, bias with ``use_bias``), ``head_dim`` from the config, RMSNorm
  ``q_layernorm`` / ``k_layernorm`` over one head with ``use_qk_norm``, ``get_rope`` over
  ``head_dim × partial_rotary_factor``; the KV heads must divide the tensor-parallel size
  (it asserts ``num_key_value_heads % tp == 0``: no replication);
* ``Param2MoEMLP`` (merged ``gate_up_proj``, ``down_proj``, no biases) on the layers below
  ``first_k_dense_replace`` (default 1);
* ``Param2MoEMoEBlock`` on the others: a GateLinear router in fp32 ``[E, H]``, an fp32
  ``e_score_correction_bias [E]`` unless ``moe_router_enable_expert_bias`` is false, the routed
  experts of ``moe_intermediate_size``, and ``num_shared_experts`` shared experts as one
  Param2MoEMLP of ``moe_shared_expert_intermediate_size`` (already the total when the key is set)
  or ``moe_intermediate_size × num_shared_experts``;
* ``embed_tokens`` on the first stage (and the last when tied), ``norm``, ``lm_head`` tied when
  ``tie_word_embeddings``.
"""

from __future__ import annotations

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.bailing_moe import BailingMoe
from vmemplan.models.base import register
from vmemplan.models.moe import _int

__all__ = ["Param2MoE"]


@register
class Param2MoE(BailingMoe):
    """Param2MoEForCausalLM (vllm/model_executor/models/param2moe.py, 0.33.0); see the module."""

    architectures = ("Param2MoEForCausalLM",)

    def qkv_bias(self) -> bool:
        return bool(self.config.text.get("use_qkv_bias", False))

    def o_bias(self) -> bool:
        return bool(self.config.text.get("use_bias", False))

    def mlp_bias(self) -> bool:
        return False

    @property
    def router_dtype(self) -> str | None:  # type: ignore[override]
        return "float32"

    @property
    def router_correction_bias(self) -> bool:  # type: ignore[override]
        return bool(self.config.text.get("moe_router_enable_expert_bias", True))

    def shared_intermediate(self) -> int:
        text = self.config.text
        n = _int(text, "num_shared_experts", default=1)
        if n <= 0:
            return 0
        total = text.get("moe_shared_expert_intermediate_size")
        if total is not None:
            return _int(text, "moe_shared_expert_intermediate_size")
        return self.expert_intermediate() * n

    def is_moe_layer(self, index: int) -> bool:
        if self.config.text.get("num_experts") is None:
            return False
        return index >= _int(self.config.text, "first_k_dense_replace", default=1)

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        tp = ctx.tensor_parallel_size
        kv = self.config.num_key_value_heads
        if kv % tp:
            raise UsageError(f"--tensor-parallel-size {tp} does not divide the {kv} KV heads",
                             hint="Param2MoEAttention asserts num_key_value_heads % tp_size == 0 "
                                  "(it never replicates KV heads)")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        # q_layernorm / k_layernorm are RMSNorms: no LayerNorm bias
        return [t for t in out if t.name != "attention.query_layernorm+key_layernorm.bias"]
