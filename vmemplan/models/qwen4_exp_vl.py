"""Qwen4-Exp vision-language (``Qwen4ExpForConditionalGeneration``, Qwen3.8-Flash-Next as released):
the Qwen4-Exp language model of :mod:`vmemplan.models.qwen4_exp` under Qwen3-VL's vision transformer.

vllm/models/qwen4_exp/nvidia/model.py::Qwen4ExpForConditionalGeneration.__init__ (0.33.0) builds,
unless ``language_model_only`` (every modality limited to 0), inside ``_mark_tower_model(vllm_config,
{"image", "video"})``, ``self.visual = Qwen3_VisionTransformer(config.vision_config, ...)`` -- the
tower of qwen3_vl.py (:func:`vmemplan.models.vision_towers.qwen3_vl_tower`) -- then the
deepstack input-embedding buffers when the vision config lists deepstack levels
(:func:`vmemplan.models.multimodal.deepstack_buffers`), and ``Qwen4ExpForCausalLM`` as
``language_model``.  The M-RoPE fields stay (config.py::Qwen4ExpForConditionalGenerationConfig
strips them only for ``language_model_only``), with ``mrope_positions_factor`` 1 (qwen3_vl.py,
no video pruning), so the rotary cache keeps ``max_position_embeddings`` rows.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.multimodal import _Qwen3VLTower, deepstack_buffers
from vmemplan.models.qwen4_exp import Qwen4Exp

__all__ = ["Qwen4Exp_VL"]


@register
class Qwen4Exp_VL(_Qwen3VLTower, Qwen4Exp):
    """Qwen4-Exp's hybrid decoder plus the Qwen3-VL vision tower."""

    architectures = ("Qwen4ExpForConditionalGeneration",)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return Qwen4Exp.weight_tensors(self, ctx) + self.tower_tensors(self.config, ctx) + deepstack_buffers(self, ctx)
