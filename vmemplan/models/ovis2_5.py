"""Ovis2.5 / Ovis2.6 (``Ovis2_5``, ``Ovis2_6ForCausalLM``, ``Ovis2_6_MoeForCausalLM``, e.g.
AIDC-AI/Ovis2.5-9B): a SigLIP2-NaViT visual tokenizer, a visual embedding table, and the language
model of ``llm_config``.

vllm/model_executor/models/ovis2_5.py (0.33.0), ``Ovis2_5.__init__`` (all three architectures map
to it in registry.py):

* under ``_mark_language_model``: ``init_vllm_registered_model`` on ``text_config`` (the checkpoint's
  ``llm_config``, renamed by vllm/transformers_utils/config.py::_CONFIG_ATTRS_MAPPING) under the
  prefix ``llm``: planned by that architecture's own adapter (Qwen3 for Ovis2.5, Qwen3-MoE for
  Ovis2.6-MoE), combined with the tower below (:func:`vmemplan.models.internvl.combined`);
* under ``_mark_tower_model(vllm_config, {"image", "video"})``:

  - ``visual_tokenizer.vit`` = siglip2navit.py::Siglip2NavitModel on ``vit_config``:
    Siglip2VisionEmbeddings (``num_patches`` <= 0: a Conv2dLayer patch embed, bias, 3 × patch² inputs;
    else a ReplicatedLinear of the same shape; under ``preserve_original_pe`` an nn.Embedding
    position table of ``(image_size / patch)²`` rows, or ``num_patches`` rows for the linear embed),
    ``num_hidden_layers`` Siglip2EncoderLayer (two LayerNorms, QKVParallelLinear ``qkv_proj`` and
    RowParallelLinear ``out_proj``, ColumnParallel ``fc1`` / RowParallel ``fc2``, all biased, split over
    TP), the encoder's VisionRotaryEmbedding(head_dim / 2) ``inv_freq`` fp32 buffer
    (``arange(0, dim, 2)`` entries, persistent=False) and ``post_layernorm`` (built, never called);
  - ``visual_tokenizer.head`` = ReplicatedLinear(hidden · hidden_stride² → visual_vocab_size − 4, no
    bias) and a LayerNorm of ``visual_vocab_size − 4``;
  - ``vte`` = ovis.py::VisualEmbedding (an nn.Embedding ``visual_vocab_size × hidden_size``).

The class declares no ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` runs as ``weights``.

Encoder profile (``Ovis2_5ProcessingInfo`` / the dummy processor, transformers_utils/processors/
ovis2_5.py): the largest image is 1792 × 1792 (``get_image_size_with_most_features``), resized by the
processor's ``smart_resize`` (factor patch × hidden_stride, 448² .. 1792² pixels); its placeholder is
``construct_visual_placeholders``: (h/patch)(w/patch) / hidden_stride² / temporal_patch_size atoms plus
the start and end indicators.  One video (``get_supported_mm_limits`` {"video": 1}) of
``get_num_frames_with_most_features`` frames: as many as fit ``max_model_len`` minus the image's
*unmerged* ``get_num_image_tokens`` (grid_t · (1792 / patch)², the processing info's own count), at
least 1, each frame as the image.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import _language_model_class, combined
from vmemplan.models.ovis import OvisTowerBase, visual_head
from vmemplan.models.vision_towers import _clip_like, _need, _tower_tp

__all__ = ["Ovis2_5", "ovis2_5_visual_tokenizer", "siglip2_navit_ovis_tower"]

#: ovis2_5.py::INDICATOR_IDS: the visual vocabulary's last 4 ids are the indicators (no head rows)
INDICATORS = 4
#: Ovis2_5ProcessingInfo.get_image_size_with_most_features (hard-coded) and the processor's limits
MAX_SIDE = 1792
MIN_PIXELS, MAX_PIXELS = 448 * 448, 1792 * 1792


def vit_config(config: Any) -> Mapping[str, Any]:
    vc = config.raw.get("vit_config")
    if not isinstance(vc, Mapping):
        raise ModelConfigError(f"{config.architecture}: config.json lacks vit_config",
                               hint="Ovis2.5 checkpoints carry the SigLIP2-NaViT tower under vit_config")
    return vc


def siglip2_navit_ovis_tower(vc: Mapping[str, Any], tp: int,
                             prefix: str = "visual_tokenizer.vit.vision_model") -> list[WeightTensor]:
    """siglip2navit.py::Siglip2VisionTransformer (see the module): patch embed, the optional
    position table, every encoder layer, the rotary ``inv_freq`` and ``post_layernorm``."""
    c, heads = _need(vc, "hidden_size"), _need(vc, "num_attention_heads")
    npatch = int(vc.get("num_patches", -1))
    tower = _clip_like({**vc, "num_channels": int(vc.get("num_channels", 3))}, tp, _need(vc, "num_hidden_layers"),
                       class_token=False, pre_norm=False, post_norm=True, prefix=prefix)
    if not bool(vc.get("preserve_original_pe", True)):
        tower = [t for t in tower if not t.name.endswith("position_embedding")]
    elif npatch > 0:  # the ReplicatedLinear embed: the table has num_patches rows
        tower = [WeightTensor(t.name, t.kind, npatch, t.cols, t.count) if t.name.endswith("position_embedding")
                 else t for t in tower]
    rot = c // heads // 2
    tower.append(WeightTensor(f"{prefix}.encoder.rotary_pos_emb.inv_freq", "buffer", (rot + 1) // 2, 1,
                              dtype="float32"))
    return tower


def ovis2_5_visual_tokenizer(config: Any, tp: int) -> list[WeightTensor]:
    """The tower, the visual head (Linear + LayerNorm over the visual vocabulary less the indicators)
    and the visual embedding table ``vte`` (replicated)."""
    vc = vit_config(config)
    stride = int(vc.get("hidden_stride", 2))
    hidden = int(config.raw.get("hidden_size") or config.hidden_size)
    return siglip2_navit_ovis_tower(vc, tp) + visual_head(int(config.raw.get("visual_vocab_size", 65536)), INDICATORS,
                                                          _need(vc, "hidden_size") * stride * stride, hidden)


def _placeholder_tokens(vc: Mapping[str, Any], frames: int) -> int:
    """Tokens of a ``frames``-frame 1792² item (Ovis2_5Processor.preprocess_multidata and
    construct_visual_placeholders): merged atoms plus the start and end indicators."""
    patch = _need(vc, "patch_size")
    stride = int(vc.get("hidden_stride", 2))
    tps = int(vc.get("temporal_patch_size", 1))
    h, w = mm_law.smart_resize(MAX_SIDE, MAX_SIDE, factor=patch * stride, min_pixels=MIN_PIXELS,
                               max_pixels=MAX_PIXELS)
    grid_t = -(-frames // tps)
    return grid_t * (h // patch) * (w // patch) // (stride * stride) // tps + 2


class _Ovis2_5Tower(OvisTowerBase):
    """The tower half; combined with the language model's adapter by :func:`combined`."""

    modalities = ("image", "video")

    def vit(self, config: Any) -> Mapping[str, Any]:
        return vit_config(config)

    def stride(self, config: Any) -> int:
        return int(vit_config(config).get("hidden_stride", 2))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return ovis2_5_visual_tokenizer(config, _tower_tp(ctx))

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The 1792² image, and the one video of the most frames (see the module)."""
        vc = vit_config(config)
        out: dict[str, int] = {}
        images = mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0
        if images:
            out["image"] = _placeholder_tokens(vc, 1)
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "video") > 0:
            tps = int(vc.get("temporal_patch_size", 1))
            per_grid = (MAX_SIDE // _need(vc, "patch_size")) ** 2  # get_num_image_tokens: unmerged
            room = ctx.max_model_len - (per_grid if images else 0)
            frames = 0
            while -(-(frames + 1) // tps) * per_grid <= room:  # _get_max_video_frames
                frames += 1
            out["video"] = _placeholder_tokens(vc, max(frames, 1))
        return out


@register
class Ovis2_5(_Ovis2_5Tower, Adapter):
    """``Ovis2_5``: SigLIP2-NaViT visual tokenizer + ``vte`` + the ``llm_config`` model."""

    architectures = ("Ovis2_5", "Ovis2_6ForCausalLM", "Ovis2_6_MoeForCausalLM")

    def __new__(cls, config: Any) -> Any:
        return combined(_Ovis2_5Tower, _language_model_class(config), config)
