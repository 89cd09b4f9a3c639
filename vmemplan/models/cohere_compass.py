"""Cohere Compass (``CohereCompassForConditionalGeneration``, CohereLabs/North-Micro-Vision-Instruct):
Qwen3-VL's deepstack vision transformer in front of a Command-A-style decoder.

vllm/model_executor/models/cohere_compass.py (0.33.0):

* ``CohereCompassForConditionalGeneration.__init__`` builds, under
  ``_mark_tower_model(vllm_config, {"image"})``, a ``Cohere_VisionTransformer``: field for field
  Qwen3-VL's ``Qwen3_VisionTransformer`` (Conv3d patch embed with bias, learned position table,
  LayerNorm blocks with biased qkv / proj / fc1 / fc2, the merger, one post-shuffle deepstack
  merger per ``deepstack_visual_indexes`` entry, a rotary cache of 8192 × head_dim/2:
  :func:`vmemplan.models.vision_towers.qwen3_vl_tower`), and with deepstack the zeroed
  ``[max_num_batched_tokens, text hidden]`` input-embedding tensor per level
  (:func:`vmemplan.models.multimodal.deepstack_buffers`);
* the language model ``CohereCompassForCausalLM`` (a ``CohereForCausalLM`` with its own
  ``CohereCompassTextModel``): ``embed_tokens`` (the tied head: ``assert config.tie_word_embeddings``),
  per layer ``CohereCompassAttention`` (qkv / o with ``attention_bias``) and ``CohereMLP`` in
  parallel after one commandr ``LayerNorm`` (a weight only), and the final ``LayerNorm``: the
  tensors of :class:`vmemplan.models.commandr.Cohere` without q/k norms;
* ``CohereCompassAttention``: the layer's ``layer_types`` entry picks ``rope_parameters[type]``;
  ``None`` (the NoPE full-attention layers) builds no rotary embedding, otherwise ``get_rope`` with
  ``max_position = model_config.max_model_len`` and the default ``mrope_positions_factor`` 4
  (an ``mrope_section`` makes it an M-RoPE cache of ``max_model_len × 4`` rows,
  rotary_embedding/mrope.py::MRotaryEmbedding); the sliding-window layers pass
  ``per_layer_sliding_window = sliding_window`` as it is (no +1, unlike commandr's Cohere2);
* ``CohereCompassTextConfig.__post_init__`` (transformers 5.20): ``layer_types`` defaults to
  full attention on every layer;
* ``supports_encoder_tp_data = True``.

Encoder profile: ``CohereCompassProcessingInfo`` serves images only; its largest image is the
closest factor pair (aspect ≤ 200) of ``max_pixels // (patch·merge)²`` merged patches
(``get_image_size_with_most_features``), one frame, so that many tokens.
"""

from __future__ import annotations

import json
import math
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.commandr import Cohere
from vmemplan.models.multimodal import _Qwen3VLTower, deepstack_buffers
from vmemplan.models.vision_towers import _need, _vision

__all__ = ["CohereCompass", "compass_max_image_tokens"]

#: MRotaryEmbedding's default ``positions_factor`` (get_rope's ``mrope_positions_factor``)
_MROPE_FACTOR = 4


def compass_max_image_tokens(*, patch_size: int, merge_size: int, max_pixels: int) -> int:
    """Tokens of the largest image (CohereCompassProcessingInfo.get_image_size_with_most_features
    and get_max_image_tokens, 0.33.0): the largest count ``n ≤ max_pixels // (patch·merge)²``
    whose closest factor pair has an aspect ratio of at most 200; that image needs no resize."""
    unit = patch_size * merge_size
    for n in range(max_pixels // (unit * unit), 0, -1):
        d = next(d for d in range(math.isqrt(n), 0, -1) if n % d == 0)
        if (n // d) / d <= 200:
            return n
    return 1


@register
class CohereCompass(_Qwen3VLTower, Cohere):
    """North Micro Vision: the Qwen3-VL deepstack tower over the Compass decoder (interleaved
    sliding-window M-RoPE layers and NoPE full-attention layers)."""

    architectures = ("CohereCompassForConditionalGeneration",)
    modalities = ("image",)
    weights_read_batch_tokens = True  # the deepstack input-embedding buffers

    def layer_types(self) -> list[str]:
        types = self.config.text.get("layer_types")
        n = self.config.num_hidden_layers
        return [str(t) for t in types] if isinstance(types, list) and len(types) == n else ["full_attention"] * n

    def sliding_window_for_layer(self, index: int) -> int | None:
        window = self.config.text.get("sliding_window")
        if self.layer_types()[index] != "sliding_attention" or not isinstance(window, int) or window <= 0:
            return None
        return window

    def _rope_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """One cached rotary embedding per distinct ``rope_parameters[layer type]`` of this rank's
        layers (get_rope's cache key), none for the NoPE types."""
        params = self.config.text.get("rope_parameters") or {}
        start, end = self.layer_range(ctx)
        hd = self.config.head_dim
        out: dict[str, WeightTensor] = {}
        for kind in sorted({self.layer_types()[i] for i in range(start, end)}):
            p = params.get(kind) if isinstance(params, dict) else None
            if not isinstance(p, dict):
                continue
            rows = ctx.max_model_len * (_MROPE_FACTOR if "mrope_section" in p else 1)
            dim = int(p.get("rope_dim") or hd * float(p.get("partial_rotary_factor", 1.0)))
            out.setdefault(json.dumps(p, sort_keys=True),
                           WeightTensor(f"rotary_emb[{kind}].cos_sin_cache", "buffer", rows, dim))
        return list(out.values())

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        lm = [t for t in Cohere.weight_tensors(self, ctx) if t.name != "rotary_emb.cos_sin_cache"]
        return lm + self._rope_tensors(ctx) + self.tower_tensors(self.config, ctx) + deepstack_buffers(self, ctx)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        return {"image": compass_max_image_tokens(patch_size=_need(vc, "patch_size"),
                                                  merge_size=int(vc.get("spatial_merge_size", 2)),
                                                  max_pixels=self.pixel_limits(config)[1])}
