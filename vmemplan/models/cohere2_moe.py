"""Cohere2-MoE: Cohere's parallel attention+MLP block with sigmoid- or softmax-routed experts,
interleaved sliding windows one token wider than the config says, and logits from the
embedding.

Mirrors vllm/model_executor/models/cohere2_moe.py (0.33.0):

* ``Cohere2MoeAttention``: ``qkv_proj`` / ``o_proj`` without biases and no q/k norms; one
  rotary table over ``model_max_length`` (else ``max_position_embeddings``) positions; a
  ``sliding_attention`` layer caches a window of ``sliding_window + 1``, the others full
  attention;
* ``Cohere2MoeDecoderLayer``: one ``input_layernorm`` (RMSNorm with ``rms_norm_eps``, else
  Cohere's LayerNorm: a weight and no bias); a ``Cohere2MoeMLP`` (merged ``gate_up_proj``) of
  ``prefix_dense_intermediate_size`` on ``dense`` entries of ``mlp_layer_types``, else
  ``Cohere2Moe``: a ``GateLinear`` router at the model dtype, ``num_experts`` experts of
  ``intermediate_size`` and ``num_shared_experts × intermediate_size`` of shared expert;
* ``Cohere2MoeModel`` builds the embedding and the final norm on every pipeline stage, and
  ``Cohere2MoeForCausalLM`` has no LM head (``compute_logits`` uses ``embed_tokens``).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.moe import MoEDecoder, _int
from vmemplan.models.windowed import _attention_spec, _window

__all__ = ["Cohere2Moe"]


@register
class Cohere2Moe(MoEDecoder):
    """Cohere2MoeForCausalLM (vllm/model_executor/models/cohere2_moe.py, 0.33.0); see the module."""

    architectures = ("Cohere2MoeForCausalLM",)
    norms_per_layer = 1
    tied_head = True
    attn_qkv_bias = attn_o_bias = mlp_has_bias = False

    def expert_intermediate(self) -> int:
        return self.config.intermediate_size

    def dense_intermediate(self) -> int:
        return _int(self.config.text, "prefix_dense_intermediate_size", default=self.config.intermediate_size)

    def shared_intermediate(self) -> int:
        return _int(self.config.text, "num_shared_experts") * self.config.intermediate_size

    def is_moe_layer(self, index: int) -> bool:
        types = self.config.text.get("mlp_layer_types")
        if not isinstance(types, list):
            raise UsageError("this Cohere2-MoE config has no mlp_layer_types",
                             hint="vLLM's Cohere2MoeDecoderLayer reads config.mlp_layer_types")
        return not (index < len(types) and types[index] == "dense")

    def is_sliding(self, index: int) -> bool:
        lt = self.config.text.get("layer_types")
        return isinstance(lt, list) and index < len(lt) and lt[index] == "sliding_attention"

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        e = self.num_experts()
        if ctx.tensor_parallel_size > e > 0:
            raise UsageError(f"--tensor-parallel-size {ctx.tensor_parallel_size} is greater than the {e} experts",
                             hint="Cohere2Moe refuses it")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        h = cfg.hidden_size
        out = [t for t in super().weight_tensors(ctx)
               if t.name not in ("model.embed_tokens", "model.norm", "lm_head", "rotary_emb.cos_sin_cache")]
        # embedding and final norm on every stage; no LM head
        out += [WeightTensor("model.embed_tokens", "embedding", pad_vocab(cfg.vocab_size) // ctx.tensor_parallel_size, h),
                WeightTensor("model.norm", "norm", h, 1)]
        start, end = self.layer_range(ctx)
        if end > start:
            positions = _int(cfg.text, "model_max_length") or cfg.max_position_embeddings
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, cfg.head_dim))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """``SlidingWindowSpec(sliding_window + 1)`` on ``sliding_attention`` layers, full
        attention elsewhere."""
        cfg = self.config
        heads = self.kv_heads_per_rank(ctx.tensor_parallel_size)
        w = None if ctx.disable_sliding_window else _window(cfg.text)
        full = _attention_spec(ctx, num_kv_heads=heads, head_size=cfg.head_dim)
        swa = _attention_spec(ctx, num_kv_heads=heads, head_size=cfg.head_dim, window=w + 1) if w else full
        start, end = self.layer_range(ctx)
        return {f"model.layers.{i}.self_attn.attn": swa if self.is_sliding(i) else full for i in range(start, end)}
