"""MiniMax M3 VL (``MiniMaxM3SparseForConditionalGeneration``, MiniMaxAI/MiniMax-M3): a CLIP-style ViT with 3-D
RoPE, a per-patch projector and a 2×2 patch-merge MLP in front of the MiniMax M3 sparse decoder.

vllm/models/minimax_m3/nvidia/model.py::MiniMaxM3SparseForConditionalGeneration (0.33.0; the ROCm class in
amd/model.py builds the same modules) on vllm/transformers_utils/configs/minimax_m3.py::MiniMaxM3Config:

* under ``_mark_tower_model(vllm_config, {"image", "video"})``: ``vision_tower`` =
  vllm/models/minimax_m3/common/vision_tower.py::MiniMaxVLVisionModel on ``vision_config`` (read as a plain
  ``PreTrainedConfig``: no CLIP defaults are filled in, so ``num_channels`` must be in the file):

  - ``vision_model`` (MiniMaxVLVisionTransformer): ``embeddings.patch_embedding`` a Conv3d
    (``num_channels × temporal_patch_size × patch²`` → hidden, no bias; the temporal size from
    ``img_token_compression_config``), ``pre_layrnorm`` LayerNorm, ``num_hidden_layers`` CLIP blocks (two
    LayerNorms, biased QKVParallelLinear / RowParallelLinear attention, biased ColumnParallel ``fc1`` /
    RowParallel ``fc2``), no position table and no post-LayerNorm (``require_post_norm=False``), and three
    fp32 buffers ``inv_freq_t`` / ``_h`` / ``_w`` of ``len(range(0, a, 2))`` with
    ``a = 2·((2·⌊head_dim / 2⌋ // 3) // 2)`` — the block shapes of
    :func:`vmemplan.models.vision_towers._clip_like` without its embeddings;
  - ``multi_modal_projector``: ColumnParallel ``linear_1`` (vision hidden → ``projector_hidden_size`` or the
    text hidden) and RowParallel ``linear_2`` (→ text hidden), biased unless the *vision* config sets
    ``multimodal_projector_bias`` false;
  - ``patch_merge_mlp``: ColumnParallel ``linear_1`` (text hidden · merge² → the same middle width) and
    RowParallel ``linear_2`` (→ text hidden), biased unless the vision config sets ``patch_merge_bias`` false;

  every linear is split over TP unless ``--mm-encoder-tp-mode data`` (the class declares
  ``supports_encoder_tp_data``); the tower is built on every pipeline stage.  The checkpoint's quantization
  config is passed to the tower's linears; the released checkpoint is bf16 and the tower is planned at the
  model dtype;
* ``language_model`` = MiniMaxM3SparseForCausalLM on ``text_config``
  (:class:`vmemplan.models.minimax_m3.MiniMaxM3`).

Encoder budget (common/mm_preprocess.py::MiniMaxM3VLProcessingInfo): the largest image is the largest square
of ``(patch · merge)`` multiples within the image processor's ``max_pixels`` (451,584 = 672², 576 tokens);
video is priced with the Qwen2-VL law at the same bound (MiniMax's per-frame video bound, 602,112 pixels,
and its 500-frame cap are not modelled).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.minimax_m3 import MiniMaxM3
from vmemplan.models.multimodal import _QwenVLBase
from vmemplan.models.vision_towers import _clip_like, _need, _split, _tower_tp, _vision

__all__ = ["MiniMaxM3VL", "minimax_vl_vision_model"]

#: transformers_utils/processors/minimax_m3.py::MiniMaxM3VLImageProcessor bounds (672², 56²)
IMAGE_MAX_PIXELS = 451584
IMAGE_MIN_PIXELS = 3136


def _compression(vc: Mapping[str, Any]) -> tuple[int, int]:
    """(spatial merge, temporal patch) from ``img_token_compression_config`` (2 and 2 by default)."""
    comp = vc.get("img_token_compression_config")
    comp = comp if isinstance(comp, Mapping) else {}
    return int(comp.get("spatial_merge_size", 2)), int(comp.get("temporal_patch_size", 2))


def _mlp(prefix: str, mid: int, cols: int, out: int, bias: bool, tp: int) -> list[WeightTensor]:
    """A ColumnParallel → RowParallel pair ``cols → mid → out`` (biases optional)."""
    rows = _split(mid, tp, f"{prefix} width")
    t = [WeightTensor(f"{prefix}.linear_1", "encoder", rows, cols),
         WeightTensor(f"{prefix}.linear_2", "encoder", out, rows)]
    if bias:
        t += [WeightTensor(f"{prefix}.linear_1.bias", "encoder", rows, 1),
              WeightTensor(f"{prefix}.linear_2.bias", "encoder", out, 1)]
    return t


def minimax_vl_vision_model(vc: Mapping[str, Any], text_hidden: int, projector_hidden: int | None,
                            tp: int) -> list[WeightTensor]:
    """MiniMaxVLVisionModel on one rank (see the module docstring)."""
    prefix = "vision_tower.vision_model"
    c, heads = _need(vc, "hidden_size"), _need(vc, "num_attention_heads")
    merge, temporal = _compression(vc)
    drop = {f"{prefix}.embeddings.position_embedding", f"{prefix}.embeddings.patch_embedding",
            f"{prefix}.embeddings.patch_embedding.bias"}
    blocks = [t for t in _clip_like(vc, tp, _need(vc, "num_hidden_layers"), class_token=False, pre_norm=True,
                                    post_norm=False, prefix=prefix) if t.name not in drop]
    axis = 2 * ((2 * (c // heads // 2) // 3) // 2)
    mid = projector_hidden or text_hidden
    return [
        WeightTensor(f"{prefix}.embeddings.patch_embedding", "encoder", c,
                     _need(vc, "num_channels") * temporal * _need(vc, "patch_size") ** 2),
        *blocks,
        WeightTensor(f"{prefix}.inv_freq_t+h+w", "buffer", len(range(0, axis, 2)), 1, 3, dtype="float32"),
        *_mlp("vision_tower.multi_modal_projector", mid, c, text_hidden,
              bool(vc.get("multimodal_projector_bias", True)), tp),
        *_mlp("vision_tower.patch_merge_mlp", mid, text_hidden * merge * merge, text_hidden,
              bool(vc.get("patch_merge_bias", True)), tp),
    ]


@register
class MiniMaxM3VL(_QwenVLBase, MiniMaxM3):
    """MiniMax M3's sparse decoder (``text_config``) + MiniMaxVLVisionModel."""

    architectures = ("MiniMaxM3SparseForConditionalGeneration",)
    supports_encoder_tp_data = True  # MiniMaxM3SparseForConditionalGeneration declares it

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        merge = _compression(_vision(self.config))[0]
        return merge * merge

    def pixel_limits(self, config: Any) -> tuple[int, int]:
        """The image processor's bounds (MiniMaxM3VLImageProcessor), or the config's ``min_pixels`` /
        ``max_pixels`` when it carries them."""
        return (int(config.raw.get("min_pixels", IMAGE_MIN_PIXELS)),
                int(config.raw.get("max_pixels", IMAGE_MAX_PIXELS)))

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        vc = dict(_vision(config))
        vc["spatial_merge_size"], vc["temporal_patch_size"] = _compression(vc)
        view = type("_Cfg", (), {"raw": {**config.raw, "vision_config": vc}})()
        return super().max_tokens_per_item(view, ctx)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        projector = config.raw.get("projector_hidden_size")
        return minimax_vl_vision_model(_vision(config), config.hidden_size,
                                       int(projector) if projector else None, _tower_tp(ctx))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)

    def notes(self) -> tuple[str, ...]:
        return MiniMaxM3.notes(self) + _QwenVLBase.notes(self)
