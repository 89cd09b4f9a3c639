"""Qwen3-VL MoE (``Qwen3VLMoeForConditionalGeneration``, e.g. Qwen3-VL-30B-A3B / 235B-A22B): the
Qwen3-MoE decoder of :mod:`vmemplan.models.moe` with interleaved M-RoPE plus Qwen3-VL's deepstack
vision transformer (vllm/model_executor/models/qwen3_vl_moe.py::Qwen3VLMoeForConditionalGeneration,
a Qwen3VLForConditionalGeneration whose language model is Qwen3MoeLLMForCausalLM, 0.33.0).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.moe import Qwen3Moe
from vmemplan.models.multimodal import _QwenVLBase, deepstack_buffers
from vmemplan.models.vision_towers import _need, _tower_tp, _vision, qwen3_vl_tower

__all__ = ["Qwen3_VL_Moe"]


@register
class Qwen3_VL_Moe(_QwenVLBase, Qwen3Moe):
    """Qwen3-MoE text with M-RoPE plus the deepstack ViT; the encoder output held per token is
    ``out_hidden × (1 + deepstack levels)`` wide."""

    architectures = ("Qwen3VLMoeForConditionalGeneration",)
    mrope_factor_one_from = (0, 32)  # qwen3_vl.py::mrope_positions_factor: 1 without video pruning
    weights_read_batch_tokens = True  # the deepstack input-embedding buffers

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return qwen3_vl_tower(_vision(config), _tower_tp(ctx))

    def encoder_output_width(self, config: Any) -> int:
        vc = _vision(config)
        return _need(vc, "out_hidden_size") * (1 + len(vc.get("deepstack_visual_indexes") or []))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return (self._with_mrope(super().weight_tensors(ctx), ctx) + self.tower_tensors(self.config, ctx)
                + deepstack_buffers(self, ctx))
