"""Eagle 2.5-VL (``Eagle2_5_VLForConditionalGeneration``: nvidia/Eagle2.5-8B): a SigLIP tower cut at
``select_layer``, InternVL's pixel-shuffle ``mlp1`` and the ``text_config`` language model.

vllm/model_executor/models/eagle2_5_vl.py::Eagle2_5_VLForConditionalGeneration (0.33.0) builds, under
``_mark_tower_model(vllm_config, "image")``,

* ``vision_model`` = siglip.py::SiglipVisionModel(vision_config, num_hidden_layers_override=
  ``num_hidden_layers + select_layer + 1`` for a negative ``select_layer`` (default -1), else
  ``select_layer + 1``): Conv2d patch embed with bias, ``(image_size / patch)²`` learned positions and
  their int64 ``position_ids`` buffer, the kept layers, the post-LayerNorm only when every layer is
  kept (``require_post_norm`` None), no head (``vision_use_head`` forced False).  The class sets
  ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` keeps the tower whole per rank
  (siglip.py reads ``is_vit_use_data_parallel``), else it is split over TP;
* ``mlp1``: nn.Sequential(LayerNorm(c·r), Linear(c·r -> h), GELU, Linear(h -> h)), all with bias,
  replicated, ``r = int(1 / downsample_ratio)²`` (the InternVL projector's shape);

then ``init_vllm_registered_model`` on ``text_config`` (Qwen2 for Eagle2.5-8B).  Images are tiled as
InternVL's are (Eagle2_5_VLProcessingInfo is a BaseInternVLProcessingInfo: ``max_dynamic_patch`` tiles
plus a thumbnail when ``dynamic_image_size``), ``(image_size / patch)² · downsample_ratio²`` tokens a
tile; images only.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import (
    _InternVLTower,
    _shuffle_factor,
    internvl_projector,
    language_model_new,
)
from vmemplan.models.paligemma import siglip_vision, siglip_with_positions
from vmemplan.models.vision_towers import _need, _tower_tp

__all__ = ["Eagle2_5_VL", "SiglipInternTower", "siglip_kept_layers"]


def siglip_kept_layers(vc: Any, select_layer: int) -> int:
    """SigLIP layers a ``select_layer`` feature tap keeps (eagle2_5_vl.py::_init_vision_model)."""
    total = _need(vc, "num_hidden_layers")
    return total + select_layer + 1 if select_layer < 0 else select_layer + 1


class SiglipInternTower(_InternVLTower):
    """InternVL's tiling and ``mlp1`` over a SigLIP tower, images only (Eagle 2.5-VL, the
    Llama-Nemotron-VL embedder); combined with the language model's adapter by
    ``internvl._with_language_model``."""

    modalities = ("image",)

    def tile_size(self, config: Any) -> int:
        return int(config.raw.get("force_image_size") or siglip_vision(config)["image_size"])

    def tokens_per_tile(self, config: Any) -> int:
        return (self.tile_size(config) // int(siglip_vision(config)["patch_size"])) ** 2 // _shuffle_factor(config)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """Images only (BaseInternVLProcessingInfo.get_supported_mm_limits)."""
        return {k: v for k, v in super().max_tokens_per_item(config, ctx).items() if k == "image"}


class _EagleTower(SiglipInternTower):
    """Eagle 2.5-VL's tower half (supports_encoder_tp_data, as InternVL)."""

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = siglip_vision(config)
        layers = siglip_kept_layers(vc, int(config.raw.get("select_layer", -1)))
        tower = siglip_with_positions(vc, _tower_tp(ctx), num_layers=layers,
                                      post_norm=layers == _need(vc, "num_hidden_layers"), prefix="vision_model.vision_model")
        return tower + internvl_projector(_need(vc, "hidden_size"), config.hidden_size, _shuffle_factor(config),
                                          "mlp1")


@register
class Eagle2_5_VL(_EagleTower, Adapter):
    """``Eagle2_5_VLForConditionalGeneration``: SigLIP + ``mlp1`` + the ``text_config`` model."""

    architectures = ("Eagle2_5_VLForConditionalGeneration",)

    __new__ = language_model_new(_EagleTower)
