"""EmbeddingGemma 2 (``EmbeddingGemma2Model``, e.g. google/embeddinggemma-2): a bidirectional
Gemma-4-style encoder with per-layer embeddings, served with ``--runner pooling``; no KV cache.

Mirrors vllm/model_executor/models/embedding_gemma2.py (0.33.0).  One rank holds:

* ``language_model.embed_tokens`` (VocabParallelEmbedding: rows padded to 64, split over TP)
  and the ``embed_scale`` scalar buffer (``torch.tensor(hidden ** 0.5)`` in the model dtype);
* per ``EmbeddingGemma2DecoderLayer`` ``i``, with the head size and KV heads of
  ``per_layer_config[i]`` (the text config's ``head_dim`` / ``num_key_value_heads`` where a
  layer is not listed): ``qkv_proj`` (QKVParallelLinear, KV heads replicated when TP exceeds
  them), ``o_proj`` (RowParallelLinear), ``q_norm`` / ``k_norm`` (RMSNorm of the head size),
  ``v_norm`` (RMSNorm ``has_weight=False``: its ``torch.ones(head_size)`` stays a plain device
  tensor), the ``Attention``'s four fp32 scale scalars, a Gemma4MLP (merged ``gate_up_proj``,
  ``down_proj``), the PLE block (``per_layer_input_gate`` and ``per_layer_projection``,
  ReplicatedLinear between ``hidden`` and ``hidden_size_per_layer_input``, and
  ``post_per_layer_input_norm``), four RMSNorms and the ``layer_scalar`` buffer (one value);
* ``norm``; ``ple.per_layer_model_projection`` (ColumnParallelLinear ``hidden →
  layers × hidden_size_per_layer_input``, split over TP) and ``ple.per_layer_projection_norm``;
  ``embedding_projection`` (ReplicatedLinear ``hidden → embedding_dim``);
* one rotary cache ``[min(max_position_embeddings, max_model_len), head size]`` in the model
  dtype per distinct (head size, ``rope_parameters[layer type]``) pair: get_rope caches by its
  arguments;
* with a ``vision_config`` / ``audio_config``: the transformers Gemma-4 towers built with
  ``AutoModel.from_config`` and their Gemma4MultimodalEmbedder, replicated on every rank, as
  Gemma-4 builds them (:func:`vmemplan.models.gemma4.gemma4_vision_tensors`,
  :func:`vmemplan.models.gemma4_audio.gemma4_audio_tensors`); dropped when
  ``--limit-mm-per-prompt`` turns their modalities off.

Every attention layer is an ``Attention`` of type ENCODER_ONLY, whose get_kv_cache_spec returns
None (vllm/model_executor/layers/attention/attention.py::Attention.get_kv_cache_spec), so the
pool holds only the null block.  The pooler (DispatchPooler.for_embedding) holds no parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.dense_blocks import EncoderOnly
from vmemplan.models.gemma4 import gemma4_vision_tensors
from vmemplan.models.gemma4_audio import gemma4_audio_tensors
from vmemplan.models.windowed import _int, gemma_layer_types

__all__ = ["EmbeddingGemma2"]

#: transformers' EmbeddingGemma2TextConfig defaults for keys a config may leave out
_DEFAULT_MAX_POSITIONS = 262_144
_DEFAULT_ROPE = {"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
                 "full_attention": {"rope_type": "default", "rope_theta": 1_000_000.0}}


@register
class EmbeddingGemma2(EncoderOnly):
    """``EmbeddingGemma2Model`` (vllm/model_executor/models/embedding_gemma2.py, 0.33.0)."""

    architectures = ("EmbeddingGemma2Model",)
    reads_max_model_len = True  # the rotary caches are capped by it
    pp_refusal = "EmbeddingGemma2 does not support pipeline parallelism in vLLM"

    def layer_types(self) -> list[str]:
        """``layer_types`` or transformers' default pattern (every 6th layer global)."""
        return gemma_layer_types(self.config.text, default_pattern=6)

    def layer_shape(self, index: int) -> tuple[int, int]:
        """(head size, KV heads) of layer ``index``: its ``per_layer_config`` entry (keys such
        as ``"05"`` name the layer), else the text config's ``head_dim`` / ``num_key_value_heads``."""
        cfg = self.config
        per_layer = cfg.text.get("per_layer_config")
        entry: Mapping[str, Any] = {}
        if isinstance(per_layer, Mapping):
            entry = next((v for k, v in per_layer.items() if str(k).isdigit() and int(k) == index), {})
        elif isinstance(per_layer, list) and index < len(per_layer) and isinstance(per_layer[index], Mapping):
            entry = per_layer[index]
        return _int(entry, "head_dim", cfg.head_dim), _int(entry, "num_key_value_heads", cfg.num_key_value_heads)

    def derived_max_model_len(self) -> int:
        return _int(self.config.text, "max_position_embeddings", _DEFAULT_MAX_POSITIONS)

    def _rope(self, kind: str) -> tuple[tuple[str, str], ...]:
        rope = self.config.text.get("rope_parameters")
        params = rope.get(kind) if isinstance(rope, Mapping) else None
        return tuple(sorted((k, str(v)) for k, v in dict(params or _DEFAULT_ROPE[kind]).items()))

    def _layer_tensors(self, ctx: GraphContext, head_dim: int, kv: int, count: int) -> list[WeightTensor]:
        cfg = self.config
        tp, h = ctx.tensor_parallel_size, cfg.hidden_size
        heads, ple = cfg.num_attention_heads, _int(cfg.text, "hidden_size_per_layer_input")
        q_rows, kv_rows = heads // tp * head_dim, max(1, kv // tp) * head_dim
        inter = cfg.intermediate_size // tp
        tag = f"[hd{head_dim},kv{kv}]"
        return [
            WeightTensor(f"layers{tag}.self_attn.qkv_proj", "linear", q_rows + 2 * kv_rows, h, count, True,
                         in_features_full=h),
            WeightTensor(f"layers{tag}.self_attn.o_proj", "linear", h, q_rows, count, True,
                         in_features_full=heads * head_dim),
            WeightTensor(f"layers{tag}.self_attn.q_norm+k_norm", "norm", head_dim, 1, 2 * count),
            WeightTensor(f"layers{tag}.self_attn.v_norm.weight(ones, not a parameter)", "buffer", head_dim, 1, count),
            WeightTensor(f"layers{tag}.mlp.gate_up_proj", "linear", 2 * inter, h, count, True, in_features_full=h),
            WeightTensor(f"layers{tag}.mlp.down_proj", "linear", h, inter, count, True,
                         in_features_full=cfg.intermediate_size),
            WeightTensor(f"layers{tag}.ple_block.per_layer_input_gate", "linear", ple, h, count),
            WeightTensor(f"layers{tag}.ple_block.per_layer_projection", "linear", h, ple, count),
        ]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        h, n, tp = span.hidden, cfg.num_hidden_layers, span.tp
        ple = _int(cfg.text, "hidden_size_per_layer_input")
        shapes: dict[tuple[int, int], int] = {}
        caches: set[tuple[int, tuple[tuple[str, str], ...]]] = set()
        for i, kind in enumerate(self.layer_types()):
            hd, kv = self.layer_shape(i)
            shapes[(hd, kv)] = shapes.get((hd, kv), 0) + 1
            caches.add((hd, self._rope(kind)))
        out = [WeightTensor("embed_tokens", "embedding", span.vocab_rows, h),
               WeightTensor("embed_scale", "buffer", 1, 1)]
        for (hd, kv), count in sorted(shapes.items()):
            out += self._layer_tensors(ctx, hd, kv, count)
        positions = min(self.derived_max_model_len(), ctx.max_model_len)
        out += [
            # post_per_layer_input_norm and the four RMSNorms of each layer, then the final norm
            WeightTensor("layers.5 RMSNorms+norm", "norm", h, 1, 5 * n + 1),
            WeightTensor("layers.layer_scalar", "buffer", 1, 1, n),
            attention_scales("layers.self_attn.attn", n),
            WeightTensor("ple.per_layer_model_projection", "linear", n * ple // tp, h, 1, True, in_features_full=h),
            WeightTensor("ple.per_layer_projection_norm", "norm", ple, 1),
            WeightTensor("embedding_projection", "linear", _int(cfg.text, "embedding_dim"), h),
            *(WeightTensor(f"rotary_emb[hd{hd}].cos_sin_cache", "buffer", positions, hd) for hd, _ in sorted(caches)),
        ]
        if ctx.pipeline_rank == 0:
            out += gemma4_vision_tensors(cfg.raw, h, ctx) + gemma4_audio_tensors(cfg.raw, h, ctx)
        return out

    def notes(self) -> tuple[str, ...]:
        out = super().notes()
        if any(isinstance(self.config.raw.get(k), Mapping) for k in ("vision_config", "audio_config")):
            out += ("the Gemma-4 vision / audio towers are replicated on every rank; their profile-run "
                    "activation is not modelled for EmbeddingGemma2 (text-only profile)",)
        return out
