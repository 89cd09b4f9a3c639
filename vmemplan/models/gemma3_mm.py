"""Gemma-3 with its vision tower (``Gemma3ForConditionalGeneration``: google/gemma-3-4b/12b/27b-it).

vllm/model_executor/models/gemma3_mm.py::Gemma3ForConditionalGeneration (0.33.0) builds, under
``_mark_tower_model(vllm_config, "image")``,

* ``vision_tower`` = siglip.py::SiglipVisionModel(vision_config): the same SigLIP tower as PaliGemma
  (Conv2d patch embed with bias, ``(image_size / patch)²`` positions and their int64 ``position_ids``
  buffer, biased layers, post-LayerNorm), split over TP (the class does not declare
  ``supports_encoder_tp_data``, so ``--mm-encoder-tp-mode data`` runs as ``weights``);
* ``multi_modal_projector`` = Gemma3MultiModalProjector: the plain parameter
  ``mm_input_projection_weight`` (vision hidden × text hidden) and ``mm_soft_emb_norm``
  (GemmaRMSNorm over the vision hidden size), whole on every rank; its AvgPool2d holds nothing;

then the language model from ``text_config`` as ``Gemma3ForCausalLM`` (:class:`vmemplan.models.gemma3.Gemma3`).
An image costs ``mm_tokens_per_image`` tokens (256; Gemma3ProcessingInfo.get_num_image_tokens gives
``(crops + 1) × image_seq_length``, and pan-and-scan, off by default, adds no crops).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.gemma3 import Gemma3
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.paligemma import siglip_vision, siglip_with_positions
from vmemplan.models.vision_towers import _need

__all__ = ["Gemma3MM"]


@register
class Gemma3MM(VisionEncoderMixin, Gemma3):
    """SigLIP + Gemma3MultiModalProjector over the Gemma-3 decoder."""

    architectures = ("Gemma3ForConditionalGeneration",)
    modalities = ("image",)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = siglip_vision(config)
        c = _need(vc, "hidden_size")
        return siglip_with_positions(vc, ctx.tensor_parallel_size) + [
            WeightTensor("multi_modal_projector.mm_input_projection_weight", "encoder", c, config.hidden_size),
            WeightTensor("multi_modal_projector.mm_soft_emb_norm", "encoder", c, 1),
        ]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": int(config.raw.get("mm_tokens_per_image") or 256)}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
