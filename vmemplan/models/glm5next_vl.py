"""GLM-5.3-Flash with its vision tower (``Glm5NextForConditionalGeneration``): the GLM-OCR-style
vision transformer in front of the Glm5Next decoder (KDA + sparse MLA + MoE).

vllm/models/glm5next/common/model.py::Glm5NextForConditionalGeneration (0.33.0) subclasses
``Glm4vForConditionalGeneration`` (so ``supports_encoder_tp_data`` and GLM-4V's processing) with its
own ``__init__``:

* under ``_mark_tower_model(vllm_config, {"image", "video"})`` a ``Glm5NextVisionTransformer``
  (vllm/models/glm5next/common/multimodal.py), built with ``quant_config=None``: Conv3d patch embed
  (bias), ``depth`` blocks of [RMSNorm ×2, attention with per-head q/k RMSNorm, qkv and proj with
  bias, a SwiGLU MLP of the vision ``intermediate_size`` with biases], ``post_layernorm``, the
  Conv2d ``downsample`` (bias) and ``Glm5NextPatchMerger(d_model=out_hidden_size,
  context_dim=projection_intermediate_size, bias=False)``: the tensors of
  :func:`vmemplan.models.glm_ocr.glm_ocr_tower`, except the rotary cache: ``get_rope(head_dim,
  max_position=text_config.max_position_embeddings, partial_rotary_factor=0.5)``, so
  ``max_position_embeddings × head_dim/2`` rather than GLM-OCR's 8192 rows; the input norm is the
  identity unless device-side normalisation is asked for (``build_mm_input_norm``);
* the language model ``init_vllm_registered_model(hf_config=config.text_config,
  architectures=["Glm5NextForCausalLM"])``: :class:`vmemplan.models.glm5next.Glm5Next`.

Encoder profile: ``Glm5NextProcessingInfo`` subclasses ``Glm4vProcessingInfo``
(:class:`vmemplan.models.glm4v._Glm4VBase`'s image and video budget).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.glm4v import _Glm4VBase
from vmemplan.models.glm5next import Glm5Next
from vmemplan.models.glm_ocr import glm_ocr_tower
from vmemplan.models.vision_towers import _need, _tower_tp, _vision

__all__ = ["Glm5NextVL", "glm5next_tower"]

#: Glm5NextVisionConfig.projection_intermediate_size's default (transformers 5.20)
_PROJECTION_DEFAULT = 10240


def glm5next_tower(vc: Any, tp: int, text_max_positions: int) -> list[WeightTensor]:
    """GLM-OCR's tower shapes with the merger MLP ``projection_intermediate_size`` wide and a rotary
    cache of the text model's ``max_position_embeddings`` rows."""
    tower = glm_ocr_tower(vc, int(vc.get("projection_intermediate_size") or _PROJECTION_DEFAULT), tp)
    return [WeightTensor(t.name, t.kind, text_max_positions, t.cols, t.count, t.quantizable, t.dtype)
            if t.name == "visual.rotary_pos_emb.cos_sin_cache" else t for t in tower]


@register
class Glm5NextVL(_Glm4VBase, Glm5Next):
    """GLM-5.3-Flash (KDA + sparse MLA + MoE decoder) plus its vision transformer."""

    architectures = ("Glm5NextForConditionalGeneration",)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return glm5next_tower(_vision(config), _tower_tp(ctx), config.max_position_embeddings)

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        return _need(vc, "hidden_size"), _need(vc, "intermediate_size")

    def notes(self) -> tuple[str, ...]:
        return Glm5Next.notes(self) + _Glm4VBase.notes(self)
