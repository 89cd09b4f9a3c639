"""Intern-S1 (``InternS1ForConditionalGeneration``: internlm/Intern-S1, Intern-S1-mini).

vllm/model_executor/models/interns1.py::InternS1ForConditionalGeneration (0.33.0) is the class the
registry also maps ``InternVLForConditionalGeneration`` to, so the plan is the one
:class:`vmemplan.models.internvl.InternVLHF` makes, under Intern-S1's own architecture name:

* ``vision_tower``: interns1_vit.py::InternS1VisionModel, every ``num_hidden_layers`` layer
  (q/k/v/projection_layer plain ``nn.Linear``, never split; the MLP's ColumnParallel fc1 /
  RowParallel fc2 split over TP) — :func:`vmemplan.models.internvl.interns1_vit_tower`;
* ``multi_modal_projector``: InternS1MultiModalProjector (LayerNorm, two ``nn.Linear``, replicated)
  — :func:`vmemplan.models.internvl.internvl_projector`;
* both built under ``_mark_tower_model(vllm_config, {"image", "video"})``; the class does not
  declare ``supports_encoder_tp_data``;
* ``language_model``: ``init_vllm_registered_model(hf_config=config.text_config)`` — Qwen3 for
  Intern-S1-mini, Qwen3-MoE for Intern-S1 — planned by that architecture's adapter.

The encoder-cache budget is InternS1ProcessingInfo.get_max_image_tokens (the largest tile grid
plus thumbnail, ``image_seq_length`` tokens a tile) and a video of one-tile frames, as for
InternVLHF.  The checkpoint's ``model_type`` "interns1" is remote code (configuration_interns1.py,
a copy of transformers' InternVLConfig with that type): the oracle fixture uses an ``internvl``
copy of the config (see tests/fixtures/oracle/configs/SOURCES.md).
"""

from __future__ import annotations

from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import _HFTower, language_model_new

__all__ = ["InternS1"]


@register
class InternS1(_HFTower, Adapter):
    """``InternS1ForConditionalGeneration``: InternS1 ViT + ``multi_modal_projector`` + the
    ``text_config`` model."""

    architectures = ("InternS1ForConditionalGeneration",)

    __new__ = language_model_new(_HFTower)
