"""GLM-OCR (``GlmOcrForConditionalGeneration``, zai-org/GLM-OCR): GLM-4V's model with its own vision
transformer (CogViT) over a small GLM-4 decoder.

vllm/model_executor/models/glm_ocr.py (0.33.0): ``GlmOcrForConditionalGeneration`` runs
``Glm4vForConditionalGeneration.__init__`` (language model ``Glm4ForCausalLM`` from ``text_config``
for model_type glm_ocr, M-RoPE from its ``mrope_section``: :class:`vmemplan.models.glm4v.Glm4V`'s
decoder side) and then, under ``_mark_tower_model(vllm_config, {"image", "video"})``, replaces
``self.visual`` with a ``GlmOcrVisionTransformer``.  That class builds GLM-4V's transformer and
then deletes ``embeddings`` (the learned position table and its ``position_ids``) and
``post_conv_layernorm``; what remains on a rank:

* ``Glm4vVisionPatchEmbed`` (Conv3d with bias) and the rotary cache of ``get_rope(head_dim,
  max_position=8192, partial_rotary_factor=0.5)``;
* ``depth`` ``GlmOcrVisionBlock``: RMSNorm ×2, ``GlmOcrVisionAttention`` (per-head q/k RMSNorm,
  QKVParallelLinear qkv and RowParallelLinear proj, both with bias), ``Glm4vVisionMLP`` of the
  vision ``intermediate_size`` with biases;
* ``post_layernorm`` (RMSNorm), the Conv2d ``downsample`` (c → out_hidden, kernel merge, bias) and
  ``Glm4vPatchMerger(d_model=out_hidden, context_dim=text_config.intermediate_size, bias=False)``.

``--mm-encoder-tp-mode data`` keeps the tower whole (``is_vit_use_data_parallel``); the encoder
profile is GLM-4V's (``Glm4vProcessingInfo``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.glm4v import Glm4V
from vmemplan.models.vision_towers import _enc, _need, _split, _tower_tp, _vision

__all__ = ["GlmOcr", "glm_ocr_tower"]


def glm_ocr_tower(vc: Mapping[str, Any], merger_inter: int, tp: int) -> list[WeightTensor]:
    """GlmOcrVisionTransformer's tensors on one rank (glm_ocr.py, 0.33.0)."""
    c, depth, heads, out, inter, patch = (_need(vc, *k) for k in (
        ("hidden_size",), ("depth", "num_hidden_layers"), ("num_heads", "num_attention_heads"),
        ("out_hidden_size",), ("intermediate_size",), ("patch_size",)))
    tpatch, merge, chans = (int(vc.get(k, d)) for k, d in (("temporal_patch_size", 2), ("spatial_merge_size", 2),
                                                           ("in_channels", 3)))
    _split(heads, tp, "attention heads")
    q, i = _split(c, tp, "width"), _split(inter, tp, "MLP width")
    m_out, m_inter = _split(out, tp, "merger width"), _split(merger_inter, tp, "merger MLP width")
    hd = c // heads
    return [
        _enc("patch_embed.proj", c, chans * tpatch * patch * patch), _enc("patch_embed.proj.bias", c),
        WeightTensor("visual.rotary_pos_emb.cos_sin_cache", "buffer", 8192, hd // 2),
        _enc("blocks.norm1+norm2", c, 1, 2 * depth), _enc("blocks.attn.q_norm+k_norm", hd, 1, 2 * depth),
        _enc("blocks.attn.qkv", 3 * q, c + 1, depth),  # weight + bias
        _enc("blocks.attn.proj", c, q, depth), _enc("blocks.attn.proj.bias", c, 1, depth),
        _enc("blocks.mlp.gate_up_proj", 2 * i, c + 1, depth),  # weight + bias
        _enc("blocks.mlp.down_proj", c, i, depth), _enc("blocks.mlp.down_proj.bias", c, 1, depth),
        _enc("post_layernorm", c),
        _enc("downsample", out, c * merge * merge + 1),  # weight + bias
        _enc("merger.proj", m_out, out), _enc("merger.post_projection_norm", out, 1, 2),
        _enc("merger.gate_up_proj", 2 * m_inter, out), _enc("merger.down_proj", out, m_inter),
    ]


@register
class GlmOcr(Glm4V):
    """GLM-4V's decoder side (Glm4, M-RoPE) with the GLM-OCR vision transformer."""

    architectures = ("GlmOcrForConditionalGeneration",)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return glm_ocr_tower(_vision(config), int(config.text["intermediate_size"]), _tower_tp(ctx))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        return _need(vc, "hidden_size"), _need(vc, "intermediate_size")
