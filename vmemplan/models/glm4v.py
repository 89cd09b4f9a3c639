"""GLM-4.1V / GLM-4.6V-Flash (``Glm4vForConditionalGeneration``) and GLM-4.5V / GLM-4.6V
(``Glm4vMoeForConditionalGeneration``): the GLM-4 (dense) or GLM-4.5 (MoE) decoder with M-RoPE
plus GLM's vision transformer.

vllm/model_executor/models/glm4_1v.py (0.33.0):

* ``Glm4vForConditionalGeneration.__init__`` builds ``self.visual = Glm4vVisionTransformer`` unless
  image and video are both limited to 0 per prompt (``_mark_tower_model``), and the language model
  from ``text_config`` as ``Glm4ForCausalLM`` (model_type glm4v) or ``Glm4MoeForCausalLM``
  (glm4v_moe); both build their rotary embedding through ``get_rope`` with the text config's
  ``mrope_section``, i.e. an ``MRotaryEmbedding`` of ``max_position × 4`` rows;
* ``Glm4vVisionTransformer``: Conv3d patch embed (bias), a learned position table
  (``(image_size / patch)²`` × c) with its int64 ``position_ids`` buffer, a rotary cache of
  8192 × head_dim/2 (``partial_rotary_factor`` 0.5), ``depth`` blocks of [RMSNorm ×2, qkv and proj
  without bias, a gated MLP of width **out_hidden_size** without bias], RMSNorms
  ``post_conv_layernorm`` / ``post_layernorm``, a Conv2d ``downsample`` (c → out_hidden, kernel
  merge, bias) and the ``Glm4vPatchMerger`` [ColumnParallel proj out→out, LayerNorm, gated MLP of
  ``intermediate_size``, all without bias];
* ``--mm-encoder-tp-mode data`` keeps the tower whole (``is_vit_use_data_parallel`` → ``disable_tp``).

Encoder profile terms: ``Glm4vProcessingInfo`` sizes the largest image through GLM's own
``smart_resize`` (transformers glm4v/image_processing_glm4v.py, a temporal factor of 2, so one
image counts as two frames against ``max_pixels``); the image processor's ``longest_edge``
(``max_pixels``) comes from preprocessor_config.json, which config.json does not carry: the
transformers ``Glm4vImageProcessor`` default 28²·15000 is used unless the config names
``max_pixels``.
"""

from __future__ import annotations

import math
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.dense_a_variants import Glm4
from vmemplan.models.moe import Glm4Moe
from vmemplan.models.multimodal import _QwenVLBase
from vmemplan.models.vision_towers import _enc, _need, _split, _tower_tp, _vision

__all__ = ["Glm4V", "Glm4VMoe", "glm4v_tower", "glm4v_image_tokens"]

#: transformers glm4v/image_processing_glm4v.py::Glm4vImageProcessor.size["longest_edge"]
GLM4V_IMAGE_MAX_PIXELS = 28 * 28 * 15000
#: transformers glm4v/video_processing_glm4v.py::Glm4vVideoProcessor.size["longest_edge"]
GLM4V_VIDEO_MAX_PIXELS = 28 * 28 * 2 * 30000
#: glm4_1v.py::_get_vision_info's min_pixels (smart_resize's default, 112²)
GLM4V_MIN_PIXELS = 112 * 112


def glm4v_smart_resize(num_frames: int, height: int, width: int, *, temporal_factor: int, factor: int,
                       min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """GLM-4V's resize: sides rounded to ``factor``, scaled so ``t × h × w`` stays within the
    pixel limits (transformers glm4v/image_processing_glm4v.py::smart_resize, imported by
    vllm/model_executor/models/glm4_1v.py, 0.33.0)."""
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    t_bar = round(num_frames / temporal_factor) * temporal_factor
    if t_bar * h_bar * w_bar > max_pixels:
        beta = math.sqrt(num_frames * height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (num_frames * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def glm4v_image_tokens(*, patch_size: int, merge_size: int, temporal_patch_size: int, max_pixels: int,
                       min_pixels: int = GLM4V_MIN_PIXELS) -> int:
    """Tokens of the largest image: the 9999999² dummy resized as ``num_frames = temporal_patch``
    (one image is padded to a temporal patch), then counted as one grid step of
    ``(h/patch)·(w/patch) / merge²`` (glm4_1v.py::Glm4vProcessingInfo.get_max_image_tokens)."""
    factor = patch_size * merge_size
    frames = max(1, temporal_patch_size)
    h, w = glm4v_smart_resize(frames, 9999999, 9999999, temporal_factor=temporal_patch_size, factor=factor,
                              min_pixels=min_pixels, max_pixels=max_pixels)
    h, w = glm4v_smart_resize(frames, h, w, temporal_factor=temporal_patch_size, factor=factor,
                              min_pixels=min_pixels, max_pixels=max_pixels)
    return (h // patch_size) * (w // patch_size) // (merge_size * merge_size)


def glm4v_tower(vc: Any, tp: int) -> list[WeightTensor]:
    """Glm4vVisionTransformer's tensors on one rank (glm4_1v.py, 0.33.0)."""
    c = _need(vc, "hidden_size")
    depth = _need(vc, "depth", "num_hidden_layers")
    heads = _need(vc, "num_heads", "num_attention_heads")
    out = _need(vc, "out_hidden_size")
    inter = _need(vc, "intermediate_size")
    patch = _need(vc, "patch_size")
    size = _need(vc, "image_size")
    tpatch = int(vc.get("temporal_patch_size", 2))
    merge = int(vc.get("spatial_merge_size", 2))
    chans = int(vc.get("in_channels", 3))
    _split(heads, tp, "attention heads")
    q = _split(c, tp, "width")
    mlp = _split(out, tp, "MLP width (out_hidden_size)")
    m_out = _split(out, tp, "merger width")
    m_inter = _split(inter, tp, "merger MLP width")
    npos = (size // patch) ** 2
    return [
        _enc("patch_embed.proj", c, chans * tpatch * patch * patch), _enc("patch_embed.proj.bias", c),
        _enc("embeddings.position_embedding", npos, c),
        WeightTensor("visual.embeddings.position_ids", "buffer", 1, npos, dtype="int64"),
        WeightTensor("visual.rotary_pos_emb.cos_sin_cache", "buffer", 8192, (c // heads) // 2),
        _enc("blocks.norm1+norm2", c, 1, 2 * depth),
        _enc("blocks.attn.qkv", 3 * q, c, depth),
        _enc("blocks.attn.proj", c, q, depth),
        _enc("blocks.mlp.gate_up_proj", 2 * mlp, c, depth),
        _enc("blocks.mlp.down_proj", c, mlp, depth),
        _enc("post_conv_layernorm+post_layernorm", c, 1, 2),
        _enc("downsample", out, c * merge * merge), _enc("downsample.bias", out),
        _enc("merger.proj", m_out, out),
        _enc("merger.post_projection_norm", out, 1, 2),  # LayerNorm weight + bias
        _enc("merger.gate_up_proj", 2 * m_inter, out),
        _enc("merger.down_proj", out, m_inter),
    ]


class _Glm4VBase(_QwenVLBase):
    """What GLM-4.1V and GLM-4.5V share: the tower, M-RoPE (factor 4) and the image budget."""

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return glm4v_tower(_vision(config), _tower_tp(ctx))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        return _need(vc, "hidden_size"), _need(vc, "out_hidden_size")  # the blocks' MLP is out_hidden wide

    def pixel_limits(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        lo = vc.get("min_pixels", config.raw.get("min_pixels", GLM4V_MIN_PIXELS))
        hi = vc.get("max_pixels", config.raw.get("max_pixels", GLM4V_IMAGE_MAX_PIXELS))
        return int(lo), int(hi)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """Largest image (:func:`glm4v_image_tokens`); the video as the same frame at the video
        processor's pixel limit, grid-t frames as Qwen-VL's dummy video (an estimate: vLLM's GLM
        video count also adds timestamp text tokens to the prompt, not to the encoder output)."""
        vc = _vision(config)
        patch = _need(vc, "patch_size")
        merge = int(vc.get("spatial_merge_size", 2))
        tpatch = int(vc.get("temporal_patch_size", 2))
        lo, hi = self.pixel_limits(config)
        out: dict[str, int] = {}
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0:
            out["image"] = glm4v_image_tokens(patch_size=patch, merge_size=merge, temporal_patch_size=tpatch,
                                              max_pixels=hi, min_pixels=lo)
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "video") > 0:
            out["video"] = GLM4V_VIDEO_MAX_PIXELS // (tpatch * patch * patch * merge * merge)
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return self._with_mrope(super().weight_tensors(ctx), ctx) + self.tower_tensors(self.config, ctx)

    def notes(self) -> tuple[str, ...]:
        lo, hi = self.pixel_limits(self.config)  # type: ignore[attr-defined]
        return (f"image pixel limits {lo}..{hi} (transformers Glm4vImageProcessor defaults unless the config "
                "names min_pixels/max_pixels); the checkpoint's preprocessor_config.json may differ",
                "video tokens per item are an estimate (the video processor's longest_edge over one "
                "temporal patch); vLLM counts them from the processed dummy video")


@register
class Glm4V(_Glm4VBase, Glm4):
    """GLM-4.1V-9B / GLM-4.6V-Flash: the GLM-4-0414 decoder plus the GLM-4V tower."""

    architectures = ("Glm4vForConditionalGeneration",)


@register
class Glm4VMoe(_Glm4VBase, Glm4Moe):
    """GLM-4.5V / GLM-4.6V: the GLM-4.5 MoE decoder plus the GLM-4V tower."""

    architectures = ("Glm4vMoeForConditionalGeneration",)
