"""RNJ-1 (``Rnj1ForCausalLM``): Gemma-3's layer with chunked (block-local, one block of
lookback) attention on the ``chunked_attention`` layers of ``layer_types``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import WeightTensor
from vmemplan.models.base import register
from vmemplan.models.gemma2 import Gemma2
from vmemplan.models.windowed import _int, _window

__all__ = ["Rnj1"]


@register
class Rnj1(Gemma2):
    """RNJ-1 (vllm/model_executor/models/rnj1.py, 0.33.0), a ``Gemma3TextConfig`` model.

    Per layer as Gemma-3: ``qkv_proj`` / ``o_proj`` (biases when ``attention_bias``), per-head
    ``q_norm``/``k_norm``, gated GeLU MLP, four GemmaRMSNorms; the model keeps a
    ``normalizer`` buffer, builds ``embed_tokens`` and the final norm on every stage, and a
    ``ParallelLMHead`` tied to the embedding when ``tie_word_embeddings``.  A
    ``chunked_attention`` layer is ``Attention(per_layer_sliding_window=sliding_window,
    chunk_lookback=1)``: a ``SlidingWindowSpec(sliding_window)``; every other layer is full
    attention (``CacheConfig.sliding_window`` stays unset because ``layer_types`` is not all
    ``sliding_attention``).  Rotary: ``rope_parameters[layer_type]`` when the config nests
    them by type (else the whole ``rope_parameters``), one ``[max_position_embeddings,
    head_dim]`` cache per distinct parameter set.

    vLLM 0.33 asserts that a chunked layer runs on ``TRITON_ATTN`` (Attention.__init__): the
    default FLASH_ATTN selection refuses the model, ``--attention-backend TRITON_ATTN`` runs
    it (the KV specs are the same); see :meth:`notes`.
    """

    architectures = ("Rnj1ForCausalLM",)
    qk_norm = True
    no_head_module = False
    reads_max_model_len = False
    window_layer_type = "chunked_attention"  # Gemma2.kv_cache_specs: the window of the chunked layers

    def layer_types(self) -> list[str]:
        text = self.config.text
        n = _int(text, "num_hidden_layers")
        lt = text.get("layer_types")
        if isinstance(lt, list) and len(lt) >= n:
            return [str(x) for x in lt[:n]]
        return super().layer_types()

    def _layer_rope(self, layer_type: str) -> Any:
        rope = self.config.text.get("rope_parameters")
        if isinstance(rope, Mapping) and isinstance(rope.get(layer_type), Mapping):
            return rope[layer_type]
        if rope is None:
            return {"rope_type": "default", "rope_theta": self.config.text.get("rope_theta", 10000)}
        return rope

    def rope_tensors(self) -> list[WeightTensor]:
        cfg = self.config
        rows = cfg.max_position_embeddings
        seen: dict[str, str] = {}
        for t in self.layer_types():
            seen.setdefault(repr(sorted(dict(self._layer_rope(t)).items())), t)
        out = []
        for t in seen.values():
            rope = self._layer_rope(t)
            rtype = str(rope.get("rope_type", "default"))
            factor = rope.get("factor")
            r = rows
            if rtype in ("linear", "dynamic") and isinstance(factor, (int, float)):
                r = int(rows * factor)
            elif rtype == "yarn" and isinstance(factor, (int, float)):
                r = int(int(rope.get("original_max_position_embeddings", rows)) * factor)
            out.append(WeightTensor(f"rotary_emb({t}).cos_sin_cache", "buffer", r, cfg.head_dim))
        return out

    def required_attention_backend(self) -> tuple[str, str] | None:
        """TRITON_ATTN when a layer is chunked: Attention.__init__ asserts it for
        ``chunk_lookback`` > -1 (vllm/model_executor/layers/attention/attention.py, 0.33.0), and
        vLLM's backend selection does not pick it for that reason (checked in
        vmemplan/request/attention_backend.py::check_required_backend)."""
        if "chunked_attention" not in self.layer_types():
            return None
        return ("TRITON_ATTN", "Chunked attention with lookback requires the Triton backend, but got {got}.")

    def notes(self) -> tuple[str, ...]:
        types = self.layer_types()
        n = sum(t == "chunked_attention" for t in types)
        if not n:
            return ()
        return (f"{n} of {len(types)} layers use chunked attention over {_window(self.config.text)}-token "
                "windows; vLLM 0.33 runs them only on --attention-backend TRITON_ATTN (the default "
                "FLASH_ATTN selection fails an assertion in Attention.__init__)",)
