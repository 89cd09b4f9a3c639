"""Qianfan-OCR (``QianfanOCRForConditionalGeneration``, baidu/Qianfan-OCR).

vllm/model_executor/models/qianfan_ocr.py (0.33.0): QianfanOCRForConditionalGeneration subclasses
internvl.py::InternVLChatModel unchanged (InternViT + ``mlp1`` + the ``text_config`` language
model, Qwen3-4B in the release), after ``_add_intern_vit_fields`` renames the transformers-format
vision config (``qianfan_ocr_vision``) to the keys intern_vit.py reads: ``image_size`` /
``patch_size`` lists to their first entry, ``qkv_bias`` from ``attention_bias``,
``qk_normalization`` from ``use_qk_norm``.  So the tensors are those of
:class:`vmemplan.models.internvl.InternVLChat`'s tower on the renamed config:

* ``vision_model``: intern_vit.py::InternVisionModel up to ``select_layer`` (QKVParallel ``qkv``
  and RowParallel ``proj`` split over TP when it divides the heads, the MLP split; whole under
  ``--mm-encoder-tp-mode data``, InternVLChatModel's ``supports_encoder_tp_data``) —
  :func:`vmemplan.models.internvl.intern_vit_tower`;
* ``mlp1``: LayerNorm + two replicated ``nn.Linear`` — :func:`vmemplan.models.internvl.internvl_projector`;
* both under ``_mark_tower_model(vllm_config, {"image", "video"})``; the language model from
  ``init_vllm_registered_model(hf_config=config.text_config)``, planned by its own adapter.

Encoder-cache budget: QianfanOCRProcessingInfo is image-only (``ctx_video_token=None``, no video
limit), the largest image being InternVLChat's (``max_dynamic_patch`` tiles plus the thumbnail,
``(image_size / patch)² · downsample_ratio²`` tokens a tile), so no video item is profiled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import _ChatTower, language_model_new
from vmemplan.models.vision_towers import _vision

__all__ = ["QianfanOCR", "intern_vit_fields"]


def intern_vit_fields(vc: Mapping[str, Any]) -> dict[str, Any]:
    """The vision config as qianfan_ocr.py::_add_intern_vit_fields leaves it."""
    out = dict(vc)
    for name in ("image_size", "patch_size"):
        if isinstance(out.get(name), (list, tuple)):
            out[name] = out[name][0]
    out.setdefault("qkv_bias", out.get("attention_bias", True))
    out.setdefault("qk_normalization", out.get("use_qk_norm", False))
    return out


class _QianfanTower(_ChatTower):
    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = intern_vit_fields(_vision(config))
        return super().vision_weight_tensors(_Renamed(config, vc), ctx)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The largest image only (no video token)."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0:
            return {"image": self.max_tiles(config) * self.tokens_per_tile(config)}
        return {}


class _Renamed:
    """``config`` with ``raw["vision_config"]`` replaced (everything else passed through)."""

    def __init__(self, config: Any, vc: Mapping[str, Any]) -> None:
        self._config = config
        self.raw = {**config.raw, "vision_config": vc}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._config, name)


@register
class QianfanOCR(_QianfanTower, Adapter):
    """``QianfanOCRForConditionalGeneration``: InternVLChatModel's InternViT + ``mlp1`` + the
    ``text_config`` model, on the renamed vision config."""

    architectures = ("QianfanOCRForConditionalGeneration",)

    __new__ = language_model_new(_QianfanTower)
