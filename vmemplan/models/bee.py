"""Bee and R (``BeeForConditionalGeneration``, Open-Bee/Bee-8B; ``RForConditionalGeneration``, YannQi/R-4B).

vllm/model_executor/models/bee.py and rvl.py (0.33.0) subclass
llava_onevision.py::LlavaOnevisionForConditionalGeneration and, after its ``__init__``, replace
``multi_modal_projector`` with their own (BeeMultiModalProjector / RVLMultiModalProjector):

* the SigLIP tower up to ``vision_feature_layer`` without post-LayerNorm, built by LLaVA-OneVision
  under ``_mark_tower_model(vllm_config, {"image", "video"})``
  (:class:`vmemplan.models.llava_video.LlavaOnevision`'s tower; no ``supports_encoder_tp_data``),
  and the ``image_newline`` ``nn.Parameter`` assigned in the same block: the block's
  ``no_init_weights`` replaces child modules only, so that parameter exists even when every
  modality's limit is 0 (checked with the oracle under ``--language-model-only``);
* the replacement projector, assigned *outside* ``_mark_tower_model``, so it is built whatever
  ``--limit-mm-per-prompt`` / ``--language-model-only`` say: ``pre_norm`` ``nn.LayerNorm``
  (vision hidden, weight and bias), ``linear_1`` vision hidden -> ``w`` and ``linear_2`` ``w`` ->
  text hidden, plain ``nn.Linear`` with bias, replicated on every rank; ``w`` is 4 x text hidden
  for Bee, the text hidden for R (LLaVA-OneVision's own projector is dropped);
* the language model ``init_vllm_registered_model(hf_config=config.text_config)``.

Encoder-cache budget: BeeProcessingInfo / RVLProcessingInfo are LlavaNextProcessingInfo (images
only: ``get_supported_mm_limits`` {"image": None}), the largest image over
``image_grid_pinpoints``: base tile tokens + the unpadded grid + a newline a row, capped under
``vision_aspect_ratio`` ``anyres_max_N`` by Bee's ``_get_num_unpadded_features`` (N from the config,
default 9) and by R's inherited LlavaNext count (no cap).
"""

from __future__ import annotations

import math
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import language_model_new
from vmemplan.models.llava_next import anyres_unpadded_grid
from vmemplan.models.llava_video import _OnevisionTower
from vmemplan.models.vision_towers import _need, _vision

__all__ = ["Bee", "RVL", "anyres_max_tokens"]


def anyres_max_tokens(height: int, width: int, *, pinpoints: list[tuple[int, int]], tile: int, grid: int,
                      base: int, max_patches: int | None) -> int:
    """Tokens of one ``height x width`` image: base + unpadded features + newlines, the grid shrunk
    by ``sqrt(h·w / (max_patches·grid²))`` when that ratio exceeds 1.1 (bee.py::
    BeeProcessingInfo._get_num_unpadded_features); no cap when ``max_patches`` is None."""
    cur_h, cur_w = anyres_unpadded_grid(height, width, pinpoints=pinpoints, tile=tile, grid=grid)
    if max_patches is not None:
        ratio = math.sqrt(cur_h * cur_w / (max_patches * grid**2))
        if ratio > 1.1:
            cur_h, cur_w = int(cur_h // ratio), int(cur_w // ratio)
    return cur_h * cur_w + cur_h + base


class _BeeTower(_OnevisionTower):
    #: the replacement projector's width, in text hidden sizes
    projector_factor = 4
    #: whether the ``anyres_max_N`` cap applies (Bee's override) or not (R: LlavaNext's count)
    capped = True

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        """LLaVA-OneVision's tower, without its projector (replaced) and ``image_newline`` (kept
        whatever the limits: see :meth:`always_built`)."""
        return [t for t in super().vision_weight_tensors(config, ctx)
                if not t.name.startswith("multi_modal_projector.") and t.name != "image_newline"]

    def always_built(self, config: Any) -> list[WeightTensor]:
        """``image_newline`` (an ``nn.Parameter``: ``_mark_tower_model``'s ``no_init_weights``
        stands in only for child modules, so a bare parameter assigned inside it is still
        allocated) and the replacement projector (assigned after ``__init__``)."""
        return [WeightTensor("image_newline", "encoder", config.hidden_size, 1), *self.projector_tensors(config)]

    def projector_tensors(self, config: Any) -> list[WeightTensor]:
        c = _need(_vision(config), "hidden_size")
        h = config.hidden_size
        w = self.projector_factor * h
        return [WeightTensor("multi_modal_projector.pre_norm", "encoder", c, 1, 2),
                WeightTensor("multi_modal_projector.linear_1", "encoder", w, c),
                WeightTensor("multi_modal_projector.linear_1.bias", "encoder", w, 1),
                WeightTensor("multi_modal_projector.linear_2", "encoder", h, w),
                WeightTensor("multi_modal_projector.linear_2.bias", "encoder", h, 1)]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.always_built(self.config)  # type: ignore[attr-defined]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        tile = _need(vc, "image_size")
        grid = tile // _need(vc, "patch_size")
        cls_token = 0 if str(vc.get("model_type", "")).startswith("siglip") else 1
        full = config.raw.get("vision_feature_select_strategy", "full") == "full"
        base = grid * grid + cls_token - (0 if full else 1)
        cap = None
        if self.capped:
            cap = int(str(config.raw.get("vision_aspect_ratio", "anyres_max_9")).replace("anyres_max_", ""))
        pins = [(int(h), int(w)) for h, w in (config.raw.get("image_grid_pinpoints") or [[tile, tile]])]
        return {"image": max(anyres_max_tokens(h, w, pinpoints=pins, tile=tile, grid=grid, base=base,
                                               max_patches=cap) for h, w in pins)}


class _RTower(_BeeTower):
    projector_factor = 1
    capped = False


@register
class Bee(_BeeTower, Adapter):
    """``BeeForConditionalGeneration``: LLaVA-OneVision's SigLIP tower + ``image_newline`` + Bee's
    pre-normed 4x-wide projector + the ``text_config`` model."""

    architectures = ("BeeForConditionalGeneration",)

    __new__ = language_model_new(_BeeTower)


@register
class RVL(_RTower, Adapter):
    """``RForConditionalGeneration`` (rvl.py): as Bee with a text-hidden-wide projector."""

    architectures = ("RForConditionalGeneration",)

    __new__ = language_model_new(_RTower)
