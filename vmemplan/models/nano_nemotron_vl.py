"""Nemotron Nano VL v2 (``NemotronH_Nano_VL_V2``: nvidia/NVIDIA-Nemotron-Nano-12B-v2-VL): a RADIO
vision tower and a relu² MLP projector in front of a Nemotron-H hybrid language model.

vllm/model_executor/models/nano_nemotron_vl.py::NemotronH_Nano_VL_V2 (0.33.0) builds

* under ``_mark_language_model``: ``init_vllm_registered_model(hf_config=config.text_config)``
  (the checkpoint's ``llm_config``, NemotronHForCausalLM: vmemplan's hybrid_mamba.py::NemotronH);
* under ``_mark_tower_model(vllm_config, {"image", "video", "audio"})`` (built unless every one of
  them is limited to 0):
  ``vision_model`` = radio.py::RadioModel from ``get_vit_model_from_radio_config`` (vmemplan's
  :func:`vmemplan.models.radio.radio_tower`), cast to the LM dtype, its linears split over TP
  (the class lacks ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` becomes ``weights``);
  ``vision_final_layernorm`` = LayerNorm(vit_hidden_size) only when the text config has
  ``num_nextn_predict_layers`` > 0;
  ``mlp1`` = RMSNorm(c·r) -> nn.Linear(c·r -> projector_hidden_size) -> relu² -> nn.Linear(-> text
  hidden), bias-free and replicated, ``c = vit_hidden_size``, ``r = round(1 / downsample_ratio)²``.

Tokens per item (NanoNemotronVLProcessingInfo.get_mm_max_tokens_per_item): an image is the
InternVL tiling of ``max_num_tiles`` (the processor's DEFAULT_NUM_TILES, 12) ``force_image_size``
tiles plus the thumbnail, ``(force_image_size / patch)² · downsample_ratio²`` tokens each, or, with
dynamic resolution (``vision_config.args.min_num_patches``), ``isqrt(max_model_len - 5)²``
(DynamicResolutionImageTiler for one image); a video and an audio clip are ``max_model_len``.
With a ``sound_config`` the tower also holds ``sound_encoder`` = parakeet.py::ProjectedParakeet
(:func:`vmemplan.models.parakeet.projected_parakeet`).

The registry maps the three ``NemotronH_*Omni_Reasoning_V3`` architectures to the same class, but
vllm/model_executor/models/config.py's ``MODELS_CONFIG_MAP`` lists only ``NemotronH_Nano_VL_V2``
(NemotronHNanoVLV2Config: the SSM state in the text config's ``mamba_ssm_cache_dtype``, else
float32); for the Omni names ``--mamba-ssm-cache-dtype auto`` stays the model dtype.
"""

from __future__ import annotations

import math
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import language_model_new
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.parakeet import projected_parakeet
from vmemplan.models.radio import radio_dims, radio_tower

__all__ = ["NemotronNanoVLV2", "NemotronOmniV3"]

DEFAULT_NUM_TILES = 12  # vllm/transformers_utils/processors/nano_nemotron_vl.py (0.33.0)


def _vision_config(config: Any) -> dict[str, Any]:
    vc = config.raw.get("vision_config")
    if not isinstance(vc, dict):
        raise ModelConfigError("config.json lacks the RADIO 'vision_config'")
    return vc


class _NanoNemotronVLTower(VisionEncoderMixin):
    """The tower half; combined with the ``llm_config`` adapter by ``internvl._with_language_model``."""

    supports_encoder_tp_data = False  # nano_nemotron_vl.py's class does not declare it

    modalities = ("image", "video", "audio")  # the tower is marked for all three, sound_config or not

    def _shuffle_root(self, config: Any) -> int:
        return int(round(1 / float(config.raw.get("downsample_ratio", 0.5))))

    @property
    def patches_per_token(self) -> int:
        return self._shuffle_root(self.config) ** 2  # type: ignore[attr-defined]

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        d = radio_dims(_vision_config(config))
        return d["hidden_size"], d["intermediate_size"]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        raw = config.raw
        out: dict[str, int] = {}
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0:
            if "min_num_patches" in (_vision_config(config).get("args") or {}):
                out["image"] = math.isqrt(ctx.max_model_len - 1 - 4) ** 2
            else:
                size, patch = int(raw.get("force_image_size", 512)), int(raw.get("patch_size", 16))
                per_tile = int((size // patch) ** 2 * float(raw.get("downsample_ratio", 0.5)) ** 2)
                thumb = 1 if bool(raw.get("use_thumbnail", True)) and DEFAULT_NUM_TILES != 1 else 0
                out["image"] = (DEFAULT_NUM_TILES + thumb) * per_tile
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "video") > 0:
            out["video"] = ctx.max_model_len
        if raw.get("sound_config") and mm_law.limit_for(ctx.limit_mm_per_prompt, "audio") > 0:
            out["audio"] = ctx.max_model_len
        return out

    def encoder_output_width(self, config: Any) -> int:
        return int(config.hidden_size)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        raw = config.raw
        vit = int(raw.get("vit_hidden_size", 1280))
        proj = int(raw.get("projector_hidden_size", 4096))
        w = vit * self._shuffle_root(config) ** 2
        out = radio_tower(_vision_config(config), ctx.tensor_parallel_size)
        sound = raw.get("sound_config")
        if isinstance(sound, dict):
            out += projected_parakeet(sound, config.hidden_size)
        if int(config.text.get("num_nextn_predict_layers") or 0) > 0:
            out.append(WeightTensor("vision_final_layernorm", "encoder", vit, 1, 2))
        return out + [
            WeightTensor("mlp1.0", "encoder", w, 1),
            WeightTensor("mlp1.1", "encoder", proj, w),
            WeightTensor("mlp1.3", "encoder", config.hidden_size, proj),
        ]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        base: list[WeightTensor] = super().weight_tensors(ctx)  # type: ignore[misc]
        return base + self.tower_tensors(self.config, ctx)  # type: ignore[attr-defined]


@register
class NemotronNanoVLV2(_NanoNemotronVLTower, Adapter):
    """``NemotronH_Nano_VL_V2``: RADIO + ``mlp1`` + the Nemotron-H ``llm_config`` model."""

    architectures = ("NemotronH_Nano_VL_V2",)

    __new__ = language_model_new(_NanoNemotronVLTower)


class _OmniTower(_NanoNemotronVLTower):
    def ssm_dtype(self, ctx: GraphContext) -> str:
        """No NemotronHNanoVLV2Config for these names: ``auto`` follows the model dtype."""
        return ctx.mamba_ssm_cache_dtype


@register
class NemotronOmniV3(_OmniTower, Adapter):
    """The Nemotron Omni names of nano_nemotron_vl.py's class (RADIO, Parakeet, Nemotron-H)."""

    architectures = ("NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Omni_Reasoning_V3",
                     "NemotronH_Super_Omni_Reasoning_V3")

    __new__ = language_model_new(_OmniTower)
