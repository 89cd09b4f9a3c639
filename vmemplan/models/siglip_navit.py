"""NaViT-style SigLIP towers (variable resolution, packed patches) as pure shape lists, and the
pieces the adapters built on them share (paddleocr_vl.py, keye.py, isaac.py, lfm2_vl.py,
phi4siglip.py).

Two tower shapes, mirrored from vLLM 0.33.0:

* :func:`navit_siglip_tower`: vllm/model_executor/models/paddleocr_vl.py::SiglipVisionModel and
  keye.py::KeyeSiglipVisionModel (the same module layout): ``embeddings`` = Conv2dLayer patch embed
  with bias, ``position_embedding`` of ``(image_size / patch)²`` rows, the int64 ``position_ids``
  buffer (``persistent=False``, still on the device); Keye adds ``packing_position_embedding``
  (nn.Embedding(32768, c)); ``encoder.layers`` of [LayerNorm ×2, QKVParallelLinear qkv_proj (bias),
  RowParallelLinear out_proj (bias), siglip.py::SiglipMLP fc1/fc2 (bias)], the 2-D rotary
  ``encoder.rotary_pos_emb.inv_freq`` (SigLIPRotaryEmbedding(head_dim // 2): fp32,
  ``arange(0, head_dim // 2, 2)`` entries) and ``post_layernorm``.  Split over TP like the decoder.
* :func:`siglip2_navit_tower`: vllm/model_executor/models/lfm2_siglip2.py::Siglip2Model (LFM2-VL,
  Phi-4-reasoning-vision) and isaac.py::Siglip2VisionTransformer: the patch embed a
  ReplicatedLinear(channels · patch² → c, bias), ``position_embedding`` of ``num_patches`` rows (no
  buffer), the same encoder layers (no rotary), ``post_layernorm`` only when every layer is kept
  (``require_post_norm`` None).  Linears carry ``disable_tp`` under ``--mm-encoder-tp-mode data``.

:func:`merge_projector` is the 2 × 2 patch-merging MLP of PaddleOCR-VL / Keye (``mlp_AR``), and
:class:`NaViTTowerMixin` the decoder-side rule these models share: the M-RoPE cache
(``max_position × 4`` rows when ``rope_scaling`` has an ``mrope_section``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.paligemma import siglip_with_positions
from vmemplan.models.vision_towers import _clip_like, _need, _uses_mrope, mrope_cache_positions

__all__ = ["NaViTTowerMixin", "merge_projector", "navit_siglip_tower", "siglip2_navit_tower", "with_prefix",
           "square_max_image_tokens", "config_pixel_limits"]


def with_prefix(tensors: list[WeightTensor], old: str, new: str) -> list[WeightTensor]:
    """``tensors`` with the name prefix ``old`` replaced by ``new``."""
    return [WeightTensor(t.name.replace(old, new, 1), t.kind, t.rows, t.cols, t.count, dtype=t.dtype)
            for t in tensors]


def navit_siglip_tower(vc: Mapping[str, Any], tp: int, *, prefix: str = "visual.vision_model",
                       packing_positions: int = 0) -> list[WeightTensor]:
    """The PaddleOCR-VL / Keye SigLIP tower (see the module): SigLIP with its position_ids buffer,
    the rotary ``inv_freq`` and, for Keye, ``packing_positions`` extra learned positions."""
    c, heads = _need(vc, "hidden_size"), _need(vc, "num_attention_heads")
    tower = siglip_with_positions(vc, tp, prefix=prefix)
    rot = (c // heads) // 2
    tower.append(WeightTensor(f"{prefix}.encoder.rotary_pos_emb.inv_freq", "buffer", (rot + 1) // 2, 1,
                              dtype="float32"))
    if packing_positions:
        tower.append(WeightTensor(f"{prefix}.embeddings.packing_position_embedding", "encoder",
                                  packing_positions, c))
    return tower


def siglip2_navit_tower(vc: Mapping[str, Any], tp: int, *, num_layers: int | None = None,
                        post_norm: bool | None = None, prefix: str = "vision_tower.vision_model") -> list[WeightTensor]:
    """lfm2_siglip2.py::Siglip2Model (see the module): ``num_patches`` learned positions, a biased
    ReplicatedLinear patch embed, ``num_layers`` encoder layers, the post-LayerNorm when all are kept
    (or as ``post_norm`` says)."""
    total = _need(vc, "num_hidden_layers")
    layers = total if num_layers is None else num_layers
    keep_norm = layers == total if post_norm is None else post_norm
    npatch = _need(vc, "num_patches")
    side = int(npatch ** 0.5)
    patch = _need(vc, "patch_size")
    # _clip_like sizes the position table as (image_size / patch)²: give it the side of num_patches
    shaped = {**vc, "num_channels": int(vc.get("num_channels", 3)), "image_size": side * patch}
    tower = _clip_like(shaped, tp, layers, class_token=False, pre_norm=False, post_norm=keep_norm, prefix=prefix)
    if side * side != npatch:  # not a square table: the Embedding has num_patches rows all the same
        tower = [WeightTensor(t.name, t.kind, npatch, t.cols, t.count) if t.name.endswith("position_embedding")
                 else t for t in tower]
    return tower


def merge_projector(prefix: str, vision_width: int, text_hidden: int, *, tp: int = 1,
                    norm_merged: bool = False, merge: int = 2) -> list[WeightTensor]:
    """The ``merge × merge`` patch-merging MLP: LayerNorm (weight + bias) over the vision width (or
    the merged width, ``norm_merged``), ``linear_1`` merged → merged and ``linear_2`` merged → text
    hidden, both biased; ``tp`` splits linear_1's output and linear_2's input (Column/Row parallel),
    1 for plain nn.Linear."""
    m = vision_width * merge * merge
    return [
        WeightTensor(f"{prefix}.pre_norm", "encoder", m if norm_merged else vision_width, 1, 2),
        WeightTensor(f"{prefix}.linear_1", "encoder", m // tp, m), WeightTensor(f"{prefix}.linear_1.bias", "encoder", m // tp, 1),
        WeightTensor(f"{prefix}.linear_2", "encoder", text_hidden, m // tp),
        WeightTensor(f"{prefix}.linear_2.bias", "encoder", text_hidden, 1),
    ]


def config_pixel_limits(config: Any, min_default: int, max_default: int) -> tuple[int, int]:
    """(min_pixels, max_pixels) from vision_config or the top level (preprocessor_config.json keys a
    config may carry), else the given processor defaults."""
    vc = config.raw.get("vision_config") or {}
    pick = {k: vc.get(k, config.raw.get(k, d)) for k, d in (("min_pixels", min_default), ("max_pixels", max_default))}
    return int(pick["min_pixels"]), int(pick["max_pixels"])


def square_max_image_tokens(*, patch: int, merge: int, max_pixels: int, min_pixels: int,
                            side: int = 9999999) -> int:
    """Tokens of a ``side × side`` image resized by the Qwen-VL ``smart_resize`` (factor patch ×
    merge) and merged ``merge × merge`` (keye.py::KeyeProcessingInfo.get_max_image_tokens: a
    9,999,999-pixel square, temporal patch 1)."""
    h, w = mm_law.smart_resize(side, side, factor=patch * merge, min_pixels=min_pixels, max_pixels=max_pixels)
    return (h // patch) * (w // patch) // (merge * merge)


class NaViTTowerMixin(VisionEncoderMixin):
    """Decoder-side rules shared by the NaViT SigLIP models: the M-RoPE cache of ``max_position × 4``
    rows (vllm/model_executor/layers/rotary_embedding/mrope.py via get_rope) when the config's
    ``rope_scaling`` carries an ``mrope_section``, and the merged encoder output (``merge²`` patches
    per token, ``spatial_merge_size`` of the vision config)."""

    merge_default = 2

    @property
    def patches_per_token(self) -> int:
        vc = self.config.raw.get("vision_config") or {}  # type: ignore[attr-defined]
        merge = int(vc.get("spatial_merge_size", self.merge_default))
        return merge * merge

    def with_mrope(self, tensors: list[WeightTensor]) -> list[WeightTensor]:
        cfg = self.config  # type: ignore[attr-defined]
        if not _uses_mrope(cfg):
            return tensors
        positions, dim = mrope_cache_positions(cfg, 4)
        return [WeightTensor(t.name, t.kind, positions, dim) if t.name == "rotary_emb.cos_sin_cache" else t
                for t in tensors]

    def notes(self) -> tuple[str, ...]:
        base: tuple[str, ...] = tuple(super().notes())  # type: ignore[misc]
        limits = getattr(self, "pixel_limits", None)
        if limits is None:
            return base
        lo, hi = limits(self.config)  # type: ignore[attr-defined]
        return base + (f"image pixel limits {lo}..{hi}; the checkpoint's preprocessor_config.json may set others",)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        tower = self.tower_tensors(self.config, ctx)  # type: ignore[attr-defined]
        return self.with_mrope(super().weight_tensors(ctx)) + tower  # type: ignore[misc]
