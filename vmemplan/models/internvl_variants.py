"""InternViT chat models that differ from ``InternVLChatModel`` in a few lines (vLLM 0.33.0).

* ``NVLM_D`` (vllm/model_executor/models/nvlm_d.py::NVLM_D_Model): ``InternVLChatModel`` whose
  tower is built with ``num_dummy_heads=7`` (qkv / proj / q_norm / k_norm widened by 7 heads,
  intern_vit.py::InternParallelAttention) and whose ``mlp1`` is LayerNorm(c·r) →
  Linear(c·r → text intermediate, no bias) → GELU → Linear(text intermediate → text hidden, no bias).
* ``SkyworkR1VChatModel`` (skyworkr1v.py::SkyworkR1VChatModel): InternVisionModel up to
  ``select_layer`` and InternVL's ``mlp1`` (LayerNorm, two biased ``ReplicatedLinear``), over the
  ``llm_config`` model: the same tensors as ``InternVLChatModel``.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import (
    _ChatTower,
    _shuffle_factor,
    intern_vit_tower,
    language_model_new,
)
from vmemplan.models.vision_towers import _need, _vision

__all__ = ["NVLMD", "SkyworkR1VChat"]


def _tower_layers(config: Any) -> int:
    total = _need(_vision(config), "num_hidden_layers")
    sel = int(config.raw.get("select_layer", -1))
    return total + sel + 1 if sel < 0 else sel + 1


class _ImageOnlyTower(_ChatTower):
    """Images only: BaseInternVLProcessingInfo.get_supported_mm_limits (internvl.py) is
    ``{"image": None}`` for NVLM-D and Skywork-R1V (no video processor)."""

    modalities = ("image",)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        out = super().max_tokens_per_item(config, ctx)
        out.pop("video", None)
        return out


class _NVLMTower(_ImageOnlyTower):
    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        """nvlm_d.py::NVLM_D_Model._init_vision_model (``num_dummy_heads=7``) and ``_init_mlp1``."""
        vc = _vision(config)
        tp = 1 if ctx.mm_encoder_tp_mode == "data" else ctx.tensor_parallel_size
        w = _need(vc, "hidden_size") * _shuffle_factor(config)
        inter = _need(config.text, "intermediate_size")
        h = config.hidden_size
        return intern_vit_tower(vc, tp, _tower_layers(config), dummy_heads=7) + [
            WeightTensor("mlp1.0", "encoder", w, 1, 2),
            WeightTensor("mlp1.1", "encoder", inter, w),
            WeightTensor("mlp1.3", "encoder", h, inter),
        ]


@register
class NVLMD(_NVLMTower, Adapter):
    """``NVLM_D``: InternViT (7 dummy heads) + NVLM's ``mlp1`` + the ``llm_config`` model."""

    architectures = ("NVLM_D",)

    __new__ = language_model_new(_NVLMTower)


class _SkyworkTower(_ImageOnlyTower):
    supports_encoder_tp_data = False  # skyworkr1v.py's class does not declare it (InternVL's does)


@register
class SkyworkR1VChat(_SkyworkTower, Adapter):
    """``SkyworkR1VChatModel``: InternVL's tower and ``mlp1`` + the ``llm_config`` model."""

    architectures = ("SkyworkR1VChatModel",)

    __new__ = language_model_new(_SkyworkTower)
