"""Qwen3-VL MoE (``Qwen3VLMoeForConditionalGeneration``, e.g. Qwen3-VL-30B-A3B / 235B-A22B): the
Qwen3-MoE decoder of :mod:`vmemplan.models.moe` with interleaved M-RoPE plus Qwen3-VL's deepstack
vision transformer (vllm/model_executor/models/qwen3_vl_moe.py::Qwen3VLMoeForConditionalGeneration,
a Qwen3VLForConditionalGeneration whose language model is Qwen3MoeLLMForCausalLM, 0.33.0).
"""

from __future__ import annotations

from vmemplan.models.base import register
from vmemplan.models.moe import Qwen3Moe
from vmemplan.models.multimodal import _Qwen3VLDeepstack

__all__ = ["Qwen3_VL_Moe"]


@register
class Qwen3_VL_Moe(_Qwen3VLDeepstack, Qwen3Moe):
    """Qwen3-MoE text with M-RoPE plus the deepstack ViT (see :class:`_Qwen3VLDeepstack`)."""

    architectures = ("Qwen3VLMoeForConditionalGeneration",)
