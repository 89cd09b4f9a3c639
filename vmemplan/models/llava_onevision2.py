"""LLaVA-OneVision-2 (``LlavaOnevision2ForConditionalGeneration``, lmms-lab/LLaVA-OneVision-2): the
OneVision encoder (a ViT with 3-D rotary positions and a Qwen-style patch merger) in front of a
Qwen3 decoder.

vllm/model_executor/models/llava_onevision2.py (0.33.0), ``LlavaOnevision2ForConditionalGeneration.__init__``:

* under ``_mark_tower_model(vllm_config, {"image", "video"})``: ``visual`` =
  ``LlavaOnevision2VisionTower`` on ``vision_config`` (width ``hidden_size``, ``num_hidden_layers``
  blocks, ``num_attention_heads`` heads, MLP ``intermediate_size``), always split over TP (its
  ``use_data_parallel`` is never set, and the model does not declare ``supports_encoder_tp_data``):

  - ``embeddings.patch_embedding``: bias-free Conv2d(``num_channels`` → width, ``patch_size``);
  - ``layernorm_pre``: LayerNorm(width);
  - ``rotary_pos_emb``: three fp32 ``inv_freq`` buffers of ``head_dim / 2`` frequencies in all
    (4:6:6 over t, h, w), non-persistent but on the device;
  - each block: LayerNorm ×2, QKVParallelLinear with bias, RowParallelLinear ``proj`` with bias, and
    ``fc1`` / ``fc2`` with biases;
  - ``merger``: LayerNorm(width) ``ln_q``, ColumnParallelLinear(width·m² → width·m²) and
    RowParallelLinear(width·m² → text hidden), both biased (m = ``spatial_merge_size``);

  the same shapes as the Qwen2-VL ViT (:func:`vmemplan.models.vision_towers._qwen_vit`, with a
  one-frame ``temporal_patch_size``) plus ``layernorm_pre``, with the inv_freq buffers in place of
  a rotary cos/sin cache;
* ``language_model``: ``init_vllm_registered_model(hf_config=config.text_config,
  architectures=["Qwen3ForCausalLM"])`` — plain Qwen3, 1-D RoPE.

Encoder profile (``LlavaOnevision2ProcessingInfo``): the largest image is a 1800 × 1800 image put
through Qwen2-VL's ``smart_resize`` (factor ``patch × m``) between the image processor's
``min_pixels`` / ``max_pixels`` (preprocessor_config.json; transformers' Qwen2-VL defaults stand
in), ``patches / m²`` tokens; the largest video repeats that frame as many times as fit
``max_model_len`` tokens, at most 14.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen3
from vmemplan.models.multimodal import QWEN2_VL_MAX_PIXELS, QWEN2_VL_MIN_PIXELS, VisionEncoderMixin
from vmemplan.models.vision_towers import _MergerViT, _need, _qwen_vit, _vision

__all__ = ["LlavaOnevision2", "onevision2_tower"]

#: LlavaOnevision2ProcessingInfo.get_image_size_with_most_features: the side resized for the largest image
LARGEST_SIDE = 1800
#: llava_onevision2.py::_MAX_FRAMES_PER_VIDEO
MAX_FRAMES_PER_VIDEO = 14


def onevision2_tower(vc: Any, tp: int, text_hidden: int) -> list[WeightTensor]:
    """``LlavaOnevision2VisionTower``'s tensors on one rank (see the module docstring)."""
    c, heads = _need(vc, "hidden_size"), _need(vc, "num_attention_heads")
    g = _MergerViT(c, _need(vc, "num_hidden_layers"), heads, _need(vc, "intermediate_size"), text_hidden,
                   _need(vc, "patch_size"), 1, int(vc.get("spatial_merge_size", 2)))
    vit = _qwen_vit(g, {"in_chans": int(vc.get("num_channels", 3))}, tp, gated=False, norm_biases=True)
    return [t for t in vit if t.kind != "buffer"] + [
        WeightTensor("visual.layernorm_pre (weight, bias)", "encoder", c, 1, 2),
        WeightTensor("visual.rotary_pos_emb.inv_freq_t+h+w", "buffer", (c // heads) // 2, 1, dtype="float32"),
    ]


@register
class LlavaOnevision2(VisionEncoderMixin, Qwen3):
    """LLaVA-OneVision-2: the Qwen3 decoder of ``text_config`` plus the OneVision encoder."""

    architectures = ("LlavaOnevision2ForConditionalGeneration",)
    modalities = ("image", "video")

    def _merge(self, config: Any) -> int:
        return int(_vision(config).get("spatial_merge_size", 2))

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        return self._merge(self.config) ** 2  # type: ignore[attr-defined]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return onevision2_tower(_vision(config), ctx.tensor_parallel_size, config.hidden_size)

    def frame_tokens(self, config: Any) -> int:
        """Tokens of the largest image (one frame)."""
        vc = _vision(config)
        lo = int(vc.get("min_pixels", config.raw.get("min_pixels", QWEN2_VL_MIN_PIXELS)))
        hi = int(vc.get("max_pixels", config.raw.get("max_pixels", QWEN2_VL_MAX_PIXELS)))
        return mm_law.qwen_vl_image_tokens(LARGEST_SIDE, LARGEST_SIDE, patch_size=_need(vc, "patch_size"),
                                           merge_size=self._merge(config), min_pixels=lo, max_pixels=hi,
                                           temporal_patch_size=1)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        per_frame = self.frame_tokens(config)
        out: dict[str, int] = {}
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0:
            out["image"] = per_frame
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "video") > 0:
            frames = max(1, ctx.max_model_len // max(per_frame, 1))
            out["video"] = per_frame * min(frames, MAX_FRAMES_PER_VIDEO)
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)

    def notes(self) -> tuple[str, ...]:
        return ("image pixel limits from transformers' Qwen2-VL image processor defaults unless the config "
                "carries min_pixels / max_pixels; a checkpoint's preprocessor_config.json may differ",)
