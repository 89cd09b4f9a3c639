"""LLaVA-NeXT-Video, LLaVA-OneVision and H2OVL: towers vmemplan already models in front of a
registered language model.

* ``LlavaNextVideoForConditionalGeneration`` (vllm/model_executor/models/llava_next_video.py,
  0.33.0): ``init_vision_tower_for_llava(require_post_norm=False)`` — the CLIP (or SigLIP) tower
  up to ``vision_feature_layer``, never its post-LayerNorm; the ``LlavaNextVideoPooler``
  (an ``nn.AvgPool2d`` / ``nn.MaxPool2d``, no parameters); ``LlavaNextMultiModalProjector`` of
  two plain ``nn.Linear`` (replicated on every rank, biased under ``multimodal_projector_bias``).
  No ``image_newline`` parameter (its checkpoint tensor is ignored), video only:
  ``_mark_tower_model(vllm_config, "video")``.
* ``LlavaOnevisionForConditionalGeneration`` (llava_onevision.py, 0.33.0): the same tower
  (SigLIP in the released checkpoints), an ``image_newline`` ``nn.Parameter`` of the text
  hidden size, ``LlavaOnevisionMultiModalProjector`` (two replicated ``nn.Linear``); images and
  video: ``_mark_tower_model(vllm_config, {"image", "video"})``.
* ``H2OVLChatModel`` (h2ovl.py, 0.33.0): ``InternVLChatModel`` with its own image processor
  (multi-scale tiles, MSAC; images only); the tower (``InternVisionModel`` up to
  ``select_layer``) and ``mlp1`` are InternVL's (:mod:`vmemplan.models.internvl`), and
  ``supports_encoder_tp_data`` comes with them.  The two LLaVA models do not declare it: vLLM
  falls back from ``--mm-encoder-tp-mode data`` to ``weights`` for them.

Each language model is ``init_vllm_registered_model(hf_config=config.text_config)``: planned by
that architecture's own adapter, combined with the tower (``internvl._with_language_model``).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import _ChatTower, language_model_new
from vmemplan.models.llava_next import anyres_image_tokens
from vmemplan.models.multimodal import VisionEncoderMixin, _feature_layers
from vmemplan.models.vision_towers import _need, _vision, clip_tower, siglip_tower

__all__ = ["LlavaNextVideo", "LlavaOnevision", "H2OVLChat", "llava_tower_no_post_norm", "replicated_projector"]


def llava_tower_no_post_norm(config: Any, ctx: GraphContext) -> list[WeightTensor]:
    """llava.py::init_vision_tower_for_llava with ``require_post_norm=False`` (0.33.0): the CLIP or
    SigLIP tower up to ``vision_feature_layer`` (vision.py::get_layer_index), no post-LayerNorm
    (clip.py::CLIPVisionTransformer / siglip.py::SiglipVisionTransformer), no SigLIP head
    (``use_head=False``); SigLIP's int64 ``position_ids`` buffer (CLIP's is in :func:`clip_tower`).
    Split over the TP world size: these models do not declare ``supports_encoder_tp_data``, so
    vLLM falls back from ``--mm-encoder-tp-mode data`` to ``weights``
    (vllm/config/model.py::ModelConfig.__post_init__, 0.33.0)."""
    vc = _vision(config)
    tp = ctx.tensor_parallel_size
    layers = _feature_layers(config.raw, _need(vc, "num_hidden_layers"))
    if str(vc.get("model_type", "clip_vision_model")).startswith("siglip"):
        # SiglipVisionEmbeddings' position_ids buffer: arange(patches), int64 (siglip.py, 0.33.0)
        return siglip_tower(vc, tp, layers, post_norm=False) + [WeightTensor(
            "vision_tower.vision_model.embeddings.position_ids", "buffer", 1, _grid(config) ** 2, dtype="int64")]
    return [t for t in clip_tower(vc, tp, layers) if not t.name.endswith("post_layernorm")]


def replicated_projector(config: Any) -> list[WeightTensor]:
    """``linear_1`` (vision hidden -> text hidden) and ``linear_2`` (text hidden -> text hidden),
    plain ``nn.Linear`` on every rank, with biases under ``multimodal_projector_bias``
    (llava_next_video.py::LlavaNextMultiModalProjector,
    llava_onevision.py::LlavaOnevisionMultiModalProjector)."""
    c = _need(_vision(config), "hidden_size")
    h = config.hidden_size
    out = [WeightTensor("multi_modal_projector.linear_1", "encoder", h, c),
           WeightTensor("multi_modal_projector.linear_2", "encoder", h, h)]
    if bool(config.raw.get("multimodal_projector_bias", True)):
        out += [WeightTensor("multi_modal_projector.linear_1.bias", "encoder", h, 1),
                WeightTensor("multi_modal_projector.linear_2.bias", "encoder", h, 1)]
    return out


def _grid(config: Any) -> int:
    vc = _vision(config)
    return _need(vc, "image_size") // _need(vc, "patch_size")


def _video_tokens(per_frame: int, ctx: GraphContext) -> int:
    """Frames of the largest video: as many ``per_frame``-token frames as ``max_model_len`` holds
    (llava_next_video.py::LlavaNextVideoProcessingInfo.get_num_frames_with_most_features, one
    video), at least one."""
    return max(ctx.max_model_len // per_frame, 1) * per_frame


class _LlavaVideoTower(VisionEncoderMixin):
    """The tower half; combined with the language model's adapter by ``_with_language_model``."""

    def encoder_output_width(self, config: Any) -> int:
        return config.hidden_size


    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)  # type: ignore[misc]


class _NextVideoTower(_LlavaVideoTower):
    modalities = ("video",)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return llava_tower_no_post_norm(config, ctx) + replicated_projector(config)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """``ceil(grid / spatial_pool_stride)²`` tokens a frame
        (LlavaNextVideoProcessingInfo._get_num_frame_tokens)."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "video") <= 0:
            return {}
        stride = int(config.raw.get("spatial_pool_stride", 2))
        pooled = -(-_grid(config) // stride)
        return {"video": _video_tokens(pooled * pooled, ctx)}


class _OnevisionTower(_LlavaVideoTower):
    modalities = ("image", "video")
    bare_tower_parameters = ("image_newline",)  # llava_onevision.py assigns it inside _mark_tower_model

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return (llava_tower_no_post_norm(config, ctx) + replicated_projector(config)
                + [WeightTensor("image_newline", "encoder", config.hidden_size, 1)])

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """Images: LLaVA-NeXT's any-resolution count over ``image_grid_pinpoints`` (base tile +
        unpadded grid + a newline a row; llava_onevision.py::_get_num_unpadded_features also caps
        the grid under ``anyres_max_N``, which this upper bound ignores).  Video: frames pooled
        2× (``ceil(grid / 2)²`` tokens) plus one newline token per video, as many frames as
        ``max_model_len`` holds."""
        vc = _vision(config)
        tile, grid = _need(vc, "image_size"), _grid(config)
        out: dict[str, int] = {}
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0:
            cls_token = 0 if str(vc.get("model_type", "")).startswith("siglip") else 1
            full = config.raw.get("vision_feature_select_strategy", "full") == "full"
            base = grid * grid + cls_token - (0 if full else 1)
            pins = [(int(h), int(w)) for h, w in (config.raw.get("image_grid_pinpoints") or [[tile, tile]])]
            out["image"] = max(anyres_image_tokens(h, w, pinpoints=pins, tile=tile, grid=grid, base=base)
                               for h, w in pins)
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "video") > 0:
            pooled = -(-grid // 2)
            out["video"] = _video_tokens(pooled * pooled, ctx) + 1
        return out


@register
class LlavaNextVideo(_NextVideoTower, Adapter):
    """``LlavaNextVideoForConditionalGeneration``: CLIP tower + pooler + replicated projector + the
    ``text_config`` model (llava_next_video.py, 0.33.0)."""

    architectures = ("LlavaNextVideoForConditionalGeneration",)

    __new__ = language_model_new(_NextVideoTower)


@register
class LlavaOnevision(_OnevisionTower, Adapter):
    """``LlavaOnevisionForConditionalGeneration``: SigLIP tower + ``image_newline`` + replicated
    projector + the ``text_config`` model (llava_onevision.py, 0.33.0)."""

    architectures = ("LlavaOnevisionForConditionalGeneration",)

    __new__ = language_model_new(_OnevisionTower)


class _H2OVLTower(_ChatTower):
    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """Images only: H2OVLProcessingInfo keeps BaseInternVLProcessingInfo's
        ``get_supported_mm_limits`` ({"image": None}); the tower is still built under
        ``{"image", "video"}`` (InternVLChatModel.__init__), so a video limit above 0 keeps it."""
        return {k: v for k, v in super().max_tokens_per_item(config, ctx).items() if k == "image"}


@register
class H2OVLChat(_H2OVLTower, Adapter):
    """``H2OVLChatModel`` (h2ovl.py, 0.33.0): InternVLChatModel's tower, ``mlp1`` and language model;
    only the image processor (MSAC tiling) differs, which the weights and KV cache do not see."""

    architectures = ("H2OVLChatModel",)

    __new__ = language_model_new(_H2OVLTower)
