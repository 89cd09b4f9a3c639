"""OpenCUA (``OpenCUAForConditionalGeneration``, xlangai/OpenCUA-7B): the Qwen2.5-VL vision transformer
in front of a Qwen2 decoder with plain (1-D) RoPE.

vllm/model_executor/models/opencua.py (0.33.0): ``OpenCUAForConditionalGeneration`` subclasses
``Qwen2_5_VLForConditionalGeneration`` but builds its own ``__init__``:

* under ``_mark_tower_model(vllm_config, "image")`` the ``Qwen2_5_VisionTransformer`` (imported as
  ``OpenCUAVisionTransformer``) from ``vision_config`` — :func:`vmemplan.models.vision_towers.qwen2_5_vl_tower`;
* the language model with ``init_vllm_registered_model(hf_config=config.text_config,
  architectures=["Qwen2ForCausalLM"])``: a plain Qwen2 decoder, whose rotary cache is the ordinary
  one unless the text config names M-RoPE (OpenCUA's does not: 1-D RoPE);
* ``supports_encoder_tp_data = True`` (``--mm-encoder-tp-mode data`` keeps the tower whole).

Encoder profile: ``OpenCUAProcessingInfo.get_supported_mm_limits`` is images only; the largest
image is Qwen2-VL's (``Qwen2VLProcessingInfo.get_max_image_tokens``) with the checkpoint's
preprocessor_config.json pixel limits (``_QwenVLBase.pixel_limits``: transformers' defaults when
config.json does not carry them).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext
from vmemplan.models.base import register
from vmemplan.models.multimodal import Qwen2_5_VL

__all__ = ["OpenCUA"]


@register
class OpenCUA(Qwen2_5_VL):
    """Qwen2.5-VL's tower over the Qwen2 text config; images only."""

    architectures = ("OpenCUAForConditionalGeneration",)  # type: ignore[assignment]
    modalities = ("image",)  # type: ignore[assignment]  # OpenCUAProcessingInfo.get_supported_mm_limits

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        return {k: v for k, v in super().max_tokens_per_item(config, ctx).items() if k == "image"}
