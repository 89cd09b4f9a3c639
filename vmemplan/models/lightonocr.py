"""LightOnOCR (``LightOnOCRForConditionalGeneration``, e.g. lightonai/LightOnOCR-2-1B): the Mistral-3
vision side (Pixtral-HF encoder and the patch-merging projector) in front of a Qwen3 decoder.

vllm/model_executor/models/lightonocr.py (0.33.0): ``LightOnOCRForConditionalGeneration`` subclasses
``Mistral3ForConditionalGeneration`` and builds, under ``_mark_tower_model(vllm_config, "image")``,
``init_vision_tower_for_mistral3(config, require_post_norm=False)`` (PixtralHFVisionModel, no post
norm) and ``Mistral3MultiModalProjector`` (RMSNorm, patch merger, linear_1 / linear_2 with
``multimodal_projector_bias``), then the language model from ``text_config`` with
``init_vllm_registered_model`` (its own ``architectures``: Qwen3ForCausalLM for LightOnOCR).

So the tensors are :class:`vmemplan.models.multimodal.Mistral3`'s vision side on top of
:class:`vmemplan.models.dense.Qwen3` (q/k RMSNorm per head, the text config's tied embedding), plus
the Pixtral tower's 2-D rotary buffers: with transformers >= 5.17 (the oracle's 5.20.2)
vllm/model_executor/models/pixtral.py::PixtralHFVisionModel builds transformers'
``PixtralVisionRotaryEmbedding`` on the GPU (``.to(self.device)``), whose ``inv_freq`` and
``original_inv_freq`` are fp32 buffers of ``head_dim / 2`` elements each.
"""

from __future__ import annotations

from vmemplan.models.base import register
from vmemplan.models.dense import Qwen3
from vmemplan.models.multimodal import Mistral3
from vmemplan.models.vision_towers import pixtral_rotary_buffers

__all__ = ["LightOnOCR", "pixtral_rotary_buffers"]


@register
class LightOnOCR(Mistral3, Qwen3):
    """Mistral3's Pixtral tower + projector (``vision_weight_tensors``) over the Qwen3 decoder."""

    architectures = ("LightOnOCRForConditionalGeneration",)

    # Mistral3.vision_weight_tensors counts the tower's rotary buffers (pixtral_rotary_buffers); no
    # supports_encoder_tp_data (the mixin's default): data mode runs as weights
