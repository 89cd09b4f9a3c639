"""Qwen3.5 / Qwen3.6 vision-language (``Qwen3_5ForConditionalGeneration``,
``Qwen3_5MoeForConditionalGeneration``): the gated-delta hybrid language model of
:mod:`vmemplan.models.hybrid_qwen` plus Qwen3-VL's vision transformer.

vllm/model_executor/models/qwen3_5.py::Qwen3_5ForConditionalGeneration (0.33.0) builds
``self.visual = Qwen3_VisionTransformer(config.vision_config, ...)``, the tower of
qwen3_vl.py (:func:`vmemplan.models.vision_towers.qwen3_vl_tower`), unless every modality is
limited to 0 per prompt; its encoder output per token is ``out_hidden_size × (1 + deepstack
levels)`` wide (the released Qwen3.5 configs have no deepstack levels).
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid_qwen import Qwen3_5
from vmemplan.models.multimodal import _Qwen3VLTower

__all__ = ["Qwen3_5_VL"]


@register
class Qwen3_5_VL(_Qwen3VLTower, Qwen3_5):
    """Qwen3.5's hybrid decoder plus the Qwen3-VL vision tower."""

    architectures = ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return Qwen3_5.weight_tensors(self, ctx) + self.tower_tensors(self.config, ctx)
