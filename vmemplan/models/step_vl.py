"""The Step VLMs on the PerceptionEncoder tower: Step3-VL-10B (``StepVLForConditionalGeneration``),
Step-3.7 (``Step3p7ForConditionalGeneration``) and Step5-VL (``Step5ForConditionalGeneration``).

vllm/model_executor/models/step_vl.py::StepVLForConditionalGeneration, step3p7.py::
Step3p7ForConditionalGeneration and vllm/models/step5/nvidia/vl.py::Step5ForConditionalGeneration
(0.33.0; the last subclasses the second, which repeats the first's ``__init__``) build, under
``_mark_tower_model(vllm_config, "image")``:

* ``vision_model`` = step_vl.py::PerceptionEncoder (:func:`perception_encoder_tower`): ``conv1`` a
  Conv2dLayer patch embed without bias, ``ln_pre`` / ``ln_post`` LayerNorms when ``use_ln_pre`` /
  ``use_ln_post``, ``class_embedding`` (``use_cls_token``) and ``positional_embedding`` of
  ``cls + (image / patch)²`` rows (``use_abs_posemb``), then ``transformer.resblocks`` of
  PerceptionEncoderVisionBlock: QKVParallelLinear ``qkv_proj`` / RowParallelLinear ``out_proj``
  (biased), each attention's own PerceptionEncoderRope2D ``freqs_cache`` buffer (fp32, ``cls +
  grid²`` rows of ``head_dim``: ``arange`` and ``float()`` fix the dtype), ``ls_1`` / ``ls_2``
  layer scales (``gamma``) when ``ls_init_value`` is set, ``ln_1`` / ``ln_2``, and
  PerceptionEncoderMLP ``fc1`` / ``fc2`` of ``int(width · mlp_ratio)`` (Column / Row parallel,
  biased); the linears carry ``disable_tp`` under ``--mm-encoder-tp-mode data``
  (``supports_encoder_tp_data`` inherited from step3_vl.py); after them ``vit_downsampler1``
  Conv2dLayer(w -> 2w, kernel 3) and ``vit_downsampler2`` (2w -> 4w), biased, whole on every rank;
* ``vit_large_projector`` a ColumnParallelLinear(4w -> text hidden, ``bias=projector_bias``,
  ``gather_output``), split over TP unless the encoder runs data-parallel;

and under ``_mark_language_model`` the ``text_config`` model: Qwen3ForCausalLM for Step3-VL-10B
(its remote StepRoboticsConfig holds a Qwen3Config), Step3p5ForCausalLM for Step-3.7,
Step5ForCausalLM for Step5.  Vision defaults: vllm/transformers_utils/configs/step5.py::
PerceptionEncoderConfig.  The image profile is Step3-VL's (the subclasses keep its processor):
:class:`vmemplan.models.step3_vl.StepImageTokensMixin`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import language_model_new
from vmemplan.models.step3_vl import StepImageTokensMixin
from vmemplan.models.vision_towers import _need, _split, _tower_tp, _vision

__all__ = ["PERCEPTION_ENCODER_DEFAULTS", "perception_encoder_tower", "StepVL", "Step3p7VL", "Step5VL"]

#: vllm/transformers_utils/configs/step5.py::PerceptionEncoderConfig defaults (0.33.0)
PERCEPTION_ENCODER_DEFAULTS: dict[str, Any] = {
    "patch_size": 14, "width": 1536, "layers": 47, "heads": 16, "mlp_ratio": 8960 / 1536, "ls_init_value": 0.1,
    "image_size": 728, "use_abs_posemb": True, "use_cls_token": False, "use_ln_pre": True, "use_ln_post": False,
}


def perception_encoder_tower(vc: Mapping[str, Any], tp: int, *, prefix: str = "vision_model") -> list[WeightTensor]:
    """step_vl.py::PerceptionEncoder on one rank (see the module); ``tp`` 1 keeps it whole."""
    w, layers, heads = _need(vc, "width"), _need(vc, "layers"), _need(vc, "heads")
    patch, grid = _need(vc, "patch_size"), _need(vc, "image_size") // _need(vc, "patch_size")
    hidden = int(w * float(vc["mlp_ratio"]))
    _split(heads, tp, "attention heads")
    q, h = _split(w, tp, "width"), _split(hidden, tp, "MLP width")
    cls = 1 if vc.get("use_cls_token") else 0
    positions = cls + grid * grid

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    out = [t("conv1", w, int(vc.get("num_channels", 3)) * patch * patch)]
    out += [t(norm, w, 1, 2) for norm, on in (("ln_pre", vc.get("use_ln_pre")), ("ln_post", vc.get("use_ln_post"))) if on]
    if cls:
        out.append(t("class_embedding", w))
    if vc.get("use_abs_posemb"):
        out.append(t("positional_embedding", positions, w))
    blocks = "transformer.resblocks"
    out += [
        t(f"{blocks}.attn.qkv_proj", 3 * q, w, layers), t(f"{blocks}.attn.qkv_proj.bias", 3 * q, 1, layers),
        t(f"{blocks}.attn.out_proj", w, q, layers), t(f"{blocks}.attn.out_proj.bias", w, 1, layers),
        WeightTensor(f"{prefix}.{blocks}.attn.rope.freqs_cache", "buffer", positions, w // heads, layers,
                     dtype="float32"),
        t(f"{blocks}.ln_1+ln_2", w, 1, 4 * layers),
        t(f"{blocks}.mlp.fc1", h, w, layers), t(f"{blocks}.mlp.fc1.bias", h, 1, layers),
        t(f"{blocks}.mlp.fc2", w, h, layers), t(f"{blocks}.mlp.fc2.bias", w, 1, layers),
    ]
    if vc.get("ls_init_value") is not None:
        out.append(t(f"{blocks}.ls_1+ls_2.gamma", w, 1, 2 * layers))
    return out + [
        t("vit_downsampler1", 2 * w, w * 9), t("vit_downsampler1.bias", 2 * w),
        t("vit_downsampler2", 4 * w, 2 * w * 9), t("vit_downsampler2.bias", 4 * w),
    ]


class _PerceptionTower(StepImageTokensMixin):
    """The tower half; combined with the ``text_config`` model's adapter."""

    def step_vision(self, config: Any) -> Mapping[str, Any]:
        return {**PERCEPTION_ENCODER_DEFAULTS, **_vision(config)}

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = self.step_vision(config)
        return _need(vc, "width"), int(_need(vc, "width") * float(vc["mlp_ratio"]))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = self.step_vision(config)
        tp = _tower_tp(ctx)
        out = _split(config.hidden_size, tp, "projector output")
        proj = [WeightTensor("vit_large_projector", "encoder", out, 4 * _need(vc, "width"))]
        if config.raw.get("projector_bias", False):
            proj.append(WeightTensor("vit_large_projector.bias", "encoder", out, 1))
        return perception_encoder_tower(vc, tp) + proj


@register
class StepVL(_PerceptionTower, Adapter):
    """``StepVLForConditionalGeneration`` (Step3-VL-10B): PerceptionEncoder + projector + Qwen3."""

    architectures = ("StepVLForConditionalGeneration",)

    __new__ = language_model_new(_PerceptionTower)


@register
class Step3p7VL(_PerceptionTower, Adapter):
    """``Step3p7ForConditionalGeneration`` (Step-3.7): PerceptionEncoder + projector + Step-3.5 text."""

    architectures = ("Step3p7ForConditionalGeneration",)

    __new__ = language_model_new(_PerceptionTower)


@register
class Step5VL(_PerceptionTower, Adapter):
    """``Step5ForConditionalGeneration``: Step-3.7's PerceptionEncoder frontend over the Step5 text model."""

    architectures = ("Step5ForConditionalGeneration",)

    __new__ = language_model_new(_PerceptionTower)
