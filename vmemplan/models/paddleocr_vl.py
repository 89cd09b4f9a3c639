"""PaddleOCR-VL (``PaddleOCRVLForConditionalGeneration``, PaddlePaddle/PaddleOCR-VL): a NaViT SigLIP
tower and a 2 × 2 patch-merging projector in front of the ERNIE-4.5 dense decoder.

vllm/model_executor/models/paddleocr_vl.py::PaddleOCRVLForConditionalGeneration (0.33.0) folds the
``text_config`` keys into the top-level config (all but model_type / architectures /
tie_word_embeddings), then builds, under ``_mark_tower_model(vllm_config, "image")``,

* ``visual`` = the module's own SiglipVisionModel (siglip_navit.py::navit_siglip_tower: SigLIP with
  the position_ids buffer, the rotary ``inv_freq``, post-LayerNorm), split over TP; the class lacks
  ``supports_encoder_tp_data``, so ``--mm-encoder-tp-mode data`` runs as ``weights``;
* ``mlp_AR`` = Projector: LayerNorm(vision hidden), nn.Linear(4c → 4c) and nn.Linear(4c → text
  hidden), biased, whole on every rank (siglip_navit.py::merge_projector with tp 1);

and under ``_mark_language_model`` ``language_model`` = ernie45.py::Ernie4_5ForCausalLM on that
config (a LlamaForCausalLM without the o_proj bias: the declared ``Ernie4_5ForCausalLM`` of
registry/architectures/llama.yaml), whose rotary is M-RoPE (``mrope_section``: a
``max_position × 4`` cache).  The LM head is tied: transformers' PaddleOCRVLConfig turns
``tie_word_embeddings`` on when its text config's is (PaddleOCRTextConfig default True, and a flat
hub config leaves the key to the top level), and vLLM's Llama reads the top-level flag.

Tokens per image (PaddleOCRVLProcessingInfo.get_image_size_with_most_features, 0.33.0): the
``max_pixels // 28²`` merged-token budget factored as ``h = isqrt(n)``, ``w = (n - n % h) // h``, then
``get_num_image_tokens`` (smart_resize, patch 14, merge 2).  ``max_pixels`` / ``min_pixels`` come
from the config when it has them (preprocessor_config.json keys), else transformers'
PaddleOCRVLImageProcessor ``size`` defaults (longest_edge 1536², shortest_edge 384²).
"""

from __future__ import annotations

import math
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.paligemma import _combined as combined_with
from vmemplan.models.siglip_navit import NaViTTowerMixin, config_pixel_limits, merge_projector, navit_siglip_tower
from vmemplan.models.vision_towers import _need, _vision

__all__ = ["PaddleOCRVL", "PADDLE_VISION_DEFAULTS", "paddle_max_image_tokens"]

#: transformers 5.20.2 PaddleOCRVisionConfig defaults (models/paddleocr_vl/configuration_paddleocr_vl.py)
PADDLE_VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
    "num_channels": 3, "image_size": 384, "patch_size": 14, "spatial_merge_size": 2,
}
#: transformers PaddleOCRVLImageProcessor ``size`` defaults (shortest_edge / longest_edge, in pixels)
PADDLE_MIN_PIXELS = 384 * 384
PADDLE_MAX_PIXELS = 1536 * 1536


def paddle_max_image_tokens(*, patch: int, merge: int, min_pixels: int, max_pixels: int) -> int:
    """Tokens of PaddleOCR-VL's largest dummy image (see the module)."""
    factor = patch * merge
    n = max_pixels // (factor * factor)
    h = max(math.isqrt(n), 1)
    w = (n - n % h) // h
    rh, rw = mm_law.smart_resize(h * factor, w * factor, factor=factor, min_pixels=min_pixels, max_pixels=max_pixels)
    return (rh // patch) * (rw // patch) // (merge * merge)


class _PaddleTower(NaViTTowerMixin):
    """The tower half; combined with the declared Ernie4_5ForCausalLM adapter."""

    modalities = ("image",)

    def head_tied(self) -> bool:
        text = self.config.raw.get("text_config")  # type: ignore[attr-defined]
        text_tied = text.get("tie_word_embeddings", True) if isinstance(text, dict) else True
        return bool(self.config.raw.get("tie_word_embeddings", True) or text_tied)  # type: ignore[attr-defined]

    def vision(self, config: Any) -> dict[str, Any]:
        return {**PADDLE_VISION_DEFAULTS, **_vision(config)}

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = self.vision(config)
        return (navit_siglip_tower(vc, ctx.tensor_parallel_size)
                + merge_projector("mlp_AR", _need(vc, "hidden_size"), config.hidden_size))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = self.vision(config)
        return _need(vc, "hidden_size"), _need(vc, "intermediate_size")

    def pixel_limits(self, config: Any) -> tuple[int, int]:
        return config_pixel_limits(config, PADDLE_MIN_PIXELS, PADDLE_MAX_PIXELS)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = self.vision(config)
        lo, hi = self.pixel_limits(config)
        return {"image": paddle_max_image_tokens(patch=_need(vc, "patch_size"), merge=int(vc["spatial_merge_size"]),
                                                 min_pixels=lo, max_pixels=hi)}


@register
class PaddleOCRVL(_PaddleTower, Adapter):
    """``PaddleOCRVLForConditionalGeneration``: NaViT SigLIP + ``mlp_AR`` + ERNIE-4.5 (M-RoPE, tied head)."""

    architectures = ("PaddleOCRVLForConditionalGeneration",)

    def __new__(cls, config: Any) -> Any:
        return combined_with(_PaddleTower, "Ernie4_5ForCausalLM", config)
