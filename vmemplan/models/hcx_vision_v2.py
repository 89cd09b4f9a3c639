"""HyperCLOVAX V2 vision-language (``HCXVisionV2ForCausalLM``): the HyperCLOVAX decoder of
``text_config``, a Qwen2.5-VL vision transformer and a linear projector.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hyperclovax import HyperCLOVAX
from vmemplan.models.multimodal import _QwenVLBase
from vmemplan.models.vision_towers import _tower_tp, _vision, qwen2_5_vl_tower

__all__ = ["HCXVisionV2"]


@register
class HCXVisionV2(_QwenVLBase, HyperCLOVAX):
    """vllm/model_executor/models/hyperclovax_vision_v2.py::HCXVisionV2ForCausalLM (0.33.0).

    The language model is ``init_vllm_registered_model(hf_config=text_config)`` (here the
    HyperCLOVAX graph, with ``post_norm1``/``post_norm2`` under ``use_post_norm``); the tower is
    ``Qwen2_5_VisionTransformer`` (built when images or video are allowed) and
    ``mm_projector`` an ``nn.Linear(out_hidden_size → text hidden, bias)`` replicated on every
    rank.  The composite config's top-level ``tie_word_embeddings`` reaches the text model
    (transformers 5 passes it down), so it decides the tied head.
    """

    supports_encoder_tp_data = False  # HCXVisionV2ForCausalLM does not declare it (unlike Qwen2.5-VL)

    architectures = ("HCXVisionV2ForCausalLM",)

    def head_tied(self) -> bool:
        raw = self.config.raw
        if isinstance(raw.get("tie_word_embeddings"), bool):
            return bool(raw["tie_word_embeddings"])
        return super().head_tied()

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)
        out_hidden = int(vc.get("out_hidden_size", vc.get("hidden_size")))
        h = self.config.hidden_size
        return qwen2_5_vl_tower(vc, _tower_tp(ctx)) + [
            WeightTensor("mm_projector", "encoder", h, out_hidden),
            WeightTensor("mm_projector.bias", "encoder", h, 1),
        ]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
