"""Command A Vision (``Cohere2VisionForConditionalGeneration``): a SigLIP tower and a pixel-shuffle
SwiGLU projector in front of the Cohere2 decoder.

vllm/model_executor/models/cohere2_vision.py (0.33.0): under ``_mark_tower_model(vllm_config, "image")``
it builds

* ``vision_tower`` = siglip.py::SiglipVisionModel(vision_config): Conv2d patch embed with bias,
  ``(image_size / patch)²`` learned positions and their int64 ``position_ids`` buffer, layers of
  [LayerNorm ×2, biased qkv/out/fc1/fc2], the post-LayerNorm (every layer is built), no head;
  split over TP (no ``supports_encoder_tp_data``: vLLM turns ``--mm-encoder-tp-mode data`` into ``weights``);
* ``multi_modal_projector`` (Cohere2VisionMultiModalProjector): ``linear_1`` a
  MergedColumnParallelLinear(vision hidden × downsample_factor², 2 × alignment_intermediate_size / 2,
  bias) and ``linear_2`` a RowParallelLinear(alignment_intermediate_size / 2, text hidden, bias):
  both always split over TP (no ``disable_tp``), no LayerNorm;

then the language model from ``text_config`` with ``architectures=config.text_config.architectures``
(Cohere2ForCausalLM: vmemplan/models/commandr.py::Cohere).  Tokens per image: the largest image the
Cohere2VisionImageProcessor allows, ``max_patches`` (12 by default) tiles plus a thumbnail of
``(image_size / patch / downsample)²`` tokens each — an estimate for the encoder budget.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.commandr import Cohere
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _split, _vision, siglip_tower

__all__ = ["Cohere2Vision"]

#: Cohere2VisionImageProcessor default ``max_patches`` (transformers) plus the thumbnail
COHERE2_VISION_MAX_TILES = 12 + 1


@register
class Cohere2Vision(VisionEncoderMixin, Cohere):
    """Cohere2 decoder on ``text_config`` plus SigLIP and the TP-split SwiGLU projector."""

    architectures = ("Cohere2VisionForConditionalGeneration",)
    shuffle_key = "downsample_factor"  # the projector takes downsample_factor² patches a token

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)  # ctx: the tower's TP mode (no supports_encoder_tp_data: weights)
        out = siglip_tower({"num_channels": 3, **vc}, ctx.tensor_parallel_size, post_norm=True)
        npos = (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2
        out.append(WeightTensor("vision_tower.vision_model.embeddings.position_ids", "buffer", 1, npos,
                                dtype="int64"))
        c = _need(vc, "hidden_size")
        inter = int(config.raw.get("alignment_intermediate_size", 36864)) // 2
        ptp = ctx.tensor_parallel_size
        half = _split(inter, ptp, "projector width")
        h = config.hidden_size
        d = self.shuffle()
        out += [
            WeightTensor("multi_modal_projector.linear_1", "encoder", 2 * half, c * d * d),
            WeightTensor("multi_modal_projector.linear_1.bias", "encoder", 2 * half, 1),
            WeightTensor("multi_modal_projector.linear_2", "encoder", h, half),
            WeightTensor("multi_modal_projector.linear_2.bias", "encoder", h, 1),
        ]
        return out


    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        per_tile = (_need(vc, "image_size") // _need(vc, "patch_size") // self.shuffle()) ** 2
        return {"image": COHERE2_VISION_MAX_TILES * per_tile}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
