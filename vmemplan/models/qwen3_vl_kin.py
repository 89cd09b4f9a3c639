"""Checkpoints vLLM 0.33.0 serves with Qwen3-VL's model code under another architecture name.

* ``Cosmos3ForConditionalGeneration`` (nvidia Cosmos3-Nano / -Super understanding tower):
  vllm/model_executor/models/cosmos3.py::Cosmos3ForConditionalGeneration is
  Qwen3VLForConditionalGeneration with a weights mapper only (it drops the generation tower,
  the audio / action modality embeddings and projections while loading): the same tensors as
  :class:`vmemplan.models.multimodal.Qwen3_VL`.
* ``Alpamayo2Super`` (nvidia Alpamayo 2 Super's reasoning VLM):
  vllm/model_executor/models/alpamayo2_super.py::Alpamayo2SuperForConditionalGeneration is
  Qwen3VLForConditionalGeneration too; the flow-matching trajectory expert (``expert.*``) is
  dropped by its mapper, and the trajectory-token logit mask is a slice write with no tensor.
  Its config (vllm/transformers_utils/configs/alpamayo2_super.py::Alpamayo2SuperConfig) nests
  the Qwen3-VL config under ``vlm_config`` (flattened by
  :func:`vmemplan.model_config.alpamayo2_super_flat`) and defaults the per-image pixel budget
  to 163840..196608; its processor serves images only
  (Alpamayo2SuperProcessingInfo.get_supported_mm_limits), so only images enter the encoder budget.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext
from vmemplan.models.base import register
from vmemplan.models.multimodal import Qwen3_VL

__all__ = ["Cosmos3", "Alpamayo2Super"]

#: Alpamayo2SuperConfig's min_pixels / max_pixels defaults (configs/alpamayo2_super.py, 0.33.0)
ALPAMAYO2_MIN_PIXELS = 163840
ALPAMAYO2_MAX_PIXELS = 196608


@register
class Cosmos3(Qwen3_VL):
    """Cosmos3's reasoner: Qwen3-VL (dense text, deepstack ViT), tensors unchanged."""

    architectures = ("Cosmos3ForConditionalGeneration",)


@register
class Alpamayo2Super(Qwen3_VL):
    """Alpamayo 2 Super's VLM: Qwen3-VL, image-only, with the config's own pixel budget."""

    architectures = ("Alpamayo2Super",)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """Images only (Alpamayo2SuperProcessingInfo.get_mm_max_tokens_per_item).  The tower is
        still built unless image AND video are limited to 0: Qwen3VLForConditionalGeneration marks
        it for {"image", "video"} and an unset modality's limit is 999
        (config/multimodal.py::MultiModalConfig.get_limit_per_prompt)."""
        tokens = super().max_tokens_per_item(config, ctx)
        return {k: v for k, v in tokens.items() if k == "image"}

    def pixel_limits(self, config: Any) -> tuple[int, int]:
        """Alpamayo2SuperProcessingInfo.get_hf_processor sets the image processor's size from
        the config's min_pixels / max_pixels (class defaults 163840 / 196608) when both are set."""
        lo = config.raw.get("min_pixels", ALPAMAYO2_MIN_PIXELS)
        hi = config.raw.get("max_pixels", ALPAMAYO2_MAX_PIXELS)
        if lo is None or hi is None:
            return super().pixel_limits(config)
        return int(lo), int(hi)

    def notes(self) -> tuple[str, ...]:
        lo, hi = self.pixel_limits(self.config)
        return (f"image pixel limits {lo}..{hi} (Alpamayo2SuperConfig min_pixels / max_pixels); images only",)
