"""LFM2-VL (``Lfm2VlForConditionalGeneration``, LiquidAI/LFM2-VL-450M / -1.6B): a Siglip2 NaFlex tower
and a pixel-unshuffle MLP projector in front of the LFM2 hybrid (short-conv + attention) decoder.

vllm/model_executor/models/lfm2_vl.py::Lfm2VLForConditionalGeneration (0.33.0) builds, under
``_mark_tower_model(vllm_config, "image")``,

* ``vision_tower`` = lfm2_siglip2.py::Siglip2Model(vision_config) (``model_type``
  siglip2_vision_model; siglip_navit.py::siglip2_navit_tower: every layer, post-LayerNorm), split
  over TP; the class lacks ``supports_encoder_tp_data``, so ``--mm-encoder-tp-mode data`` runs as
  ``weights`` (and the tower's ``disable_tp`` stays off);
* ``multi_modal_projector`` = Lfm2VLMultiModalProjector: LayerNorm(c · f²) under
  ``projector_use_layernorm``, ReplicatedLinear linear_1 (c · f² → ``projector_hidden_size``) and
  linear_2 (→ text hidden), biased under ``projector_bias`` (f: ``downsample_factor``), whole on every
  rank;

and under ``_mark_language_model`` the ``text_config`` model (``Lfm2ForCausalLM``: lfm2.py::Lfm2, its
conv state and attention KV cache).  Tokens per image: the processor's ``max_image_tokens``
(Lfm2VlImageProcessor default 256): the dummy image has exactly that many (get_image_size_with_most_features).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.paligemma import _combined as combined_with
from vmemplan.models.siglip_navit import siglip2_navit_tower
from vmemplan.models.vision_towers import _need, _vision

__all__ = ["Lfm2VL", "unshuffle_projector"]

#: Lfm2VlImageProcessor's max_image_tokens default
LFM2_VL_MAX_IMAGE_TOKENS = 256


def unshuffle_projector(config: Any, prefix: str = "multi_modal_projector") -> list[WeightTensor]:
    """Lfm2VLMultiModalProjector (see the module), replicated."""
    f = int(config.raw.get("downsample_factor", 2))
    wide = _need(_vision(config), "hidden_size") * f * f
    mid = int(config.raw.get("projector_hidden_size", 2560))
    out = [WeightTensor(f"{prefix}.linear_1", "encoder", mid, wide),
           WeightTensor(f"{prefix}.linear_2", "encoder", config.hidden_size, mid)]
    if config.raw.get("projector_use_layernorm", True):
        out.append(WeightTensor(f"{prefix}.layer_norm", "encoder", wide, 1, 2))
    if config.raw.get("projector_bias", True):
        out += [WeightTensor(f"{prefix}.linear_1.bias", "encoder", mid, 1),
                WeightTensor(f"{prefix}.linear_2.bias", "encoder", config.hidden_size, 1)]
    return out


class _Lfm2VLTower(VisionEncoderMixin):
    """The tower half; combined with the ``text_config`` model's adapter."""

    modalities = ("image",)
    shuffle_key: str | None = "downsample_factor"

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return siglip2_navit_tower(_vision(config), ctx.tensor_parallel_size) + unshuffle_projector(config)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": int(config.raw.get("max_image_tokens", LFM2_VL_MAX_IMAGE_TOKENS))}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        tower = self.tower_tensors(self.config, ctx)  # type: ignore[attr-defined]
        return [*super().weight_tensors(ctx), *tower]  # type: ignore[misc]


@register
class Lfm2VL(_Lfm2VLTower, Adapter):
    """``Lfm2VlForConditionalGeneration``: Siglip2 + the unshuffle projector + the ``text_config`` LFM2."""

    architectures = ("Lfm2VlForConditionalGeneration",)

    def __new__(cls, config: Any) -> Any:
        archs = config.text.get("architectures") or ["Lfm2ForCausalLM"]
        return combined_with(_Lfm2VLTower, str(archs[0]), config)
