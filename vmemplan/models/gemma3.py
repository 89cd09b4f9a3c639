"""Gemma-3 (``Gemma3ForCausalLM`` and the language model of ``Gemma3ForConditionalGeneration``):
five window layers to one global layer, per-head q/k norms, a local and a global rotary cache.
"""

from __future__ import annotations

from collections.abc import Mapping

from vmemplan.core.graph import WeightTensor
from vmemplan.models.base import register
from vmemplan.models.gemma2 import Gemma2
from vmemplan.models.windowed import (
    _rope_positions,
)

__all__ = ["Gemma3"]


@register
class Gemma3(Gemma2):
    """Gemma-3 text model (vllm/model_executor/models/gemma3.py, 0.33.0), also the
    language model of ``Gemma3ForConditionalGeneration`` (gemma3_mm.py builds it from
    ``text_config`` as ``Gemma3ForCausalLM``).

    As Gemma-2 plus per-head ``q_norm``/``k_norm``, a real ``lm_head`` tied to the
    embedding when ``tie_word_embeddings`` (transformers' default for Gemma-3 is tied), and
    two rotary caches: window layers use ``rope_local_base_freq`` without scaling, global
    layers ``rope_theta`` with the config's scaling (linear x8 on 4B-27B: a cache of
    ``max_position_embeddings × 8`` rows).  Layer types: ``layer_types`` or every
    ``sliding_window_pattern``-th (default 6th) layer global.
    """

    architectures = ("Gemma3ForCausalLM",)  # Gemma3ForConditionalGeneration: models/gemma3_mm.py
    default_pattern = 6
    qk_norm = True
    no_head_module = False

    def rope_tensors(self) -> list[WeightTensor]:
        cfg = self.config
        types = set(self.layer_types())
        rope = cfg.rope_scaling()
        max_pos = cfg.max_position_embeddings
        out = []
        # transformers >= 5 nests per-type parameters under rope_parameters
        nested = isinstance(rope, Mapping) and any(isinstance(v, Mapping) for v in rope.values())
        if "sliding_attention" in types:
            local = rope.get("sliding_attention") if nested else None
            out.append(WeightTensor("rotary_emb(local).cos_sin_cache", "buffer",
                                    _rope_positions(cfg.text, local, max_pos), cfg.head_dim))
        if "full_attention" in types:
            glob = rope.get("full_attention") if nested else rope
            out.append(WeightTensor("rotary_emb(global).cos_sin_cache", "buffer",
                                    _rope_positions(cfg.text, glob, max_pos), cfg.head_dim))
        return out

