"""Llama Nemotron VL embedding (``LlamaNemotronVLModel``: nvidia/llama-nemotron-embed-vl-1b-v2, vLLM
--runner pooling): a SigLIP tower, InternVL's pixel-shuffle ``mlp1`` and a bidirectional Llama.

vllm/model_executor/models/nemotron_vl.py::LlamaNemotronVLForEmbedding (0.33.0; registry.py maps
``LlamaNemotronVLModel`` to it) builds, under ``_mark_tower_model(vllm_config, "image")``,

* ``vision_model`` = siglip.py::SiglipVisionModel(vision_config, use_head=False): Conv2d patch embed
  with bias, ``(image_size / patch)²`` learned positions and their int64 ``position_ids`` buffer,
  every layer, the post-LayerNorm (``select_layer`` is not read for the tower); split over TP (the
  class lacks ``supports_encoder_tp_data``, so vLLM turns ``--mm-encoder-tp-mode data`` into
  ``weights``);
* ``mlp1``: LayerNorm(c·r) -> Linear(c·r -> h) -> GELU -> Linear(h -> h), all with bias, replicated
  (``_init_mlp1`` with the projector width = the text hidden size), ``r = int(1 / downsample_ratio)²``;

then ``init_vllm_registered_model`` on ``config.get_text_config()`` = ``llm_config``
(``LlamaBidirectionalModel``: vmemplan's pooling_decoders.py::LlamaBidirectionalEmbedding; vLLM's
model_executor/models/config.py::LlamaNemotronVLConfig sets ``llm_config.is_causal = False``), no
LM head; the pooler holds no weights.  Image tokens: InternVL-style tiles of
``(image_size / patch)² · downsample_ratio²`` tokens, ``max_dynamic_patch`` of them (default 1)
plus the thumbnail (LlamaNemotronVLEmbedProcessingInfo forces ``use_thumbnail``) when
``dynamic_image_size`` (default True); a checkpoint's processor_config.json ``max_input_tiles`` may
differ (an estimate for the encoder budget).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import Adapter, register
from vmemplan.models.eagle2_5_vl import SiglipInternTower
from vmemplan.models.internvl import _shuffle_factor, internvl_projector, language_model_new
from vmemplan.models.paligemma import siglip_vision, siglip_with_positions
from vmemplan.models.vision_towers import _need

__all__ = ["LlamaNemotronVLEmbed"]


class _NemotronVLEmbedTower(SiglipInternTower):
    """The tower half; combined with the ``llm_config`` adapter by ``internvl._with_language_model``."""

    supports_encoder_tp_data = False  # nemotron_vl.py's class does not declare it (InternVL's does)

    def max_tiles(self, config: Any) -> int:
        raw = config.raw
        if not bool(raw.get("dynamic_image_size", True)):
            return 1
        blocks = int(raw.get("max_dynamic_patch", 1))
        return blocks + (1 if blocks != 1 else 0)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = siglip_vision(config)
        tower = siglip_with_positions(vc, ctx.tensor_parallel_size, prefix="vision_model.vision_model")
        return tower + internvl_projector(_need(vc, "hidden_size"), config.hidden_size, _shuffle_factor(config),
                                          "mlp1")


    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """Plus ``input_norm`` (layers/fusion/mm_input_norm.py::FusedMMInputNorm): its ``weight`` and
        ``bias`` buffers, 3 fp32 values each, built outside the tower (kept when images are off) since the
        class sets ``supports_mm_device_do_normalize`` and vLLM then defaults ``mm_device_do_normalize``
        on (config/model.py::_resolve_mm_device_do_normalize; off only under VLLM_USE_RUST_FRONTEND or
        an explicit false, which vmemplan does not model)."""
        return super().weight_tensors(ctx) + [
            WeightTensor("input_norm.weight", "buffer", 3, 1, dtype="float32"),
            WeightTensor("input_norm.bias", "buffer", 3, 1, dtype="float32"),
        ]



@register
class LlamaNemotronVLEmbed(_NemotronVLEmbedTower, Adapter):
    """``LlamaNemotronVLModel``: SigLIP + ``mlp1`` + the bidirectional ``llm_config`` Llama."""

    architectures = ("LlamaNemotronVLModel",)
    default_runner = "pooling"

    __new__ = language_model_new(_NemotronVLEmbedTower)
