"""Bailing MoE (Ling / Ring, V1 and V2): vllm/model_executor/models/bailing_moe.py (0.33.0).

``BailingMoeForCausalLM`` and ``BailingMoeV2ForCausalLM`` (a subclass with no change) build:

* BailingAttention: a fused ``query_key_value`` (QKVParallelLinear, bias when ``use_bias`` or
  ``use_qkv_bias``), ``dense`` (RowParallelLinear, bias when ``use_bias``), ``head_dim`` from the
  config or ``hidden_size // num_attention_heads``, and with ``use_qk_norm`` a
  ``query_layernorm`` / ``key_layernorm`` over one head: an RMSNorm when ``use_rmsnorm``, else an
  ``nn.LayerNorm`` (a weight and a bias); the rotary width is ``rotary_dim`` or
  ``head_dim × partial_rotary_factor``;
* layers below ``first_k_dense_replace``: BailingMLP (``gate_up_proj`` / ``down_proj`` of
  ``intermediate_size``, biases with ``use_bias``); the others BailingMoE: a GateLinear router
  ``[E, H]`` in ``router_dtype`` (``fp32`` → float32, any other value → bfloat16, absent → the
  model dtype), an fp32 ``expert_bias [E]`` when ``moe_router_enable_expert_bias``, the routed
  experts of ``moe_intermediate_size``, and shared experts as one BailingMLP of
  ``moe_shared_expert_intermediate_size`` (when the key exists, else ``moe_intermediate_size``)
  × ``num_shared_experts``;
* ``word_embeddings`` on the first stage (and on the last when tied), ``norm``, ``lm_head``.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.moe import MoEDecoder, _int
from vmemplan.models.moe_blocks import LinearBiasFlags, gated_mlp_biases

__all__ = ["BailingMoe"]


@register
class BailingMoe(LinearBiasFlags, MoEDecoder):
    """Ling-lite / Ling-plus (V1) and Ling-mini / flash 2.0 (V2)."""

    architectures = ("BailingMoeForCausalLM", "BailingMoeV2ForCausalLM")
    dense_mlp_biases = True  # under use_bias

    # -- switches read from the config ---------------------------------------------------
    linear_bias_key, qkv_bias_key = "use_bias", "use_qkv_bias"

    @property
    def router_dtype(self) -> str | None:  # type: ignore[override]
        value = self.config.text.get("router_dtype")
        if value is None:
            return None
        return "float32" if value == "fp32" else "bfloat16"

    @property
    def router_correction_bias(self) -> bool:  # type: ignore[override]
        return bool(self.config.text.get("moe_router_enable_expert_bias", False))

    # -- MoE facts -----------------------------------------------------------------------
    def num_experts(self) -> int:
        return _int(self.config.text, "num_experts")

    def shared_intermediate(self) -> int:
        text = self.config.text
        n = _int(text, "num_shared_experts")
        if n <= 0:
            return 0
        per = _int(text, "moe_shared_expert_intermediate_size", default=self.expert_intermediate()) \
            if "moe_shared_expert_intermediate_size" in text else self.expert_intermediate()
        return per * n

    def is_moe_layer(self, index: int) -> bool:
        return index >= _int(self.config.text, "first_k_dense_replace")

    # -- tensors -------------------------------------------------------------------------
    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        text = self.config.text
        span = self.rank_span(ctx)
        n = span.layers
        s = self.shared_intermediate()
        if s and self.mlp_bias():
            out += gated_mlp_biases("mlp.shared_expert", s, span.hidden, self.moe_layers_on_stage(ctx), span.tp)
        if n and text.get("use_qk_norm", False):
            hd = self.config.head_dim
            out += [WeightTensor("attention.query_layernorm+key_layernorm", "norm", hd, 1, 2 * n)]
            if not text.get("use_rmsnorm", False):  # nn.LayerNorm: a bias beside the weight
                out += [WeightTensor("attention.query_layernorm+key_layernorm.bias", "norm", hd, 1, 2 * n)]
        rotary = text.get("rotary_dim")
        if isinstance(rotary, int) and not isinstance(rotary, bool) and rotary > 0:
            out = [WeightTensor(t.name, t.kind, t.rows, rotary, t.count, t.quantizable, t.dtype)
                   if t.name == "rotary_emb.cos_sin_cache" else t for t in out]
        return out
