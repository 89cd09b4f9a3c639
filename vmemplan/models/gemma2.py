"""Gemma-2 (``Gemma2ForCausalLM``): window on even layers, four RMSNorms a layer, the LM head
is the embedding (no ``lm_head`` tensor at all).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.windowed import _rope_positions, _window, _WindowedBase, gemma_layer_types

__all__ = ["Gemma2"]


@register
class Gemma2(_WindowedBase):
    """Gemma-2 (vllm/model_executor/models/gemma2.py, 0.33.0).

    Per layer: ``qkv_proj`` / ``o_proj`` (biases when ``attention_bias``), gated GeLU MLP,
    four GemmaRMSNorms (input, post-attention, pre- and post-feedforward).  The model has a
    final norm and a ``normalizer`` scalar buffer; logits use ``embed_tokens`` directly
    (no ``lm_head`` module).  Window on layers whose ``layer_types`` entry is
    ``sliding_attention``, by default the even layers.  One rotary cache
    ``[max_position_embeddings, head_dim]``.  Soft-capping and ``query_pre_attn_scalar``
    change no memory.
    """

    architectures = ("Gemma2ForCausalLM",)
    default_pattern = 2
    qk_norm = False
    no_head_module = True
    #: the layer type that gets the ``sliding_window`` window (RNJ-1: ``chunked_attention``)
    window_layer_type = "sliding_attention"

    def layer_types(self) -> list[str]:
        return gemma_layer_types(self.config.text, default_pattern=self.default_pattern)

    def _tied(self) -> bool:
        return bool(self.config.text.get("tie_word_embeddings", True))

    def rope_tensors(self) -> list[WeightTensor]:
        cfg = self.config
        return [WeightTensor("rotary_emb.cos_sin_cache", "buffer",
                             _rope_positions(cfg.text, cfg.rope_scaling(), cfg.max_position_embeddings),
                             cfg.head_dim)]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        start, end = self.layer_range(ctx)
        n = end - start
        bias = bool(text.get("attention_bias", False))
        out = self._embedding_and_head(ctx, tied=self._tied(), no_head_module=self.no_head_module)
        out += self._attn_tensors(ctx, name="self_attn", num_heads=cfg.num_attention_heads,
                                  num_kv_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim, count=n,
                                  qkv_bias=bias, o_bias=bias)
        out += self._mlp_tensors(ctx, name="mlp", intermediate=cfg.intermediate_size, count=n)
        if n:
            out.append(WeightTensor("4 GemmaRMSNorms", "norm", cfg.hidden_size, 1, 4 * n))
            if self.qk_norm:
                out.append(WeightTensor("self_attn.q_norm+k_norm", "norm", cfg.head_dim, 1, 2 * n))
            out += self.rope_tensors()
            if not getattr(self, "own_attention_scales", False):  # pooling_decoders lists its own
                # each Attention layer's _k_scale/_v_scale/_q_scale/_prob_scale: four fp32 scalars
                # (vllm/model_executor/layers/attention/attention.py::set_default_quant_scales)
                out.append(attention_scales("self_attn.attn", n))
        out.append(WeightTensor("model.normalizer", "buffer", 1, 1))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """One spec per layer: ``SlidingWindowSpec(sliding_window)`` on window layers,
        ``FullAttentionSpec`` on global ones, per-rank KV heads ``max(1, KV // tp)``."""
        return self._window_specs(ctx, self.layer_types(), window=_window(self.config.text),
                                  window_type=self.window_layer_type)

    def notes(self) -> tuple[str, ...]:
        types = self.layer_types()
        n_win = sum(t == "sliding_attention" for t in types)
        return (f"{n_win} of {len(types)} layers use a {_window(self.config.text)}-token sliding window",)
