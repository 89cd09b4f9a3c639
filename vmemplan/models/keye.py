"""Keye-VL (``KeyeForConditionalGeneration``, Kwai-Keye/Keye-VL-8B-Preview, and
``KeyeVL1_5ForConditionalGeneration``, Kwai-Keye/Keye-VL-1_5-8B): a NaViT SigLIP tower and a 2 × 2
patch-merging projector in front of a Qwen3 decoder.

vllm/model_executor/models/keye.py::BaseKeyeModule (0.33.0) builds, under
``_mark_tower_model(vllm_config, {"image", "video"})``,

* ``visual`` = KeyeSiglipVisionModel (siglip_navit.py::navit_siglip_tower, with the
  ``packing_position_embedding`` nn.Embedding(32768, c) of KeyeVisionEmbeddings), split over TP;
  the classes lack ``supports_encoder_tp_data``, so ``--mm-encoder-tp-mode data`` runs as ``weights``;
* ``mlp_AR``: keye.py::Projector (Keye) — LayerNorm(vision hidden) — or
  keye_vl1_5.py::KeyeVL1_5Projector — LayerNorm(4 · vision hidden) —, then ColumnParallelLinear
  linear_1 (4c → 4c) and RowParallelLinear linear_2 (4c → text hidden), biased, split over TP;

and under ``_mark_language_model`` ``init_vllm_registered_model(architectures=["Qwen3ForCausalLM"])``
on the top-level config (dense.py::Qwen3), with the M-RoPE cache of ``max_position × 4`` rows.

Tokens per item (KeyeProcessingInfo, 0.33.0): an image is the 9,999,999-pixel square resized by
``smart_resize`` (patch × merge, the processor's min/max pixels) — ``max_pixels // 28²`` tokens
at most; a video (temporal patch 1) is that frame repeated, as many frames as
``seq_len − image tokens × image limit`` holds, split over the video limit, at most 16 (Keye) or
2048 (Keye-VL-1.5) per video, at least one.  The pixel limits come from the config when it has them
(preprocessor_config.json keys), else the Qwen2-VL processor defaults (56², 28² · 1280): the
checkpoints' remote image processor may differ.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen3
from vmemplan.models.multimodal import QWEN2_VL_MAX_PIXELS, QWEN2_VL_MIN_PIXELS
from vmemplan.models.siglip_navit import (
    NaViTTowerMixin,
    config_pixel_limits,
    merge_projector,
    navit_siglip_tower,
    square_max_image_tokens,
)
from vmemplan.models.vision_towers import _need, _vision

__all__ = ["Keye", "KeyeVL1_5"]

#: KeyeVisionEmbeddings.packing_position_embedding rows
PACKING_POSITIONS = 32768


class _KeyeTower(NaViTTowerMixin):
    modalities = ("image", "video")
    norm_merged = False  # Keye-VL-1.5's projector normalises the merged 4c features
    max_frames_per_video = 16  # KeyeProcessingInfo.get_max_frame_per_video

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = {"num_channels": 3, **_vision(config)}
        tp = ctx.tensor_parallel_size
        return (navit_siglip_tower(vc, tp, packing_positions=PACKING_POSITIONS)
                + merge_projector("mlp_AR", _need(vc, "hidden_size"), config.hidden_size, tp=tp,
                                  norm_merged=self.norm_merged))

    def pixel_limits(self, config: Any) -> tuple[int, int]:
        return config_pixel_limits(config, QWEN2_VL_MIN_PIXELS, QWEN2_VL_MAX_PIXELS)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        vc = _vision(config)
        lo, hi = self.pixel_limits(config)
        per_image = square_max_image_tokens(patch=_need(vc, "patch_size"), merge=int(vc.get("spatial_merge_size", 2)),
                                            min_pixels=lo, max_pixels=hi)
        images = mm_law.limit_for(ctx.limit_mm_per_prompt, "image")
        videos = mm_law.limit_for(ctx.limit_mm_per_prompt, "video")
        out: dict[str, int] = {}
        if images > 0:
            out["image"] = per_image
        if videos > 0:
            frames = max((ctx.max_model_len - per_image * images) // per_image, 0)
            out["video"] = per_image * max(min(frames // videos, self.max_frames_per_video), 1)
        return out


@register
class Keye(_KeyeTower, Qwen3):
    """``KeyeForConditionalGeneration``: KeyeSiglipVisionModel + Projector + Qwen3 (M-RoPE)."""

    architectures = ("KeyeForConditionalGeneration",)


@register
class KeyeVL1_5(Keye):
    """``KeyeVL1_5ForConditionalGeneration``: as Keye, the projector's LayerNorm over the merged width."""

    architectures = ("KeyeVL1_5ForConditionalGeneration",)
    norm_merged = True
    max_frames_per_video = 2048  # KeyeVL1_5ProcessingInfo.get_max_frame_per_video
