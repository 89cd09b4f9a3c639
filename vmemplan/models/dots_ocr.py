"""dots.ocr (``DotsOCRForCausalLM``, rednote-hilab/dots.ocr): the dots vision transformer in front of
a Qwen2 decoder.

vllm/model_executor/models/dots_ocr.py (0.33.0):

* ``DotsOCRForCausalLM.__init__`` builds, under ``_mark_tower_model(vllm_config, "image")``, the
  ``DotsVisionTransformer`` from ``vision_config``, and the language model with
  ``init_vllm_registered_model(hf_config=config, architectures=["Qwen2ForCausalLM"])``: the
  top-level (flat, Qwen2Config-derived ``DotsOCRConfig``) keys, planned by
  :class:`vmemplan.models.dense.Qwen2`; plain RoPE, no M-RoPE;
* ``DotsViTPreprocessor`` / ``DotsPatchEmbed``: a ``Conv2dLayer(num_channels → embed_dim,
  kernel patch × patch)`` with its bias and an RMSNorm;
* ``VisionRotaryEmbedding(head_dim // 2)``: one fp32 ``inv_freq`` buffer of ``head_dim / 4`` values
  (``arange(0, dim, 2)``);
* ``DotsVisionBlock`` × ``num_hidden_layers``: RMSNorm ×2, ``DotsVisionAttention`` (QKVParallelLinear
  qkv and RowParallelLinear proj, bias = ``use_bias``), ``DotsSwiGLUFFN`` (MergedColumnParallelLinear
  fc13 and RowParallelLinear fc2 of ``intermediate_size``, bias = ``use_bias``);
* ``post_trunk_norm`` (RMSNorm) when every block runs and ``post_norm`` is set;
* ``PatchMerger``: LayerNorm ``ln_q`` (weight + bias) over ``embed_dim``, ColumnParallelLinear
  ``mlp.0`` (4·embed → 4·embed, bias) and RowParallelLinear ``mlp.2`` (4·embed → hidden_size, bias);
* ``supports_encoder_tp_data = True``: ``--mm-encoder-tp-mode data`` keeps every tower linear whole
  (``disable_tp=is_vit_use_data_parallel()``).

Encoder profile: ``DotsOCRProcessingInfo`` serves images only (``get_supported_mm_limits``) and
``get_mm_max_tokens_per_item`` is Qwen2-VL's ``get_max_image_tokens`` with the vision config's
patch 14, merge 2 and temporal patch 1; the pixel limits come from the checkpoint's
preprocessor_config.json, which config.json does not carry (see ``_QwenVLBase.pixel_limits``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen2
from vmemplan.models.multimodal import _QwenVLBase
from vmemplan.models.vision_towers import _need, _split, _tower_tp, _vision

__all__ = ["DotsOCR", "dots_vision_tower"]


def dots_vision_tower(vc: Mapping[str, Any], tp: int, prefix: str = "vision_tower") -> list[WeightTensor]:
    """DotsVisionTransformer's tensors on one rank (dots_ocr.py, 0.33.0)."""
    c, out, depth, heads, inter, patch = (_need(vc, k) for k in (
        "embed_dim", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "patch_size"))
    chans = int(vc.get("num_channels", 3))
    merge = int(vc.get("spatial_merge_size", 2))
    bias = bool(vc.get("use_bias", False))
    _split(heads, tp, "attention heads")
    q = _split(c, tp, "width")
    i = _split(inter, tp, "MLP width")
    m = c * merge * merge
    mr = _split(m, tp, "merger width")
    rot = (c // heads) // 2

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    tensors = [
        t("patch_embed.patchifier.proj", c, chans * patch * patch), t("patch_embed.patchifier.proj.bias", c),
        t("patch_embed.patchifier.norm", c),
        WeightTensor(f"{prefix}.rotary_pos_emb.inv_freq", "buffer", (rot + 1) // 2, 1, dtype="float32"),
        t("blocks.norm1+norm2", c, 1, 2 * depth),
        t("blocks.attn.qkv", 3 * q, c, depth), t("blocks.attn.proj", c, q, depth),
        t("blocks.mlp.fc13", 2 * i, c, depth), t("blocks.mlp.fc2", c, i, depth),
    ]
    if bias:
        tensors += [t("blocks.attn.qkv.bias", 3 * q, 1, depth), t("blocks.attn.proj.bias", c, 1, depth),
                    t("blocks.mlp.fc13.bias", 2 * i, 1, depth), t("blocks.mlp.fc2.bias", c, 1, depth)]
    if vc.get("post_norm", True):
        tensors.append(t("post_trunk_norm", c))
    return tensors + [
        t("merger.ln_q", c, 1, 2),  # LayerNorm weight + bias
        t("merger.mlp.0", mr, m), t("merger.mlp.0.bias", mr),
        t("merger.mlp.2", out, mr), t("merger.mlp.2.bias", out),
    ]


@register
class DotsOCR(_QwenVLBase, Qwen2):
    """dots.ocr: the Qwen2 decoder (flat config) plus the dots vision transformer."""

    architectures = ("DotsOCRForCausalLM",)
    modalities = ("image",)  # type: ignore[assignment]  # DotsOCRProcessingInfo.get_supported_mm_limits

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return dots_vision_tower(_vision(config), _tower_tp(ctx))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        return _need(vc, "embed_dim"), _need(vc, "intermediate_size")

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The largest image only (DotsOCRProcessingInfo.get_mm_max_tokens_per_item)."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        lo, hi = self.pixel_limits(config)
        return {"image": mm_law.qwen_vl_max_image_tokens(
            patch_size=_need(vc, "patch_size"), merge_size=int(vc.get("spatial_merge_size", 2)),
            min_pixels=lo, max_pixels=hi, temporal_patch_size=int(vc.get("temporal_patch_size", 1)))}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
