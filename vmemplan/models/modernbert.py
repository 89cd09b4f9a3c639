"""ModernBERT encoder (``ModernBertModel``, vLLM --runner pooling): no KV cache.

Mirrors vllm/model_executor/models/modernbert.py (0.33.0).  One rank holds:

* ``embeddings.tok_embeddings`` (VocabParallelEmbedding: rows padded to 64, split) and
  ``embeddings.norm`` (LayerNorm, a bias only with ``norm_bias``); no position table (RoPE);
* per layer: ``attn_norm`` (LayerNorm; layer 0 has an Identity), ``attn.Wqkv`` (QKVParallelLinear,
  every head a KV head; bias with ``attention_bias``), ``attn.Wo`` (RowParallelLinear),
  ``mlp_norm``, ``mlp.Wi`` (MergedColumnParallelLinear, 2 x intermediate_size; bias with
  ``mlp_bias``), ``mlp.Wo``; the EncoderOnlyAttention's four fp32 scale scalars;
* ``final_norm``;
* the rotary caches ``[max_position_embeddings, head_dim]`` in the model dtype, one per distinct
  ``rope_parameters`` entry the layers use (get_rope caches by its arguments): the global
  (``full_attention``) and local (``sliding_attention``) thetas, 160,000 and 10,000 by default
  (transformers' ModernBertConfig.default_theta).

ModernBertModel is no pooling and no text-generation class, so vLLM matches the ``Model`` suffix
(runner pooling, convert embed) and as_embedding_model adds a pooler without parameters.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.dense_blocks import EncoderOnly

__all__ = ["ModernBert"]

_DEFAULT_THETA = {"full_attention": 160_000.0, "sliding_attention": 10_000.0}


@register
class ModernBert(EncoderOnly):
    """``ModernBertModel`` (vllm/model_executor/models/modernbert.py::ModernBertModel, 0.33.0)."""

    architectures = ("ModernBertModel",)
    pp_refusal = "ModernBERT does not support pipeline parallelism in vLLM"

    def layer_types(self) -> list[str]:
        """transformers' ModernBertConfig.__post_init__: full attention every
        ``global_attn_every_n_layers`` (3) layers from layer 0, sliding otherwise."""
        text = self.config.text
        types = text.get("layer_types")
        if isinstance(types, list) and types:
            return [str(t) for t in types]
        every = int(text.get("global_attn_every_n_layers", 3) or 3)
        return ["sliding_attention" if i % every else "full_attention" for i in range(self.config.num_hidden_layers)]

    def _theta(self, kind: str) -> Any:
        text = self.config.text
        rope = text.get("rope_parameters")
        if isinstance(rope, dict) and isinstance(rope.get(kind), dict):
            params = dict(rope[kind])
            if "rope_theta" in params:
                return tuple(sorted((k, str(v)) for k, v in params.items()))
        legacy = text.get("global_rope_theta" if kind == "full_attention" else "local_rope_theta")
        return float(legacy) if legacy is not None else _DEFAULT_THETA[kind]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        span = self.rank_span(ctx)
        tp, h, n, inter = span.tp, span.hidden, cfg.num_hidden_layers, cfg.intermediate_size
        head_dim = h // cfg.num_attention_heads
        norm_parts = 2 if text.get("norm_bias", False) else 1
        out = [
            WeightTensor("embeddings.tok_embeddings", "embedding", span.vocab_rows, h),
            WeightTensor("embeddings.norm", "norm", h, 1, norm_parts),
            WeightTensor("layers.attn.Wqkv", "linear", 3 * h // tp, h, n, True, in_features_full=h),
            WeightTensor("layers.attn.Wo", "linear", h, h // tp, n, True, in_features_full=h),
            WeightTensor("layers.mlp.Wi", "linear", 2 * inter // tp, h, n, True, in_features_full=h),
            WeightTensor("layers.mlp.Wo", "linear", h, inter // tp, n, True, in_features_full=inter),
            # attn_norm on every layer but the first (an Identity there), mlp_norm on every layer, final_norm
            WeightTensor("attn_norm+mlp_norm+final_norm", "norm", h, 1, norm_parts * ((n - 1) + n + 1)),
            attention_scales("layers.attn.attn", n),
        ]
        if text.get("attention_bias", False):
            out += [WeightTensor("layers.attn.Wqkv.bias", "bias", 3 * h // tp, 1, n),
                    WeightTensor("layers.attn.Wo.bias", "bias", h, 1, n)]
        if text.get("mlp_bias", False):
            out += [WeightTensor("layers.mlp.Wi.bias", "bias", 2 * inter // tp, 1, n),
                    WeightTensor("layers.mlp.Wo.bias", "bias", h, 1, n)]
        caches = {self._theta(kind) for kind in set(self.layer_types())}
        out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", int(cfg.max_position_embeddings), head_dim,
                                len(caches)))
        return out
