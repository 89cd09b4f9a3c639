"""Phi-4-reasoning-vision (``Phi4ForCausalLMV``): a Siglip2 NaFlex tower without its last layer and a
LLaVA two-layer projector in front of the Phi-3-graph (Phi-4) decoder.

vllm/model_executor/models/phi4siglip.py::Phi4ForCausalLMV (0.33.0) builds, under
``_mark_tower_model(vllm_config, "image")``,

* ``vision_tower`` = lfm2_siglip2.py::Siglip2Model(Siglip2VisionConfig(**vision_config)) with
  ``num_hidden_layers_override = num_hidden_layers - 1`` (layer_idx -2) and
  ``require_post_norm=False`` (siglip_navit.py::siglip2_navit_tower), split over TP; the class lacks
  ``supports_encoder_tp_data``, so ``--mm-encoder-tp-mode data`` runs as ``weights``;
* ``multi_modal_projector`` = llava.py::LlavaMultiModalProjector(``mm_hidden_size`` → text hidden,
  gelu, bias): ColumnParallelLinear linear_1 and RowParallelLinear linear_2, split over TP;

and under ``_mark_language_model`` ``init_vllm_registered_model(hf_config=config,
architectures=["Phi3ForCausalLM"])`` on the top-level config.  Tokens per image
(Phi4SiglipProcessingInfo.get_mm_max_tokens_per_item): ``max_num_patches`` (default 3600).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.lfm2_vl import _Lfm2VLTower
from vmemplan.models.paligemma import _combined as combined_with
from vmemplan.models.siglip_navit import siglip2_navit_tower
from vmemplan.models.vision_towers import _need, _vision

__all__ = ["Phi4SiglipV"]


class _Phi4SiglipTower(_Lfm2VLTower):
    """The tower half (Siglip2 minus its last layer + the LLaVA projector); combined with Phi-3."""

    shuffle_key = None

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = {"patch_size": 16, **_vision(config)}
        tp = ctx.tensor_parallel_size
        mm, h = int(config.raw.get("mm_hidden_size") or _need(vc, "hidden_size")), config.hidden_size
        tower = siglip2_navit_tower(vc, tp, num_layers=_need(vc, "num_hidden_layers") - 1, post_norm=False)
        return tower + [
            WeightTensor("multi_modal_projector.linear_1", "encoder", h // tp, mm),
            WeightTensor("multi_modal_projector.linear_1.bias", "encoder", h // tp, 1),
            WeightTensor("multi_modal_projector.linear_2", "encoder", h, h // tp),
            WeightTensor("multi_modal_projector.linear_2.bias", "encoder", h, 1),
        ]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": int(config.raw.get("max_num_patches", 3600))}


@register
class Phi4SiglipV(_Phi4SiglipTower, Adapter):
    """``Phi4ForCausalLMV``: Siglip2 (n − 1 layers) + LLaVA projector + Phi-3 on the top-level config."""

    architectures = ("Phi4ForCausalLMV",)

    def __new__(cls, config: Any) -> Any:
        return combined_with(_Phi4SiglipTower, "Phi3ForCausalLM", config)
