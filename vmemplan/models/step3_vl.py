"""Step3-VL (``Step3VLForConditionalGeneration``, stepfun-ai/step3): a CLIP-like ViT, two
convolutional downsamplers and a linear projector in front of the Step3 text MoE.

vllm/model_executor/models/step3_vl.py::Step3VLForConditionalGeneration (0.33.0) builds, under
``_mark_tower_model(vllm_config, "image")``:

* ``vision_model`` = Step3VisionTransformer: Step3VisionEmbeddings (``class_embedding`` of shape
  ``(1, c)``, a biased Conv2dLayer patch embed, ``position_embedding`` of ``(image / patch)² + 1``
  rows, the int64 ``position_ids`` buffer, ``persistent=False`` but on the device) and
  ``transformer.layers`` of Step3VisionEncoderLayer: QKVParallelLinear ``qkv_proj`` and
  RowParallelLinear ``out_proj`` (biased), ``layer_norm1`` / ``layer_norm2``, Step3VisionMLP
  ``fc1`` / ``fc2`` (Column / Row parallel, biased); no pre- or post-LayerNorm.  The linears carry
  ``disable_tp`` under ``--mm-encoder-tp-mode data`` (``supports_encoder_tp_data = True``);
* ``vit_downsampler`` Conv2dLayer(c -> ``output_hidden_size``, kernel 2, stride
  ``understand_projector_stride``) and ``vit_downsampler2`` Conv2dLayer(o -> 2o, kernel 3,
  stride 2), both biased and whole on every rank;
* ``vit_large_projector`` a plain ``nn.Linear(2o -> text hidden, bias=projector_bias)``;

and under ``_mark_language_model`` the ``text_config`` model (Step3TextForCausalLM:
:class:`vmemplan.models.step3_text.Step3Text`).  The vision defaults are
vllm/transformers_utils/configs/step3_vl.py::Step3VisionEncoderConfig's.

Tokens per image (Step3VLProcessingInfo.get_max_image_tokens): a 3024 x 3024 image
(``MAX_IMAGE_SIZE``) through vllm/transformers_utils/processors/step3_vl.py: the ImagePatcher cuts
it into 504-pixel windows (6 x 6), each worth ``81 + 2`` tokens, plus the 169 tokens of the
global view, 2 delimiters and one newline per full row but the last (:func:`step3_image_tokens`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import language_model_new
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _clip_like, _need, _tower_tp, _vision

__all__ = ["Step3VL", "STEP3_VISION_DEFAULTS", "step3_image_tokens", "StepImageTokensMixin"]

#: vllm/transformers_utils/configs/step3_vl.py::Step3VisionEncoderConfig defaults (0.33.0)
STEP3_VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 1792, "intermediate_size": 3072, "output_hidden_size": 4096, "num_hidden_layers": 63,
    "num_attention_heads": 16, "num_channels": 3, "image_size": 728, "patch_size": 14,
}
#: processors/step3_vl.py: MAX_IMAGE_SIZE, and Step3VLImageProcessor's defaults
STEP3_MAX_IMAGE = 3024
STEP3_WINDOW = 504
STEP3_IMAGE_FEATURES = 169
STEP3_PATCH_FEATURES = 81


def _windows(side: int, window: int) -> int:
    """Windows along one side after ImagePatcher.get_image_size_for_crop (a fraction above 0.2 of
    a window rounds up) and slide_window (steps of one window)."""
    ratio = side / window
    if ratio >= 1:
        whole = int(ratio) + 1 if ratio - side // window > 0.2 else int(ratio)
        side = window * whole
    return 1 if side <= window else math.ceil((side - window) / window + 1)


def step3_image_tokens(width: int, height: int, *, enable_patch: bool = True) -> int:
    """Step3VLImageProcessor.get_num_image_tokens for a ``width x height`` image (no padding case:
    both sides at least 32 pixels)."""
    if max(width, height) > STEP3_MAX_IMAGE:
        scale = STEP3_MAX_IMAGE / max(width, height)
        width, height = int(width * scale), int(height * scale)
    long, short = max(width, height), min(width, height)
    if long < 728:
        window = short if long / short > 1.5 else 0
    else:
        window = min(short, STEP3_WINDOW) if long / short > 4 else STEP3_WINDOW
    patches = rows = 0
    if window and enable_patch:
        x_num, y_num = _windows(width, window), _windows(height, window)
        patches = x_num * y_num
        rows = (patches - 1) // x_num + 1 - (1 if patches % x_num == 0 else 0)
    return patches * (STEP3_PATCH_FEATURES + 2) + STEP3_IMAGE_FEATURES + 2 + rows


class StepImageTokensMixin(VisionEncoderMixin):
    """The Step3-VL image profile every Step VLM inherits (step_vl.py / step3p7.py subclass
    Step3VLForConditionalGeneration and keep its processing info): images only, the 3024-pixel
    square's token count; the tower sees ``(image / patch)²`` positions per 169 output tokens."""

    modalities = ("image",)
    supports_encoder_tp_data = True

    def step_vision(self, config: Any) -> Mapping[str, Any]:  # pragma: no cover - per tower
        raise NotImplementedError

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)  # type: ignore[misc,attr-defined]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        patch = bool(_vision(config).get("enable_patch", True))
        return {"image": step3_image_tokens(STEP3_MAX_IMAGE, STEP3_MAX_IMAGE, enable_patch=patch)}

    @property
    def patches_per_token(self) -> int:
        vc = self.step_vision(self.config)  # type: ignore[attr-defined]
        grid = _need(vc, "image_size") // _need(vc, "patch_size")
        return max(1, round(grid * grid / STEP3_IMAGE_FEATURES))


class _Step3VLTower(StepImageTokensMixin):
    """The tower half; combined with the ``text_config`` model's adapter."""

    def step_vision(self, config: Any) -> Mapping[str, Any]:
        return {**STEP3_VISION_DEFAULTS, **_vision(config)}

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = self.step_vision(config)
        return _need(vc, "hidden_size"), _need(vc, "intermediate_size")

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = self.step_vision(config)
        c, o = _need(vc, "hidden_size"), _need(vc, "output_hidden_size")
        tower = _clip_like({**vc, "intermediate_size": _need(vc, "intermediate_size")}, _tower_tp(ctx),
                           _need(vc, "num_hidden_layers"), class_token=True, pre_norm=False, post_norm=False,
                           prefix="vision_model")
        tower.append(WeightTensor("vision_model.embeddings.patch_embedding.bias", "encoder", c, 1))
        bias = bool(config.raw.get("projector_bias", True))
        return tower + [
            WeightTensor("vit_downsampler", "encoder", o, c * 4), WeightTensor("vit_downsampler.bias", "encoder", o, 1),
            WeightTensor("vit_downsampler2", "encoder", 2 * o, o * 9),
            WeightTensor("vit_downsampler2.bias", "encoder", 2 * o, 1),
            WeightTensor("vit_large_projector", "encoder", config.hidden_size, 2 * o),
            *([WeightTensor("vit_large_projector.bias", "encoder", config.hidden_size, 1)] if bias else []),
        ]


@register
class Step3VL(_Step3VLTower, Adapter):
    """``Step3VLForConditionalGeneration``: Step3 ViT + conv downsamplers + projector + the
    ``text_config`` model (Step3 text MoE)."""

    architectures = ("Step3VLForConditionalGeneration",)

    __new__ = language_model_new(_Step3VLTower)
