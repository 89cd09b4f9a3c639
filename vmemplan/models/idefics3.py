"""Idefics3 (``Idefics3ForConditionalGeneration``: HuggingFaceM4/Idefics3-8B-Llama3, HuggingFaceTB/SmolVLM):
an Idefics2 / SigLIP-shaped vision transformer and a pixel-shuffle connector in front of a Llama decoder.

vllm/model_executor/models/idefics3.py (0.33.0): ``Idefics3Model`` builds, under
``_mark_composite_model(tower_targets={"image": (Idefics3VisionTransformer, Idefics3Connector)})``,

* ``vision_model`` = idefics2_vision_model.py::Idefics2VisionTransformer: Conv2d patch embed with
  bias, ``(image_size / patch)²`` learned positions (no position_ids buffer), ``num_hidden_layers``
  layers of [LayerNorm ×2, QKVParallelLinear and out_proj with bias, fc1/fc2 with bias] and the
  post-LayerNorm; split over TP (the class lacks ``supports_encoder_tp_data``, so vLLM turns
  ``--mm-encoder-tp-mode data`` into ``weights``);
* ``connector.modality_projection.proj``: ``ReplicatedLinear(vision hidden × scale_factor², text
  hidden, bias=False)``, whole on every rank;
* ``text_model`` = llama.py::LlamaModel on ``text_config``; the ``lm_head`` is a ParallelLMHead
  of ``text_config.vocab_size``, tied when ``text_config.tie_word_embeddings``.

The KV cache is the Llama decoder's.  Tokens per image for the encoder budget: ``image_seq_len =
(image_size / patch)² / scale_factor²`` per tile, times the tiles of the largest image that the
processor's defaults allow (Idefics3ImageProcessor ``size.longest_edge`` 4 × 364 split into 364-pixel
tiles: 4 × 4 tiles plus the global image, 17) — an estimate; preprocessor_config.json may differ.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.dense import LlamaLike
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _vision, siglip_tower

__all__ = ["Idefics3", "idefics3_tower"]

#: Idefics3ImageProcessor defaults: longest_edge 4 × 364 in 364-pixel tiles, plus the global image
IDEFICS3_MAX_TILES = 4 * 4 + 1


def idefics3_tower(vc: Any, tp: int, text_hidden: int, scale_factor: int) -> list[WeightTensor]:
    """``model.vision_model`` (Idefics2VisionTransformer, every layer, post-LayerNorm) and the
    connector's replicated bias-free projection (0.33.0)."""
    tower = siglip_tower({"num_channels": 3, **vc}, tp, post_norm=True)
    tower = [WeightTensor(t.name.replace("vision_tower.vision_model.", "model.vision_model."), t.kind, t.rows,
                          t.cols, t.count) for t in tower]
    c = _need(vc, "hidden_size")
    return tower + [WeightTensor("model.connector.modality_projection.proj", "encoder", text_hidden,
                                 c * scale_factor * scale_factor)]


@register
class Idefics3(VisionEncoderMixin, LlamaLike):
    """Idefics3: the Llama decoder on ``text_config`` plus the Idefics2 tower and the connector."""

    architectures = ("Idefics3ForConditionalGeneration",)

    shuffle_key = "scale_factor"

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        # no supports_encoder_tp_data: --mm-encoder-tp-mode data falls back to weights (vllm/config/model.py)
        return idefics3_tower(_vision(config), ctx.tensor_parallel_size, config.hidden_size, self.shuffle())


    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        per_tile = (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2 // self.shuffle() ** 2
        return {"image": IDEFICS3_MAX_TILES * per_tile}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)

    def notes(self) -> tuple[str, ...]:
        return ("image tokens per item from Idefics3ImageProcessor's default tiling (4 x 4 tiles + the global "
                "image); a checkpoint's preprocessor_config.json may allow more or fewer tiles",)
