"""LLaVA-NeXT (``LlavaNextForConditionalGeneration``): LLaVA-1.5 plus any-resolution tiling.

Mirrors vllm/model_executor/models/llava_next.py (0.33.0): the tower, projector and decoder are
those of LLaVA-1.5 (vmemplan/models/multimodal.py::Llava), plus

* ``image_newline``: an ``nn.Parameter`` of ``text_config.hidden_size`` elements (model dtype),
  built with the tower (``_mark_tower_model``);
* a list ``vision_feature_layer`` (granite-vision) concatenates those layers' features, so the
  projector's ``linear_1`` reads ``vision hidden x len(list)`` columns;
* the image tokens of the largest image (``get_image_size_with_most_features``): over
  ``image_grid_pinpoints``, base tokens + the unpadded tile grid + one newline per grid row
  (``LlavaNextProcessingInfo.get_num_image_tokens``).

registry.py lists the architecture both as a multimodal generation model and in
``_EMBEDDING_MODELS`` (for e5-v); without ``--runner pooling`` vLLM serves it as a generator.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.multimodal import Llava
from vmemplan.models.vision_towers import _need, _vision

__all__ = ["LlavaNext", "anyres_image_tokens", "anyres_unpadded_grid"]


def _best_resolution(height: int, width: int, pinpoints: list[tuple[int, int]]) -> tuple[int, int]:
    """transformers image_processing_utils.select_best_resolution: the (height, width) pinpoint that
    keeps most of the image's resolution, then wastes least."""
    best, best_eff, best_waste = pinpoints[0], -1, float("inf")
    for ph, pw in pinpoints:
        scale = min(pw / width, ph / height)
        eff = min(int(width * scale) * int(height * scale), width * height)
        waste = pw * ph - eff
        if eff > best_eff or (eff == best_eff and waste < best_waste):
            best, best_eff, best_waste = (ph, pw), eff, waste
    return best


def anyres_image_tokens(height: int, width: int, *, pinpoints: list[tuple[int, int]], tile: int,
                        grid: int, base: int) -> int:
    """llava_next.py::LlavaNextProcessingInfo.get_num_image_tokens for one ``height x width`` image:
    ``base`` (the tile's selected tokens) + the unpadded features of the tile grid + one newline
    token per feature row.  ``tile`` is the vision image size, ``grid`` its patch-grid length."""
    cur_h, cur_w = anyres_unpadded_grid(height, width, pinpoints=pinpoints, tile=tile, grid=grid)
    return cur_h * cur_w + cur_h + base


def anyres_unpadded_grid(height: int, width: int, *, pinpoints: list[tuple[int, int]], tile: int,
                         grid: int) -> tuple[int, int]:
    """The unpadded feature grid (rows, columns) of LlavaNextProcessingInfo._get_num_unpadded_features
    for one ``height x width`` image, before any ``anyres_max`` cap."""
    bh, bw = _best_resolution(height, width, pinpoints)
    cur_h, cur_w = grid * (bh // tile), grid * (bw // tile)
    if width / height > cur_w / cur_h:
        new_h = int(round(height * (cur_w / width), 7))
        cur_h -= 2 * ((cur_h - new_h) // 2)
    else:
        new_w = int(round(width * (cur_h / height), 7))
        cur_w -= 2 * ((cur_w - new_w) // 2)
    return cur_h, cur_w


@register
class LlavaNext(Llava):
    """``LlavaNextForConditionalGeneration`` (llava_next.py, 0.33.0)."""

    bare_tower_parameters = ("image_newline",)  # assigned inside _mark_tower_model: kept at image limit 0

    architectures = ("LlavaNextForConditionalGeneration",)

    def _feature_layer_count(self) -> int:
        fl = self.config.raw.get("vision_feature_layer", -1)
        return len(fl) if isinstance(fl, list) and fl else 1

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        out = super().vision_weight_tensors(config, ctx)
        n = self._feature_layer_count()
        if n > 1:  # linear_1 reads the concatenated layers: vision hidden x n columns
            c = _need(_vision(config), "hidden_size")
            out = [WeightTensor(t.name, t.kind, t.rows, c * n, t.count)
                   if t.name == "multi_modal_projector.linear_1" else t for t in out]
        out.append(WeightTensor("image_newline", "encoder", config.hidden_size, 1))
        return out

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        vc = _vision(config)
        tile, patch = _need(vc, "image_size"), _need(vc, "patch_size")
        base = super().max_tokens_per_item(config, ctx)["image"]
        raw_pins = config.raw.get("image_grid_pinpoints") or [[tile, tile]]
        pins = [(int(h), int(w)) for h, w in raw_pins]
        best = max(anyres_image_tokens(h, w, pinpoints=pins, tile=tile, grid=tile // patch, base=base)
                   for h, w in pins)
        return {"image": best}
